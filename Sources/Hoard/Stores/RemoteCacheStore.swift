import Foundation

/// A store reached over the network, shared by many cache instances: the remote
/// tier of a ``Cache``.
///
/// Requirements take bytes plus metadata, keyed by a namespace and a key's
/// ``CacheKey/cacheKeyString``. Every method may suspend and may throw the store's
/// own error type; the ``Cache`` reports such errors and keeps serving its other
/// tiers.
public protocol RemoteCacheStore: Sendable {
    /// The live entry for `key` in `namespace`, or `nil`.
    func entry(for key: String, in namespace: String) async throws -> StoredEntry?

    /// The live entries for `keys` in `namespace`, in one round trip; absent keys
    /// are missing from the result.
    func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry]

    /// Stores `data` for `key`. An entry whose `expiresAt` has already passed is not
    /// stored, and any older value for the key is removed.
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws

    /// Removes the entry for `key`, if any.
    func removeValue(for key: String, in namespace: String) async throws

    /// Removes every entry of `namespace`, leaving other namespaces untouched.
    func removeAll(in namespace: String) async throws

    /// Keys that other instances changed or removed in `namespace` (never this
    /// instance's own writes), for cross-instance invalidation of memory tiers.
    func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation>
}

/// A change another instance made to a remote store.
public enum RemoteInvalidation: Sendable, Hashable {
    /// The entry for this key (its `cacheKeyString`) changed or was removed.
    case key(String)
    /// Every entry of the namespace was removed.
    case all
}
