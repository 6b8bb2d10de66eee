#if Redis
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
        bulk(length: text.utf8.count) { $0.write(text) }
    }

    /// Appends a binary argument.
    mutating func argument(_ bytes: ByteBuffer) {
        bulk(length: bytes.readableBytes) { $0.write(bytes) }
    }

    /// Appends an argument of `length` bytes, which `body` writes.
    ///
    /// The bulk header, the bytes and the closing `\r\n` go into one reservation of
    /// the buffer, so an argument built from many pieces (a key is seven) costs one
    /// capacity check instead of one per piece. `body` must write exactly `length`
    /// bytes: writing more, or fewer, traps.
    mutating func bulk(length: Int, _ body: (inout _RESPBulkBytes) -> Void) {
        precondition(length >= 0, "a RESP length is never negative")
        // Header: 1 marker + at most 19 digits + CR LF; then the bytes and CR LF.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length + 24) { output in
            let start = Self.writeHeader(UInt8(ascii: "$"), length, to: output)
            var bytes = _RESPBulkBytes(UnsafeMutableRawBufferPointer(rebasing: output[start..<(start + length)]))
            body(&bytes)
            precondition(bytes.count == length, "a bulk argument's length was announced wrongly")
            output[start + length] = UInt8(ascii: "\r")
            output[start + length + 1] = UInt8(ascii: "\n")
            return start + length + 2
        }
    }

    /// Appends `marker`, `value` in decimal digits and `\r\n`, in one step: the
    /// header of an array (`*3\r\n`).
    private mutating func header(_ marker: UInt8, _ value: Int) {
        precondition(value >= 0, "a RESP length is never negative")
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 22) { Self.writeHeader(marker, value, to: $0) }
    }

    /// How many decimal digits `value` (not negative) takes.
    static func decimalDigitCount(_ value: Int) -> Int {
        var digitCount = 1
        var rest = value / 10
        while rest > 0 {
            digitCount += 1
            rest /= 10
        }
        return digitCount
    }

    /// Writes `marker`, `value` (not negative) in decimal digits and `\r\n` at the
    /// start of `output`, which has room for 22 bytes; returns how many it wrote.
    private static func writeHeader(_ marker: UInt8, _ value: Int, to output: UnsafeMutableRawBufferPointer) -> Int {
        let digitCount = decimalDigitCount(value)
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

/// The bytes of one bulk argument being written by ``_RESPCommandWriter/bulk(length:_:)``:
/// a fixed region of the command buffer, filled from its start. Every write checks
/// that it stays inside the region, and traps when it would not.
struct _RESPBulkBytes {
    private let output: UnsafeMutableRawBufferPointer
    /// How many bytes have been written.
    private(set) var count = 0

    init(_ output: UnsafeMutableRawBufferPointer) {
        self.output = output
    }

    /// Appends one byte.
    mutating func write(_ byte: UInt8) {
        precondition(count < output.count, "a bulk argument is longer than announced")
        output[count] = byte
        count += 1
    }

    /// Appends raw bytes.
    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= output.count - count, "a bulk argument is longer than announced")
        if let source = bytes.baseAddress, bytes.count > 0 {
            (output.baseAddress! + count).copyMemory(from: source, byteCount: bytes.count)
        }
        count += bytes.count
    }

    /// Appends `text` as UTF-8.
    mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Appends `text` as UTF-8.
    mutating func write(static text: StaticString) {
        write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends the readable bytes of `buffer`.
    mutating func write(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { write($0) }
    }

    /// Appends the bytes of `data`.
    mutating func write(_ data: Data) {
        data.withUnsafeBytes { write($0) }
    }

    /// Appends `value` in big-endian byte order.
    mutating func write(bigEndian value: Int64) {
        withUnsafeBytes(of: value.bigEndian) { write($0) }
    }
}
#endif
