import Foundation

/// A value that supplies its own bytes and cost.
///
/// Conform when JSON is not the right form (an image, a protocol buffer, a packed
/// array) or when the cost should be something other than the encoded size. `Data`
/// and `String` conform and pass through without JSON.
///
/// ```swift
/// struct Thumbnail: CacheValue {
///     var pixels: [UInt8]
///     func cacheEncoded() throws -> Data { Data(pixels) }
///     init(cacheData: Data) throws { pixels = Array(cacheData) }
///     var cacheCost: Int { pixels.count }
/// }
/// ```
public protocol CacheValue: Sendable {
    /// The value's bytes, as persistent tiers store them.
    ///
    /// - Throws: When the value cannot be encoded.
    func cacheEncoded() throws -> Data

    /// Recreates a value from bytes that ``cacheEncoded()`` produced.
    ///
    /// - Throws: When the bytes are not a valid encoding. Throw, never trap: a read
    ///   that cannot decode is a miss, and the entry is kept (a write or a fetch
    ///   replaces it).
    init(cacheData: Data) throws

    /// The value's cost towards a memory cache's cost limit, usually its size in
    /// bytes. Must be zero or more, and cheap to compute.
    var cacheCost: Int { get }
}

extension Data: CacheValue {
    /// The bytes themselves.
    public func cacheEncoded() -> Data { self }
    /// The bytes themselves.
    public init(cacheData: Data) { self = cacheData }
    /// The byte count.
    public var cacheCost: Int { count }
}

extension String: CacheValue {
    /// The UTF-8 bytes.
    public func cacheEncoded() -> Data { Data(utf8) }

    /// Decodes UTF-8 bytes.
    ///
    /// - Throws: ``HoardError/Code/decodingFailed`` when the bytes are not valid UTF-8.
    public init(cacheData: Data) throws {
        guard let string = String(data: cacheData, encoding: .utf8) else {
            throw HoardError(.decodingFailed, "the bytes are not valid UTF-8")
        }
        self = string
    }

    /// The UTF-8 byte count.
    public var cacheCost: Int { utf8.count }
}
