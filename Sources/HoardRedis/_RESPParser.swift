#if Redis
import NIOCore

/// An incremental parser of RESP2 and RESP3 replies.
///
/// Feed it the bytes received so far; ``next(from:)`` returns one complete reply and
/// consumes its bytes, or returns `nil` when the reply is not complete yet. Elements of
/// an unfinished aggregate that are already complete are consumed and kept, so a large
/// reply that arrives in many pieces is parsed in linear time; a scalar that is not
/// complete is left in the buffer until it is.
///
/// Everything the parser accepts is bounded by ``Limits``: a bulk payload, the length
/// of a line, the elements of one aggregate and the nesting depth. Bytes that are not
/// RESP, or that exceed a limit, throw ``RedisError/Code/protocolError``; the parser
/// never traps on input. After it throws, the parser must be discarded.
struct _RESPParser {
    /// What the parser accepts before it gives up with a protocol error.
    struct Limits: Sendable, Hashable {
        /// The longest bulk string, blob error or verbatim string. Defaults to 512 MiB,
        /// Redis's own `proto-max-bulk-len`.
        var maximumBulkLength = 512 << 20
        /// The deepest nesting of aggregates (arrays, maps, sets, attributes, pushes).
        /// Defaults to 32.
        var maximumDepth = 32
        /// The most elements of one aggregate (pairs, for a map). Defaults to 2^24.
        var maximumElements = 1 << 24
        /// The longest line: a simple string, an error, a number or a header.
        /// Defaults to 64 KiB.
        var maximumLineLength = 64 << 10
    }

    let limits: Limits
    private var stack: [Frame] = []

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Whether the parser holds part of an unfinished aggregate.
    var isMidReply: Bool { !stack.isEmpty }

    private enum AggregateKind: Sendable {
        case array, map, set, attribute, push
    }

    /// An aggregate whose elements are still arriving.
    private struct Frame {
        var kind: AggregateKind
        var expected: Int
        var elements: [_RESPValue]

        init(kind: AggregateKind, count: Int) {
            self.kind = kind
            switch kind {
            case .map: expected = count * 2
            case .attribute: expected = count * 2 + 1
            case .array, .set, .push: expected = count
            }
            elements = []
            elements.reserveCapacity(min(expected, 1024))
        }

        func build() -> _RESPValue {
            switch kind {
            case .array: return .array(elements)
            case .set: return .set(elements)
            case .push: return .push(elements)
            case .map: return .map(Self.pairs(elements[...]))
            case .attribute: return .attribute(Self.pairs(elements.dropLast()), elements[elements.count - 1])
            }
        }

        private static func pairs(_ elements: ArraySlice<_RESPValue>) -> [_RESPValue.Pair] {
            stride(from: elements.startIndex, to: elements.endIndex, by: 2).map {
                _RESPValue.Pair(key: elements[$0], value: elements[$0 + 1])
            }
        }
    }

    private enum Token {
        case value(_RESPValue)
        case aggregate(AggregateKind, count: Int)
    }

    /// Parses the next complete reply at the front of `buffer`.
    ///
    /// - Returns: The reply, its bytes consumed; or `nil` when more bytes are needed.
    /// - Throws: ``RedisError/Code/protocolError`` on bytes that are not RESP or exceed
    ///   a limit.
    mutating func next(from buffer: inout ByteBuffer) throws(RedisError) -> _RESPValue? {
        while true {
            guard let token = try readToken(from: &buffer) else { return nil }
            var value: _RESPValue
            switch token {
            case .value(let scalar):
                value = scalar
            case .aggregate(let kind, let count):
                let frame = Frame(kind: kind, count: count)
                if frame.expected == 0 {
                    value = frame.build()
                } else {
                    guard stack.count < limits.maximumDepth else {
                        throw Self.error("a reply nests deeper than the limit of \(limits.maximumDepth) levels")
                    }
                    stack.append(frame)
                    continue
                }
            }
            // Hand the complete value to the aggregates it completes, innermost first.
            while !stack.isEmpty {
                let top = stack.count - 1
                stack[top].elements.append(value)
                guard stack[top].elements.count == stack[top].expected else { break }
                value = stack.removeLast().build()
            }
            if stack.isEmpty { return value }
        }
    }

