import Foundation

/// A key that caches and stores can use, with a stable string form.
///
/// The memory tier uses a key's `Hashable` conformance. Persistent and remote tiers
/// store ``cacheKeyString``, so it must be the same in every process and every
/// version of the program, and two keys that are not equal must never share it.
///
/// Every store of a ``Cache`` receives the key string (and the cache's name, its
/// namespace) in Unicode canonical composition, NFC: strings that Swift considers
/// equal, such as `"é"` written precomposed or as `e` and a combining accent, are
/// one key in memory, on disk, in Redis and in PostgreSQL, and an invalidation of
/// one reaches the other. ``DiskStore`` applies the same normalisation to the
/// strings it is given directly; a remote store used directly stores the bytes it
/// is given.
///
/// `String`, `Substring`, `URL`, `UUID`, `Int`, `Int32`, `Int64`, `UInt`, `UInt32`
/// and `UInt64` conform. A custom type
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

    /// The key whose ``cacheKeyString`` is `cacheKeyString`, for types that can
    /// rebuild it; `nil` otherwise, which is the default.
    ///
    /// A ``Cache`` with remote stores hears of other instances' changes by key
    /// string. A key type that rebuilds its keys lets the cache find the key in its
    /// memory tier at once; for other types the cache keeps a table from the strings
    /// of the keys it holds back to the keys. A conformance must return a key equal
    /// (`==`) to the one that gave the string, or `nil`.
    init?(cacheKeyString: String)
}

extension CacheKey {
    /// No key is rebuilt from its string: a ``Cache`` with remote stores keeps a table
    /// of the strings of the keys it holds.
    public init?(cacheKeyString: String) {
        return nil
    }
}

extension String: CacheKey {
    /// The string itself.
    public var cacheKeyString: String { self }

    /// The string itself.
    public init?(cacheKeyString: String) { self = cacheKeyString }
}

extension Substring: CacheKey {
    /// The substring's characters.
    public var cacheKeyString: String { String(self) }

    /// The string's characters.
    public init?(cacheKeyString: String) { self = Substring(cacheKeyString) }
}

// URL keeps the default `init?(cacheKeyString:)`: `URL(string: url.absoluteString)`
// is not always equal to `url` (a URL relative to a base compares by its parts).
extension URL: CacheKey {
    /// The URL's full absolute string, query, port and fragment included: two URLs
    /// that differ in any of them are different keys.
    public var cacheKeyString: String { absoluteString }
}

extension UUID: CacheKey {
    /// The canonical upper-case `uuidString`.
    public var cacheKeyString: String { uuidString }

    /// The UUID the string spells; `nil` when it spells none.
    public init?(cacheKeyString: String) { self.init(uuidString: cacheKeyString) }
}

extension Int: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }

    /// The number the decimal digits spell; `nil` for anything else.
    public init?(cacheKeyString: String) { self.init(cacheKeyString, radix: 10) }
}

extension Int64: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }

    /// The number the decimal digits spell; `nil` for anything else.
    public init?(cacheKeyString: String) { self.init(cacheKeyString, radix: 10) }
}

extension Int32: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }

    /// The number the decimal digits spell; `nil` for anything else.
    public init?(cacheKeyString: String) { self.init(cacheKeyString, radix: 10) }
}

extension UInt: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }

    /// The number the decimal digits spell; `nil` for anything else.
    public init?(cacheKeyString: String) { self.init(cacheKeyString, radix: 10) }
}

extension UInt64: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }

    /// The number the decimal digits spell; `nil` for anything else.
    public init?(cacheKeyString: String) { self.init(cacheKeyString, radix: 10) }
}

extension UInt32: CacheKey {
    /// The decimal digits.
    public var cacheKeyString: String { String(self) }

    /// The number the decimal digits spell; `nil` for anything else.
    public init?(cacheKeyString: String) { self.init(cacheKeyString, radix: 10) }
}

extension CacheKey {
    /// The key's string as a ``Cache`` hands it to its stores: ``cacheKeyString``
    /// in NFC. ASCII strings, the common case, are used as they are.
    @inlinable
    var _storeKeyString: String { _normalized(cacheKeyString) }
}
