import Foundation
import NIOCore

/// One Redis command, already encoded as a RESP array of bulk strings.
///
/// ```swift
/// let command = _RedisCommand("SET", .bytes(key), .bytes(value), "PX", "1500")
/// ```
struct _RedisCommand: Sendable {
    /// The command's name, for error messages (`GET`, `MGET`, …).
    let name: String
    /// The RESP encoding: `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per argument.
    let encoded: ByteBuffer

    /// A command encoded by a ``_RESPCommandWriter``.
    init(name: String, encoded: ByteBuffer) {
        self.name = name
        self.encoded = encoded
    }

    /// Encodes a command from its name and arguments.
    init(_ name: String, arguments: [_RedisArgument]) {
        self.name = name
        var writer = _RESPCommandWriter(capacity: 16 + name.utf8.count + arguments.reduce(0) { $0 + $1.byteCount + 16 })
        writer.command(name, argumentCount: arguments.count)
        for argument in arguments {
            switch argument {
            case .bytes(let bytes): writer.argument(bytes)
            case .string(let text): writer.argument(text)
            }
        }
        encoded = writer.buffer
    }

    /// Encodes a command from its name and arguments.
    init(_ name: String, _ arguments: _RedisArgument...) {
        self.init(name, arguments: arguments)
    }
}

/// One argument of a ``_RedisCommand``: bytes, or text sent as UTF-8.
enum _RedisArgument: Sendable, ExpressibleByStringLiteral {
    case bytes(ByteBuffer)
    case string(String)

    init(stringLiteral value: String) { self = .string(value) }

    var byteCount: Int {
        switch self {
        case .bytes(let bytes): bytes.readableBytes
        case .string(let text): text.utf8.count
        }
    }
}

/// Encodes one or more commands back to back into one buffer, each argument written
/// in place: the store's hot paths build a key, a value with its header, and the
/// invalidation that goes with them without an intermediate buffer per argument.
///
/// ```swift
/// var writer = _RESPCommandWriter(capacity: 64)
/// writer.command("GET", argumentCount: 1)
/// writer.argument("user:42")
/// connection.send(encoded: writer.buffer, count: writer.commandCount, name: "GET")
/// ```
struct _RESPCommandWriter {
    /// The encoded commands.
    private(set) var buffer: ByteBuffer
    /// How many commands ``buffer`` holds.
    private(set) var commandCount = 0

    /// Creates a writer whose buffer starts with room for `capacity` bytes.
    init(capacity: Int) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// Starts a command: its array header and its name. Exactly `argumentCount`
    /// arguments must follow.
    mutating func command(_ name: String, argumentCount: Int) {
        header(UInt8(ascii: "*"), argumentCount + 1)
        argument(name)
        commandCount += 1
    }

    /// Appends a text argument, as UTF-8.
    mutating func argument(_ text: String) {
        bulk(length: text.utf8.count) { $0.writeString(text) }
    }

    /// Appends a binary argument.
    mutating func argument(_ bytes: ByteBuffer) {
        bulk(length: bytes.readableBytes) { $0.writeImmutableBuffer(bytes) }
    }

    /// Appends an argument of `length` bytes, which `body` writes.
    mutating func bulk(length: Int, _ body: (inout ByteBuffer) -> Void) {
        header(UInt8(ascii: "$"), length)
        let start = buffer.writerIndex
        body(&buffer)
        assert(buffer.writerIndex - start == length, "a bulk argument's length was announced wrongly")
        buffer.writeInteger(Self.crlf)
    }

    /// `\r\n`, as one big-endian integer.
    private static let crlf: UInt16 = 0x0D0A

    /// Appends `marker`, `value` in decimal digits and `\r\n`, in one step: the
    /// header of an array (`*3\r\n`) or of a bulk string (`$1041\r\n`).
    private mutating func header(_ marker: UInt8, _ value: Int) {
        precondition(value >= 0, "a RESP length is never negative")
        var digitCount = 1
        var rest = value / 10
        while rest > 0 {
            digitCount += 1
            rest /= 10
        }
        // 1 marker + at most 19 digits + CR LF.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 22) { output in
            output[0] = marker
            var remaining = value
            var index = digitCount
            repeat {
                output[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
                remaining /= 10
                index -= 1
            } while index > 0
            output[digitCount + 1] = UInt8(ascii: "\r")
            output[digitCount + 2] = UInt8(ascii: "\n")
            return digitCount + 3
        }
    }
}
