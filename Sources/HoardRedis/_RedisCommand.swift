import Foundation
import NIOCore

/// One Redis command, already encoded as a RESP array of bulk strings.
///
/// ```swift
/// let command = _RedisCommand("SET", key, value, "PX", "1500")
/// ```
struct _RedisCommand: Sendable {
    /// The command's name, for error messages (`GET`, `MGET`, …).
    let name: String
    /// The RESP encoding: `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per argument.
    let encoded: ByteBuffer

    /// Encodes a command from its name and arguments.
    init(_ name: String, arguments: [_RedisArgument]) {
        self.name = name
        var buffer = ByteBuffer()
        buffer.reserveCapacity(16 + name.utf8.count + arguments.reduce(0) { $0 + $1.byteCount + 16 })
        buffer.writeInteger(UInt8(ascii: "*"))
        buffer.writeString(String(arguments.count + 1))
        buffer.writeStaticString("\r\n")
        Self.writeBulk(name.utf8, to: &buffer)
        for argument in arguments {
            switch argument {
            case .bytes(let bytes): Self.writeBulk(bytes.readableBytesView, to: &buffer)
            case .string(let text): Self.writeBulk(text.utf8, to: &buffer)
            }
        }
        encoded = buffer
    }

    /// Encodes a command from its name and arguments.
    init(_ name: String, _ arguments: _RedisArgument...) {
        self.init(name, arguments: arguments)
    }

    private static func writeBulk<Bytes: Collection<UInt8>>(_ bytes: Bytes, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "$"))
        buffer.writeString(String(bytes.count))
        buffer.writeStaticString("\r\n")
        buffer.writeBytes(bytes)
        buffer.writeStaticString("\r\n")
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
