#if Redis
import NIOCore

@testable import HoardRedis

/// A small, fast, seedable generator (SplitMix64), so a failing fuzz case can be
/// replayed from its seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }

    mutating func bytes(count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    /// Printable ASCII without CR and LF: what RESP allows in a line.
    mutating func line(maxLength: Int) -> String {
        String(
            decoding: (0..<int(0..<maxLength + 1)).map { _ in UInt8.random(in: 0x20...0x7E, using: &self) },
            as: UTF8.self)
    }

    /// A random valid RESP value, nested at most `depth` levels, never a NaN double
    /// (NaN is not equal to itself, so it cannot round-trip through `==`).
    mutating func respValue(depth: Int) -> _RESPValue {
        let scalarKinds = 12
        let kind = depth > 0 ? int(0..<scalarKinds + 6) : int(0..<scalarKinds)
        switch kind {
        case 0: return .simpleString(line(maxLength: 20))
        case 1: return .error(line(maxLength: 30))
        case 2: return .integer(Int64.random(in: .min ... .max, using: &self) >> UInt64(int(0..<64)))
        case 3: return .bulkString(ByteBuffer(bytes: bytes(count: int(0..<40))))
        case 4: return .bulkString(nil)
        case 5: return .null
        case 6:
            let special: [Double] = [0, -0.0, 1, -1, .infinity, -.infinity, 1e300, .leastNonzeroMagnitude, 1e-5, .pi]
            return .double(
                chance(0.3) ? special[int(0..<special.count)] : Double.random(in: -1e12...1e12, using: &self))
        case 7: return .boolean(chance(0.5))
        case 8: return .blobError(ByteBuffer(bytes: bytes(count: int(0..<30))))
        case 9:
            let format = String(
                decoding: (0..<3).map { _ in UInt8.random(in: 0x61...0x7A, using: &self) }, as: UTF8.self)
            return .verbatimString(format: format, text: ByteBuffer(bytes: bytes(count: int(0..<30))))
        case 10:
            let digits = String(
                decoding: (0..<int(1..<60)).map { _ in UInt8.random(in: 0x30...0x39, using: &self) }, as: UTF8.self)
            return .bigNumber(chance(0.3) ? "-" + digits : digits)
        case 11: return .array(nil)
        case 12: return .array(elements(depth: depth))
        case 13: return .set(elements(depth: depth))
        case 14: return .push(elements(depth: depth))
        case 15: return .map(pairs(depth: depth))
        case 16: return .attribute(pairs(depth: depth), respValue(depth: depth - 1))
        default: return .array(elements(depth: depth))
        }
    }

    private mutating func elements(depth: Int) -> [_RESPValue] {
        (0..<int(0..<6)).map { _ in respValue(depth: depth - 1) }
    }

    private mutating func pairs(depth: Int) -> [_RESPValue.Pair] {
        (0..<int(0..<4)).map { _ in
            _RESPValue.Pair(key: respValue(depth: depth - 1), value: respValue(depth: depth - 1))
        }
    }
}

extension _RESPValue {
    /// The value's RESP encoding.
    var encoded: ByteBuffer {
        var buffer = ByteBuffer()
        write(to: &buffer)
        return buffer
    }
}

/// Feeds `bytes` to a fresh parser in pieces cut at `cuts`, collecting every reply.
func parseInPieces(
    _ bytes: ByteBuffer, cuts: [Int], limits: _RESPParser.Limits = .init()
) throws(RedisError) -> (values: [_RESPValue], leftover: Int) {
    var parser = _RESPParser(limits: limits)
    var received = ByteBuffer()
    var values: [_RESPValue] = []
    var start = 0
    for end in (cuts.filter { $0 > 0 && $0 < bytes.readableBytes }.sorted() + [bytes.readableBytes]) where end > start {
        var piece = bytes.getSlice(at: bytes.readerIndex + start, length: end - start)!
        received.writeBuffer(&piece)
        start = end
        while let value = try parser.next(from: &received) { values.append(value) }
    }
    return (values, received.readableBytes)
}
#endif
