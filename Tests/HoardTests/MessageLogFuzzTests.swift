import Foundation
import Testing

@testable import Hoard

/// A seeded fuzzer over everything that reads a log file: opening (both ways), every
/// read, verify() and recover(). It runs in CI as a normal test, in a few seconds;
/// `HOARD_FUZZ_ITERATIONS` and `HOARD_FUZZ_SEED` run it longer or elsewhere.
@Suite("MessageLog fuzzing", .timeLimit(.minutes(5)))
struct MessageLogFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let iterations = environment["HOARD_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 1_000
    static let seed = environment["HOARD_FUZZ_SEED"].flatMap(UInt64.init) ?? 20_250_601

    /// Valid logs the mutations start from, and every message ever appended to them.
    struct Corpus {
        var files: [(bytes: [UInt8], maximumBytes: Int, overwrites: Bool)] = []
        var appended: Set<Data> = []
    }

    static func corpus(in directory: URL) throws -> Corpus {
        var corpus = Corpus()
        var random = SplitMix64(seed: seed)
        var sequence = 0
        for (index, (maximumBytes, overwrites, count)) in [
            (64 + 600, true, 120), (64 + 300, false, 12), (64 + 72, true, 5), (64 + 2_000, true, 0),
            (64 + 900, true, 80),
        ].enumerated() {
            let url = directory.appendingPathComponent("corpus-\(index).log")
            let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: overwrites)
            for _ in 0..<count {
                let message = taggedMessage(writer: 9, sequence: sequence, padding: Int(random.next() % 40))
                sequence += 1
                if (try? log.append(message)) != nil { corpus.appended.insert(message) }
            }
            if index == 4 {
                // Leave skip markers in it: damage one record and recover.
                var file = try bytes(of: url)
                file[200] ^= 0xFF
                try write(file, to: url)
                try log.recover()
            }
            corpus.files.append((try bytes(of: url), maximumBytes, overwrites))
        }
        return corpus
    }

    @Test("Whatever the bytes: no crash, only HoardErrors, never a message that was not appended, never out of order")
    func fuzz() async throws {
        try await withTemporaryDirectory { directory in
            let corpus = try Self.corpus(in: directory)
            var random = SplitMix64(seed: Self.seed ^ 0xF00D)
            let url = directory.appendingPathComponent("fuzz.log")
            var outcomes: [String: Int] = [:]
            for iteration in 0..<Self.iterations {
                let base = corpus.files[Int(random.next() % UInt64(corpus.files.count))]
                let (bytes, strategy) = Self.mutate(base.bytes, random: &random)
                try write(bytes, to: url)
                let outcome = try await Self.exercise(
                    url, maximumBytes: base.maximumBytes, overwrites: base.overwrites, corpus: corpus,
                    context: "iteration \(iteration), strategy \(strategy)")
                outcomes[outcome, default: 0] += 1
            }
            // The inputs reached every kind of outcome, so the fuzzer is not stuck on one path.
            #expect(outcomes["read", default: 0] > 0)
            #expect(outcomes["recovered", default: 0] > 0)
            #expect(outcomes["refused", default: 0] > 0)
        }
    }

    @Test("Headers with huge or extreme offsets, counts, budgets and laps, checksum valid: errors, never a crash")
    func extremeHeaders() async throws {
        try await withTemporaryDirectory { directory in
            let corpus = try Self.corpus(in: directory)
            let url = directory.appendingPathComponent("extreme.log")
            let extremes: [UInt64] = [
                .max, .max - 7, 1 << 63, 1 << 62, 1 << 48, (1 << 48) + 1, UInt64(UInt32.max), 0x7FFF_FFFF, 72, 71, 64,
                63, 0,
            ]
            var refusedOrDamaged = 0
            for (index, base) in corpus.files.enumerated() {
                for field in [16, 24, 32, 40, 48, 56] {
                    for value in extremes {
                        var bytes = base.bytes
                        let width = field == 56 ? 4 : 8
                        for i in 0..<width { bytes[field + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
                        let crc = bytes[0..<60].withUnsafeBytes { _CRC32C.checksum($0) }
                        for i in 0..<4 { bytes[60 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
                        try write(bytes, to: url)
                        let outcome = try await Self.exercise(
                            url, maximumBytes: base.maximumBytes, overwrites: base.overwrites, corpus: corpus,
                            context: "file \(index), field \(field) = \(value)")
                        if outcome != "read" { refusedOrDamaged += 1 }
                    }
                }
            }
            // Most of these headers cannot describe a log: they must be refused, not read.
            #expect(refusedOrDamaged > corpus.files.count * 6 * extremes.count / 2)

            // A damaged header of a log with a 1 TiB budget in a file of a few hundred
            // bytes: recovery scans the file, not the budget.
            let large = directory.appendingPathComponent("large.log")
            let messages = (0..<3).map { taggedMessage(writer: 5, sequence: $0, padding: 30) }
            try rawLog(large, maximumBytes: 1 << 40, overwrites: true).append(contentsOf: messages)
            var file = try bytes(of: large)
            file[40] ^= 0x01  // the record count
            try write(file, to: large)
            let log = try rawLog(large, maximumBytes: 1 << 40, overwrites: true)
            #expect(try !log.recover().isHeaderIntact)
            #expect(try log.messages() == messages)
        }
    }

    /// One mutation of a valid log, and its name.
    static func mutate(_ original: [UInt8], random: inout SplitMix64) -> ([UInt8], String) {
        var bytes = original
        func index() -> Int { Int(random.next() % UInt64(max(bytes.count, 1))) }
        switch random.next() % 8 {
        case 0:
            return (
                (0..<Int(random.next() % 700)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, "random bytes"
            )
        case 1:
            for _ in 0..<(1 + random.next() % 6) where !bytes.isEmpty {
                bytes[index()] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            return (bytes, "flips")
        case 2:
            return (Array(bytes.prefix(index())), "truncated")
        case 3:
            let start = index()
            let end = min(bytes.count, start + Int(random.next() % 200))
            let fill: UInt8 = random.next() % 2 == 0 ? 0 : 0xFF
            for i in start..<end { bytes[i] = fill }
            return (bytes, "filled")
        case 4:
            // A block copied over another place: a misdirected write.
            let from = index()
            let to = index()
            let count = min(Int(random.next() % 150), bytes.count - max(from, to))
            if count > 0 { bytes.replaceSubrange(to..<(to + count), with: bytes[from..<(from + count)]) }
            return (bytes, "copied block")
        case 5:
            // A header with random offsets, count, lap or flags, and a valid checksum.
            guard bytes.count >= 64 else { return (bytes, "short") }
            for _ in 0..<(1 + random.next() % 3) {
                let field = [12, 16, 24, 32, 40, 48, 56][Int(random.next() % 7)]
                let value = random.next() % 3 == 0 ? random.next() : random.next() % UInt64(bytes.count + 64)
                let width = field == 12 || field == 56 ? 4 : 8
                for i in 0..<width { bytes[field + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
            }
            let crc = bytes[0..<60].withUnsafeBytes { _CRC32C.checksum($0) }
            for i in 0..<4 { bytes[60 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
            return (bytes, "valid header, random fields")
        case 6:
            bytes += (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            return (bytes, "extended")
        default:
            // A record length or marker set to an edge value.
            guard bytes.count >= 72 else { return (bytes, "short") }
            let at = 64 + Int(random.next() % UInt64(bytes.count - 68))
            let value: UInt32 = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF, 8, 9][Int(random.next() % 8)]
            for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
            return (bytes, "edge value")
        }
    }

    /// Opens, reads, verifies and recovers a file, checking every message returned.
    static func exercise(
        _ url: URL, maximumBytes: Int, overwrites: Bool, corpus: Corpus, context: String
    ) async throws -> String {
        func check(_ messages: [Data], _ what: String) {
            var last = -1
            for message in messages {
                #expect(corpus.appended.contains(message), "\(context): \(what) returned a message never appended")
                let sequence = tag(of: message)?.sequence ?? -1
                #expect(sequence > last, "\(context): \(what) returned messages out of order or twice")
                last = sequence
            }
        }
        var outcome = "refused"
        if let reader = try? MessageLog<Data>(forReadingFrom: url, codec: .cacheValue) {
            if let messages = try? reader.messages() {
                check(messages, "messages()")
                outcome = "read"
            }
            if let newest = try? reader.newestMessages(3) { check(newest, "newestMessages(3)") }
            _ = try? reader.count
            _ = try? reader.verify()
            var streamed: [Data] = []
            do {
                for try await message in reader.asyncMessages { streamed.append(message) }
            } catch {}
            check(streamed, "asyncMessages")
            #expect(throws: HoardError.self) { try reader.recover() }
        }
        guard let log = try? rawLog(url, maximumBytes: maximumBytes, overwrites: overwrites) else { return outcome }
        if let messages = try? log.messages() { check(messages, "messages() of a writable instance") }
        guard (try? log.recover()) != nil else { return outcome }
        do {
            let recovered = try log.messages()
            check(recovered, "messages() after recover()")
            #expect(try log.verify().isIntact, "\(context): not intact after recover()")
            let marker = taggedMessage(writer: 9, sequence: 1_000_000, padding: 0)
            do throws(HoardError) {
                try log.append(marker)
                #expect(try log.newestMessages(1) == [marker], "\(context)")
            } catch  where error.code == .logFull && !overwrites {
                // A full log that does not overwrite refuses, as it should.
            }
        } catch {
            Issue.record("\(context): after recover(): \(error)")
        }
        return "recovered"
    }
}
