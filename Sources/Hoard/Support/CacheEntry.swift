import Foundation

/// A cached value together with when it was stored and when it expires.
///
/// Returned by `entry(for:)` reads; the dates let a caller decide how fresh is fresh
/// enough, ``source`` says which tier answered, and an entry can be written back as
/// it is.
public struct CacheEntry<Value: Sendable>: Sendable {
    /// The cached value.
    public var value: Value
    /// When the value was stored.
    public var storedAt: Date
    /// When the value expires, or `nil` if it never does.
    public var expiresAt: Date?
    /// Which tier of a ``Cache`` answered the read that returned this entry, or
    /// `nil` for an entry that no `Cache` read returned (one made by a caller, or
    /// read from a ``MemoryCache`` or a ``DiskStore`` directly). Writing an entry
    /// ignores it.
    public var source: CacheEntrySource?

    /// Creates an entry.
    public init(value: Value, storedAt: Date, expiresAt: Date?, source: CacheEntrySource? = nil) {
        self.value = value
        self.storedAt = storedAt
        self.expiresAt = expiresAt
        self.source = source
    }

    /// The entry's expiry expressed as an ``Expiry``: ``Expiry/never`` or
    /// ``Expiry/at(_:)``.
    public var expiry: Expiry { expiresAt.map(Expiry.at) ?? .never }
}

extension CacheEntry: Equatable where Value: Equatable {
    /// Two entries are equal when their values and dates are: an entry read from
    /// memory equals the same entry read from a store. ``source`` is not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.value == rhs.value && lhs.storedAt == rhs.storedAt && lhs.expiresAt == rhs.expiresAt
    }
}
