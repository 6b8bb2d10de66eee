import Foundation

/// One change in a batch given to ``CacheStore/write(_:)``.
///
/// ```swift
/// try store.write([
///     .set(json, for: "user:1", in: "users", storedAt: now, expiresAt: nil),
///     .removeValue(for: "user:2", in: "users"),
/// ])
/// ```
public enum CacheStoreWrite: Sendable, Hashable {
    /// Stores `data` for `key` in `namespace`, replacing any older value.
    case set(_ data: Data, for: String, in: String, storedAt: Date, expiresAt: Date?)
    /// Removes the entry for `key` in `namespace`, if there is one.
    case removeValue(for: String, in: String)
    /// Removes every entry of `namespace`.
    case removeAll(in: String)
}
