#if Redis
import Foundation
import NIOCore
import Testing

@testable import HoardRedis

/// Random and mutated RESP frames, cut at random points, for a bounded time.
///
/// Every run starts from the same seed, and each case derives its own seed from it, so
/// a failure names the seed that replays it. `HOARD_FUZZ_SECONDS` changes the budget
/// (2 seconds by default), `HOARD_FUZZ_SEED` the starting seed.
@Suite("RESP fuzzing")
struct RESPFuzzTests {
    private static let environment = ProcessInfo.processInfo.environment
    private static let budget = Double(environment["HOARD_FUZZ_SECONDS"] ?? "") ?? 2
    private static let baseSeed = UInt64(environment["HOARD_FUZZ_SEED"] ?? "") ?? 0x5EED_1234

    private static let limits: _RESPParser.Limits = {
        var limits = _RESPParser.Limits()
        limits.maximumBulkLength = 1 << 16
        limits.maximumDepth = 8
        limits.maximumElements = 1 << 12
        limits.maximumLineLength = 1 << 10
        return limits
    }()

    private func cuts(for length: Int, using random: inout SeededRandom) -> [Int] {
        guard length > 1 else { return [] }
        return (0..<random.int(0..<6)).map { _ in random.int(1..<length) }
    }

    @Test("Valid frames round-trip whatever the cut points", .timeLimit(.minutes(10)))
    func validFramesRoundTrip() throws {
        let deadline = Date(timeIntervalSinceNow: Self.budget / 2)
        var cases = 0
        while Date() < deadline {
            for _ in 0..<50 {
                let seed = Self.baseSeed &+ UInt64(cases)
                var random = SeededRandom(seed: seed)
                let values = (0..<random.int(1..<4)).map { _ in random.respValue(depth: random.int(0..<5)) }
                var bytes = ByteBuffer()
                for value in values { value.write(to: &bytes) }
                let parsed = try parseInPieces(
                    bytes, cuts: cuts(for: bytes.readableBytes, using: &random), limits: Self.limits)
                #expect(parsed.values == values, "seed \(seed)")
                #expect(parsed.leftover == 0, "seed \(seed)")
                cases += 1
            }
        }
        #expect(cases > 100)
        print("RESP fuzz: \(cases) valid frame sets round-tripped")
    }

    @Test(
        "Mutated frames and random bytes never crash: they parse, wait for more, or throw a protocol error",
        .timeLimit(.minutes(10)))
    func mutatedFramesNeverCrash() {
        let deadline = Date(timeIntervalSinceNow: Self.budget / 2)
        var cases = 0
        var outcomes = (parsed: 0, incomplete: 0, rejected: 0)
        while Date() < deadline {
            for _ in 0..<50 {
                let seed = Self.baseSeed &+ 0x1_0000_0000 &+ UInt64(cases)
                var random = SeededRandom(seed: seed)
                var bytes: [UInt8]
                if random.chance(0.15) {
                    // Random bytes, biased towards what RESP is made of.
                    let alphabet = Array("+-:$*_,#!=(%~|>0123456789-?\r\n".utf8)
                    bytes = (0..<random.int(0..<200)).map { _ in
                        random.chance(0.7)
                            ? alphabet[random.int(0..<alphabet.count)] : UInt8.random(in: 0...255, using: &random)
                    }
                } else {
                    bytes = Array(random.respValue(depth: random.int(0..<6)).encoded.readableBytesView)
                    for _ in 0..<random.int(1..<5) { mutate(&bytes, using: &random) }
                }
                let buffer = ByteBuffer(bytes: bytes)
                do {
                    let result = try parseInPieces(
                        buffer, cuts: cuts(for: bytes.count, using: &random), limits: Self.limits)
                    if result.leftover == 0 { outcomes.parsed += 1 } else { outcomes.incomplete += 1 }
                    // Whatever parsed is a value that encodes (and so could be sent on).
                    for value in result.values { _ = value.encoded }
                } catch {
                    #expect(error.code == .protocolError, "seed \(seed)")
                    outcomes.rejected += 1
                }
                cases += 1
            }
        }
        #expect(cases > 100)
        #expect(outcomes.rejected > 0)
        print(
            "RESP fuzz: \(cases) mutated frames: \(outcomes.parsed) parsed, \(outcomes.incomplete) incomplete, \(outcomes.rejected) rejected"
        )
    }

    private func mutate(_ bytes: inout [UInt8], using random: inout SeededRandom) {
        let interesting = Array("\r\n-1$*%0999999999999999999999".utf8)
        switch random.int(0..<7) {
        case 0 where !bytes.isEmpty:  // flip a byte
            bytes[random.int(0..<bytes.count)] = UInt8.random(in: 0...255, using: &random)
        case 1:  // insert a byte
            bytes.insert(
                random.chance(0.5)
                    ? interesting[random.int(0..<interesting.count)] : UInt8.random(in: 0...255, using: &random),
                at: random.int(0..<bytes.count + 1))
        case 2 where !bytes.isEmpty:  // delete a range
            let start = random.int(0..<bytes.count)
            bytes.removeSubrange(start..<min(bytes.count, start + random.int(1..<8)))
        case 3 where !bytes.isEmpty:  // truncate
            bytes.removeLast(random.int(0..<bytes.count))
        case 4 where !bytes.isEmpty:  // duplicate a slice
            let start = random.int(0..<bytes.count)
            let slice = bytes[start..<min(bytes.count, start + random.int(1..<16))]
            bytes.insert(contentsOf: slice, at: random.int(0..<bytes.count + 1))
        case 5:  // a huge or negative length right after a type byte
            let lengths = ["99999999999", "-5", "65537", "4097", "9223372036854775807", "-9223372036854775808"]
            if let index = bytes.indices.filter({ "$*%~|>!=".utf8.contains(bytes[$0]) }).randomElement(using: &random) {
                let end = bytes[(index + 1)...].firstIndex(of: 0x0D) ?? bytes.count
                bytes.replaceSubrange((index + 1)..<end, with: Array(lengths[random.int(0..<lengths.count)].utf8))
            }
        default:  // a deeply nested prefix
            bytes.insert(contentsOf: Array(String(repeating: "*1\r\n", count: random.int(1..<20)).utf8), at: 0)
        }
    }
}
#endif
