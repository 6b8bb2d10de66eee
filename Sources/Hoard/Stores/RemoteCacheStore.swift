import Foundation

/// A cache tier on a server that several processes share, such as Redis or PostgreSQL.
///
/// A remote store holds bytes (``StoredEntry``) under a string key inside a
/// namespace; namespaces isolate caches that share one server, and one namespace can
/// be cleared without touching the others. Every method may wait on the network, and
/// every method but ``invalidations(in:)`` throws the store's own error type when the
/// server cannot be reached, answers with an error, or does not answer in time. A
/// cache treats such a failure on a read as a miss.
///
/// An expired entry is never returned: the server drops it, and a store also checks
/// the entry's ``StoredEntry/expiresAt`` against its own clock.
///
/// ```swift
/// let store: any RemoteCacheStore = try RedisStore(configuration: .init(host: "cache.internal"))
/// try await store.set(bytes, for: "user:42", in: "profiles", storedAt: .now, expiresAt: .now + 300)
/// let entry = try await store.entry(for: "user:42", in: "profiles")
/// for await change in store.invalidations(in: "profiles") { memory.drop(change) }
/// ```
public protocol RemoteCacheStore: Sendable {
    /// The entry stored for `key` in `namespace`, if there is a live one.
    ///
    /// - Parameters:
    ///   - key: The key, any string.
    ///   - namespace: The namespace, any string.
    /// - Returns: The entry, or `nil` when there is none, it has expired, or its bytes
    ///   are not in a format this store understands.
    /// - Throws: The store's error when the server cannot answer.
    func entry(for key: String, in namespace: String) async throws -> StoredEntry?

    /// The live entries for many keys of one namespace, read in one round trip.
    ///
    /// - Parameters:
    ///   - keys: The keys; duplicates are allowed, an empty array costs nothing.
    ///   - namespace: The namespace of every key.
    /// - Returns: The entries found, by key; a key with no live entry is absent.
    /// - Throws: The store's error when the server cannot answer.
    func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry]

    /// Stores `data` for `key` in `namespace`, replacing any older value.
    ///
    /// The server drops the entry by itself at `expiresAt`. An entry that has already
    /// expired is not stored, and any older value for the key is removed, so a read
    /// never returns the outdated value. Other instances are told through
    /// ``invalidations(in:)``.
    ///
    /// - Parameters:
    ///   - data: The bytes to store.
    ///   - key: The key.
    ///   - namespace: The namespace.
    ///   - storedAt: When the value was stored, returned by later reads.
    ///   - expiresAt: When the entry expires, or `nil` for never.
    /// - Throws: ``HoardError/Code/invalidArgument`` when `storedAt` is not a finite
    ///   date or `expiresAt` is NaN, dates no store can keep (every store of this
    ///   package refuses them so, sending nothing and keeping any older value for the
    ///   key). The store's error when the server cannot answer; the value may or may
    ///   not have been stored.
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws

    /// Removes the entry for `key` in `namespace`, if there is one, and tells other
    /// instances through ``invalidations(in:)``.
    ///
    /// - Throws: The store's error when the server cannot answer.
    func removeValue(for key: String, in namespace: String) async throws

    /// Removes every entry of `namespace` and no other, and tells other instances
    /// through ``invalidations(in:)`` with ``RemoteInvalidation/all``.
    ///
    /// - Throws: The store's error when the server cannot answer; some entries may
    ///   have been removed.
    func removeAll(in namespace: String) async throws

    /// Applies many changes, in order, in as few round trips as the store can.
    ///
    /// A cache's write-behind queue hands its writes over this way. Changes are
    /// applied in the order given, so the last change to a key wins, and other
    /// instances are told of each as ``set(_:for:in:storedAt:expiresAt:)``,
    /// ``removeValue(for:in:)`` and ``removeAll(in:)`` tell them. The default
    /// implementation calls those one after the other; a store overrides it to send
    /// the batch pipelined or in one transaction.
    ///
    /// - Parameter batch: The changes, oldest first; an empty batch costs nothing.
    /// - Throws: The store's first error. Changes before the failing one may have been
    ///   applied, and, for a pipelining store, changes after it too.
    func write(_ batch: [CacheStoreWrite]) async throws

    /// Keys other instances changed or removed in `namespace`, for cross-instance
    /// invalidation. A store leaves out this instance's own writes; one that cannot
    /// (a server that reports every client's writes) says so.
    ///
    /// The stream yields ``RemoteInvalidation/key(_:)`` for each key another
    /// instance set or removed, ``RemoteInvalidation/all`` when another instance
    /// cleared the namespace or the server's data was flushed, and
    /// ``RemoteInvalidation/missed`` when the store may have missed changes (it lost
    /// its subscription and got it back, or got its first one only after failed
    /// attempts). It keeps going across reconnects and ends when the consumer stops
    /// iterating or the store shuts down. Delivery is best effort: a change made
    /// while the first attempt to subscribe is under way is not reported.
    ///
    /// - Parameter namespace: The namespace to watch.
    /// - Returns: A stream of invalidations, as they arrive.
    func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation>
}

extension RemoteCacheStore {
    /// Applies the changes one after the other with ``set(_:for:in:storedAt:expiresAt:)``,
    /// ``removeValue(for:in:)`` and ``removeAll(in:)``, stopping at the first error.
    public func write(_ batch: [CacheStoreWrite]) async throws {
        for change in batch {
            switch change {
            case .set(let data, let key, let namespace, let storedAt, let expiresAt):
                try await set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
            case .removeValue(let key, let namespace):
                try await removeValue(for: key, in: namespace)
            case .removeAll(let namespace):
                try await removeAll(in: namespace)
            }
        }
    }
}
