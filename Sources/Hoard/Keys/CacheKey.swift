import Foundation

/// A key that caches and stores can use, with a stable string form.
///
/// The memory tier uses a key's `Hashable` conformance. Persistent and remote tiers
/// store ``cacheKeyString``, so it must be the same in every process and every
/// version of the program, and two keys that are not equal must never share it.
///
/// `String`, `URL`, `UUID`, `Int` and the sized integer types conform. A custom type
/// conforms by giving its string form:
///
/// ```swift
/// struct AvatarKey: CacheKey {
///     var userID: Int
///     var size: Int
///     var cacheKeyString: String { "avatar/\(userID)/\(size)" }
/// }
/// ```
public protocol CacheKey: Hashable, Sendable {
    /// The key's stable string form: equal keys give equal strings, different keys
    /// give different strings, in every process.
    var cacheKeyString: String { get }
}

extension String: CacheKey {
    /// The string itself.
    public var cacheKeyString: String { self }
}

extension Substring: CacheKey {
    /// The substring's characters.
    public var cacheKeyString: String { String(self) }
}

extension URL: CacheKey {
    /// The URL's full absolute string, query, port and fragment included: two URLs
    /// that differ in any of them are different keys.
    public var cacheKeyString: String { absoluteString }
}

extension UUID: CacheKey {
    /// The canonical upper-case `uuidString`.
    public var cacheKeyString: String { uuidString }
}

extension Int: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }
}

extension Int64: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }
}

extension Int32: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }
}

extension UInt: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }
}

extension UInt64: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }
}

extension UInt32: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }
}
