#if Redis
import NIOCore

/// One reply of the Redis serialization protocol, RESP2 or RESP3.
///
/// Text that RESP defines as a line (simple strings, errors, big numbers) is held as
/// a `String`; binary-safe payloads (bulk strings, blob errors, verbatim text) as
/// `ByteBuffer`s, which slice the received bytes without copying them.
enum _RESPValue: Sendable, Hashable {
    /// `+OK\r\n`
    case simpleString(String)
    /// `-ERR message\r\n`
    case error(String)
    /// `:42\r\n`
    case integer(Int64)
    /// `$5\r\nhello\r\n`; `nil` for the RESP2 null bulk string `$-1\r\n`.
    case bulkString(ByteBuffer?)
    /// `*2\r\n…`; `nil` for the RESP2 null array `*-1\r\n`.
    case array([_RESPValue]?)
    /// RESP3 `_\r\n`.
    case null
    /// RESP3 `,3.14\r\n` (also `inf`, `-inf`, `nan`).
    case double(Double)
    /// RESP3 `#t\r\n` / `#f\r\n`.
    case boolean(Bool)
    /// RESP3 `!21\r\nSYNTAX invalid syntax\r\n`.
    case blobError(ByteBuffer)
    /// RESP3 `=15\r\ntxt:Some string\r\n`: a three-byte format and the text.
    case verbatimString(format: String, text: ByteBuffer)
    /// RESP3 `(3492890328409238509324850943850943825024385\r\n`, as its decimal digits.
    case bigNumber(String)
    /// RESP3 `%2\r\n…`: key-value pairs, in the order received.
    case map([Pair])
    /// RESP3 `~3\r\n…`: elements, in the order received.
    case set([_RESPValue])
    /// RESP3 `|1\r\n…`: attributes that describe the value after them.
    indirect case attribute([Pair], _RESPValue)
    /// RESP3 `>3\r\n…`: an out-of-band message, such as a pub/sub message.
    case push([_RESPValue])

    /// One entry of a map or an attribute.
    struct Pair: Sendable, Hashable {
        var key: _RESPValue
        var value: _RESPValue
    }

    /// The value's bytes when it is a string of any kind, `nil` otherwise.
    var bytes: ByteBuffer? {
        switch self {
        case .bulkString(let buffer): buffer
        case .simpleString(let text): ByteBuffer(string: text)
        case .verbatimString(_, let text): text
        case .attribute(_, let value): value.bytes
        default: nil
        }
    }

    /// The value as text when it is a string of any kind, `nil` otherwise.
    var string: String? {
        bytes.map { String(buffer: $0) }
    }

    /// Whether the value is a string of any kind whose bytes are `text` but for ASCII
    /// case (`SUBSCRIBE` is `subscribe`), without decoding it into a `String`.
    ///
    /// - Parameter text: Lowercase ASCII.
    func isString(equalToLowercaseASCII text: StaticString) -> Bool {
        switch self {
        case .bulkString(let buffer?): Self.bytes(buffer.readableBytesView, equalToLowercaseASCII: text)
        case .simpleString(let line): Self.bytes(line.utf8, equalToLowercaseASCII: text)
        case .verbatimString(_, let buffer): Self.bytes(buffer.readableBytesView, equalToLowercaseASCII: text)
        case .attribute(_, let value): value.isString(equalToLowercaseASCII: text)
        default: false
        }
    }

    private static func bytes(_ bytes: some Collection<UInt8>, equalToLowercaseASCII text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return text.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { byte, lowercase in
                // An uppercase ASCII letter is its lowercase one less 0x20.
                let isUppercase = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")
                return byte == lowercase || (isUppercase && byte | 0x20 == lowercase)
            }
        }
    }

    /// The value's elements when it is an array, set or push, `nil` otherwise.
    var elements: [_RESPValue]? {
        switch self {
        case .array(let elements): elements
        case .set(let elements), .push(let elements): elements
        case .attribute(_, let value): value.elements
        default: nil
        }
    }

    /// The error text when the value is an error reply of either kind.
    var errorMessage: String? {
        switch self {
        case .error(let message): message
        case .blobError(let buffer): String(buffer: buffer)
        case .attribute(_, let value): value.errorMessage
        default: nil
        }
    }
}

extension _RESPValue {
    /// Appends the value's RESP encoding to `buffer`.
    ///
    /// Strings that RESP sends as lines must not contain `\r` or `\n`, and a verbatim
    /// string's format must be three bytes; the parser rejects what breaks that.
    func write(to buffer: inout ByteBuffer) {
        switch self {
        case .simpleString(let text):
            Self.writeLine(UInt8(ascii: "+"), text, to: &buffer)
        case .error(let text):
            Self.writeLine(UInt8(ascii: "-"), text, to: &buffer)
        case .integer(let value):
            Self.writeLine(UInt8(ascii: ":"), String(value), to: &buffer)
        case .bulkString(nil):
            buffer.writeStaticString("$-1\r\n")
        case .bulkString(let payload?):
            Self.writeBlob(UInt8(ascii: "$"), payload, to: &buffer)
        case .array(nil):
            buffer.writeStaticString("*-1\r\n")
        case .array(let elements?):
            Self.writeAggregate(UInt8(ascii: "*"), elements, to: &buffer)
        case .null:
            buffer.writeStaticString("_\r\n")
        case .double(let value):
            let text =
                value.isNaN ? "nan" : value == .infinity ? "inf" : value == -.infinity ? "-inf" : "\(value)"
            Self.writeLine(UInt8(ascii: ","), text, to: &buffer)
        case .boolean(let value):
            buffer.writeStaticString(value ? "#t\r\n" : "#f\r\n")
        case .blobError(let payload):
            Self.writeBlob(UInt8(ascii: "!"), payload, to: &buffer)
        case .verbatimString(let format, let text):
            var payload = ByteBuffer(string: format)
            payload.writeInteger(UInt8(ascii: ":"))
            payload.writeImmutableBuffer(text)
            Self.writeBlob(UInt8(ascii: "="), payload, to: &buffer)
        case .bigNumber(let digits):
            Self.writeLine(UInt8(ascii: "("), digits, to: &buffer)
        case .map(let pairs):
            Self.writeLine(UInt8(ascii: "%"), String(pairs.count), to: &buffer)
            for pair in pairs {
                pair.key.write(to: &buffer)
                pair.value.write(to: &buffer)
            }
        case .set(let elements):
            Self.writeAggregate(UInt8(ascii: "~"), elements, to: &buffer)
        case .attribute(let pairs, let value):
            Self.writeLine(UInt8(ascii: "|"), String(pairs.count), to: &buffer)
            for pair in pairs {
                pair.key.write(to: &buffer)
                pair.value.write(to: &buffer)
            }
            value.write(to: &buffer)
        case .push(let elements):
            Self.writeAggregate(UInt8(ascii: ">"), elements, to: &buffer)
        }
    }

    private static func writeLine(_ type: UInt8, _ text: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(type)
        buffer.writeString(text)
        buffer.writeStaticString("\r\n")
    }

    private static func writeBlob(_ type: UInt8, _ payload: ByteBuffer, to buffer: inout ByteBuffer) {
        writeLine(type, String(payload.readableBytes), to: &buffer)
        buffer.writeImmutableBuffer(payload)
        buffer.writeStaticString("\r\n")
    }

    private static func writeAggregate(_ type: UInt8, _ elements: [_RESPValue], to buffer: inout ByteBuffer) {
        writeLine(type, String(elements.count), to: &buffer)
        for element in elements { element.write(to: &buffer) }
    }
}
#endif
