import Foundation

/// Turns values into bytes and back, for the tiers that store bytes.
///
/// Three codecs cover most types:
/// - ``json`` for any `Codable` type (ISO-8601 dates with fractional seconds);
/// - ``cacheValue`` for ``CacheValue`` types, `Data` and `String` among them, which
///   pass through without JSON;
/// - ``automatic()``, which picks `cacheValue` when the type conforms and `json`
///   otherwise.
///
/// A codec never traps on bad bytes: ``decode(_:)`` throws
/// ``HoardError/Code/decodingFailed``.
public struct ValueCodec<Value: Sendable>: Sendable {
    private let _encode: @Sendable (Value) throws -> Data
    private let _decode: @Sendable (Data) throws -> Value

    /// Creates a codec from two closures.
    ///
    /// Errors the closures throw are wrapped in a ``HoardError`` with code
    /// ``HoardError/Code/encodingFailed`` or ``HoardError/Code/decodingFailed``.
    public init(
        encode: @escaping @Sendable (Value) throws -> Data,
        decode: @escaping @Sendable (Data) throws -> Value
    ) {
        _encode = encode
        _decode = decode
    }

    /// Encodes a value.
    ///
    /// - Throws: ``HoardError/Code/encodingFailed``, with the cause as `underlying`.
    public func encode(_ value: Value) throws(HoardError) -> Data {
        do {
            return try _encode(value)
        } catch let error as HoardError where error.code == .encodingFailed {
            throw error
        } catch {
            throw HoardError(.encodingFailed, "could not encode a value of type \(Value.self)", underlying: error)
        }
    }

    /// Decodes bytes.
    ///
    /// - Throws: ``HoardError/Code/decodingFailed``, with the cause as `underlying`.
    public func decode(_ data: Data) throws(HoardError) -> Value {
        do {
            return try _decode(data)
        } catch let error as HoardError where error.code == .decodingFailed {
            throw error
        } catch {
            throw HoardError(
                .decodingFailed, "could not decode \(data.count) bytes as \(Value.self)", underlying: error)
        }
    }
}

extension ValueCodec where Value: Codable {
    /// JSON through `JSONEncoder` and `JSONDecoder`, dates as ISO-8601 strings with
    /// fractional seconds (millisecond precision). Dates without fractional seconds
    /// decode too. A date that text cannot carry back (before year 1, NaN,
    /// infinite, or so far past year 9999 that it is clamped) fails to encode with
    /// ``HoardError/Code/encodingFailed``, so it is never stored to decode as
    /// another date, or not at all.
    public static var json: ValueCodec {
        ValueCodec(
            encode: { value in try _JSON.encoder().encode(value) },
            decode: { data in try _JSON.decode(data) }
        )
    }
}

extension ValueCodec where Value: CacheValue {
    /// The type's own ``CacheValue`` encoding.
    public static var cacheValue: ValueCodec {
        ValueCodec(encode: { try $0.cacheEncoded() }, decode: { try Value(cacheData: $0) })
    }
}

extension ValueCodec {
    /// The codec a type gets with no extra code: its ``CacheValue`` encoding when it
    /// conforms (`Data` and `String` do), JSON when it is `Codable`.
    ///
    /// - Throws: ``HoardError/Code/noCodec`` when the type is neither.
    public static func automatic() throws(HoardError) -> ValueCodec {
        if let type = Value.self as? any CacheValue.Type {
            return _castingCacheValueCodec(type)
        }
        if let type = Value.self as? any (Codable & Sendable).Type {
            return _castingJSONCodec(type)
        }
        throw HoardError(
            .noCodec, "\(Value.self) is neither CacheValue nor Codable; pass a ValueCodec explicitly")
    }

    private static func _castingCacheValueCodec<T: CacheValue>(_: T.Type) -> ValueCodec {
        let inner = ValueCodec<T>.cacheValue
        return ValueCodec(
            encode: { try inner.encode($0 as! T) },  // Value is T: checked by the caller.
            decode: { try inner.decode($0) as! Value }
        )
    }

    private static func _castingJSONCodec<T: Codable & Sendable>(_: T.Type) -> ValueCodec {
        let inner = ValueCodec<T>.json
        return ValueCodec(
            encode: { try inner.encode($0 as! T) },  // Value is T: checked by the caller.
            decode: { try inner.decode($0) as! Value }
        )
    }
}

/// The JSON coders `ValueCodec.json` uses; fresh ones per call, as the coders are
/// reference types with mutable settings.
enum _JSON {
    static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    static let plainDateStyle = Date.ISO8601FormatStyle()

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            let text = date.formatted(dateStyle)
            // The text has no room for a year before 1 or a NaN, and clamps dates far
            // beyond year 9999: one that does not parse back to the date (to the
            // millisecond the text keeps, truncated; two for a Double's own rounding)
            // is refused, never stored to decode as another date or fail. Dates of the
            // years 1583 to 9999 (the Gregorian calendar's, with four digits) always
            // do, so only those outside are parsed back: the common date costs no
            // second pass.
            let seconds = date.timeIntervalSince1970
            guard
                seconds >= -12_212_553_600 && seconds < 253_402_300_800
                    || (try? dateStyle.parse(text)).map({
                        abs($0.timeIntervalSinceReferenceDate - date.timeIntervalSinceReferenceDate) < 0.002
                    }) == true
            else {
                // The seconds, not the date: describing a NaN date traps.
                throw EncodingError.invalidValue(
                    date.timeIntervalSinceReferenceDate,
                    EncodingError.Context(
                        codingPath: encoder.codingPath,
                        debugDescription:
                            "the date \(date.timeIntervalSince1970) s after 1970 has no ISO 8601 text that reads back as it (\(text))"
                    ))
            }
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
        return encoder
    }

    static func decode<T: Decodable>(_ data: Data) throws -> T {
        try decoder().decode(T.self, from: data)
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = try? dateStyle.parse(text) { return date }
            if let date = try? plainDateStyle.parse(text) { return date }
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not an ISO-8601 date: \(text.prefix(64))")
        }
        return decoder
    }
}