    // MARK: Tokens

    private func readToken(from buffer: inout ByteBuffer) throws(RedisError) -> Token? {
        let start = buffer.readerIndex
        guard let type = buffer.getInteger(at: start, as: UInt8.self) else { return nil }
        guard let lineEnd = try findLineEnd(in: buffer, type: type) else { return nil }
        let contentStart = start + 1
        let contentLength = lineEnd - contentStart
        let headerLength = lineEnd + 2 - start

        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let text = buffer.getString(at: contentStart, length: contentLength) ?? ""
            buffer.moveReaderIndex(forwardBy: headerLength)
            return .value(type == UInt8(ascii: "+") ? .simpleString(text) : .error(text))

        case UInt8(ascii: ":"):
            guard let number = Self.integer(in: buffer, at: contentStart, length: contentLength) else {
                throw Self.error("an integer reply is not a 64-bit decimal integer")
            }
            buffer.moveReaderIndex(forwardBy: headerLength)
            return .value(.integer(number))

        case UInt8(ascii: "_"):
            guard contentLength == 0 else { throw Self.error("a null reply carries bytes") }
            buffer.moveReaderIndex(forwardBy: headerLength)
            return .value(.null)

        case UInt8(ascii: "#"):
            let flag = contentLength == 1 ? buffer.getInteger(at: contentStart, as: UInt8.self) : nil
            guard flag == UInt8(ascii: "t") || flag == UInt8(ascii: "f") else {
                throw Self.error("a boolean reply is neither t nor f")
            }
            buffer.moveReaderIndex(forwardBy: headerLength)
            return .value(.boolean(flag == UInt8(ascii: "t")))

        case UInt8(ascii: ","):
            guard let text = buffer.getString(at: contentStart, length: contentLength),
                let number = Self.double(text)
            else { throw Self.error("a double reply is not a decimal number, inf, -inf or nan") }
            buffer.moveReaderIndex(forwardBy: headerLength)
            return .value(.double(number))

        case UInt8(ascii: "("):
            guard let text = buffer.getString(at: contentStart, length: contentLength), Self.isBigNumber(text) else {
                throw Self.error("a big number reply is not a decimal integer")
            }
            buffer.moveReaderIndex(forwardBy: headerLength)
            return .value(.bigNumber(text))

        case UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="):
            guard let length = Self.integer(in: buffer, at: contentStart, length: contentLength) else {
                throw Self.error("a bulk length is not a decimal integer")
            }
            if length == -1 && type == UInt8(ascii: "$") {
                buffer.moveReaderIndex(forwardBy: headerLength)
                return .value(.bulkString(nil))
            }
            guard length >= 0 else { throw Self.error("a bulk length is negative (\(length))") }
            guard length <= limits.maximumBulkLength else {
                throw Self.error("a bulk reply of \(length) bytes exceeds the limit of \(limits.maximumBulkLength)")
            }
            let payloadLength = Int(length)
            guard buffer.readableBytes >= headerLength + payloadLength + 2 else { return nil }
            let payloadEnd = start + headerLength + payloadLength
            guard buffer.getInteger(at: payloadEnd, as: UInt16.self) == 0x0D0A else {
                throw Self.error("a bulk payload is not followed by CRLF")
            }
            buffer.moveReaderIndex(forwardBy: headerLength)
            let payload = buffer.readSlice(length: payloadLength)!
            buffer.moveReaderIndex(forwardBy: 2)
            switch type {
            case UInt8(ascii: "$"):
                return .value(.bulkString(payload))
            case UInt8(ascii: "!"):
                return .value(.blobError(payload))
            default:
                guard payloadLength >= 4, payload.getInteger(at: payload.readerIndex + 3, as: UInt8.self) == 0x3A,
                    let format = payload.getString(at: payload.readerIndex, length: 3)
                else { throw Self.error("a verbatim string does not start with a three-byte format and ':'") }
                return .value(
                    .verbatimString(
                        format: format, text: payload.getSlice(at: payload.readerIndex + 4, length: payloadLength - 4)!)
                )
            }

        case UInt8(ascii: "*"), UInt8(ascii: "%"), UInt8(ascii: "~"), UInt8(ascii: "|"), UInt8(ascii: ">"):
            guard let count = Self.integer(in: buffer, at: contentStart, length: contentLength) else {
                throw Self.error("an aggregate length is not a decimal integer")
            }
            if count == -1 && type == UInt8(ascii: "*") {
                buffer.moveReaderIndex(forwardBy: headerLength)
                return .value(.array(nil))
            }
            guard count >= 0 else { throw Self.error("an aggregate length is negative (\(count))") }
            guard count <= limits.maximumElements else {
                throw Self.error("an aggregate of \(count) elements exceeds the limit of \(limits.maximumElements)")
            }
            buffer.moveReaderIndex(forwardBy: headerLength)
            let kind: AggregateKind =
                switch type {
                case UInt8(ascii: "*"): .array
                case UInt8(ascii: "%"): .map
                case UInt8(ascii: "~"): .set
                case UInt8(ascii: "|"): .attribute
                default: .push
                }
            return .aggregate(kind, count: Int(count))

        default:
            throw Self.error("unknown reply type byte 0x\(String(type, radix: 16))")
        }
    }

    /// The index of the `\r` that ends the line starting at the reader index, or `nil`
    /// when the line is not complete yet.
    private func findLineEnd(in buffer: ByteBuffer, type: UInt8) throws(RedisError) -> Int? {
        // Reject an unknown type byte at once, before waiting for a line that may never come.
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "_"), UInt8(ascii: "#"),
            UInt8(ascii: ","), UInt8(ascii: "("), UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="),
            UInt8(ascii: "*"), UInt8(ascii: "%"), UInt8(ascii: "~"), UInt8(ascii: "|"), UInt8(ascii: ">"):
            break
        default:
            throw Self.error("unknown reply type byte 0x\(String(type, radix: 16))")
        }
        let window = min(buffer.readableBytes, limits.maximumLineLength + 2)
        let found = buffer.withUnsafeReadableBytes { bytes -> Int? in
            bytes[1..<window].firstIndex(of: 0x0D)
        }
        guard let offset = found else {
            if buffer.readableBytes > limits.maximumLineLength + 1 {
                throw Self.error("a line is longer than the limit of \(limits.maximumLineLength) bytes")
            }
            return nil
        }
        guard let next = buffer.getInteger(at: buffer.readerIndex + offset + 1, as: UInt8.self) else { return nil }
        guard next == 0x0A else { throw Self.error("a carriage return is not followed by a line feed") }
        return buffer.readerIndex + offset
    }

    // MARK: Scalars

    /// A decimal integer with an optional sign, at most 64 bits, or `nil`.
    private static func integer(in buffer: ByteBuffer, at start: Int, length: Int) -> Int64? {
        guard length > 0, length <= 20 else { return nil }
        var index = start
        let end = start + length
        var negative = false
        if let sign = buffer.getInteger(at: index, as: UInt8.self),
            sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+")
        {
            negative = sign == UInt8(ascii: "-")
            index += 1
        }
        guard index < end else { return nil }
        var value: Int64 = 0
        while index < end {
            guard let byte = buffer.getInteger(at: index, as: UInt8.self), byte >= 0x30, byte <= 0x39 else {
                return nil
            }
            let digit = Int64(byte - 0x30)
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
    }

    private static func double(_ text: String) -> Double? {
        switch text {
        case "inf", "+inf": return .infinity
        case "-inf": return -.infinity
        case "nan", "-nan": return .nan
        default:
            guard text.utf8.contains(where: { $0 >= 0x30 && $0 <= 0x39 }),
                text.utf8.allSatisfy({
                    ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2B || $0 == 0x2D || $0 == 0x65 || $0 == 0x45
                })
            else { return nil }
            return Double(text)
        }
    }

    private static func isBigNumber(_ text: String) -> Bool {
        var digits = Substring(text)
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    private static func error(_ message: String) -> RedisError {
        RedisError(.protocolError, "Invalid reply from the server: \(message).")
    }
}
#endif
