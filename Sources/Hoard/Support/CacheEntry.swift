import Foundation

/// A cached value together with when it was stored and when it expires.
///
/// Returned by `entry(for:)` reads; the dates let a caller decide how fresh is fresh
/// enough, and an entry can be written back as it is.
public struct CacheEntry<Value: Sendable>: Sendable {
    /// The cached value.
    public var value: Value
    /// When the value was stored.
    public var storedAt: Date
    /// When the value expires, or `nil` if it never does.
    public var expiresAt: Date?

    /// Creates an entry.
    public init(value: Value, storedAt: Date, expiresAt: Date?) {
        self.value = value
        self.storedAt = storedAt
        self.expiresAt = expiresAt
    }

    /// The entry's expiry expressed as an ``Expiry``: ``Expiry/never`` or
    /// ``Expiry/at(_:)``.
    public var expiry: Expiry { expiresAt.map(Expiry.at) ?? .never }
}

extension CacheEntry: Equatable where Value: Equatable {}
