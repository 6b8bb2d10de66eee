import Foundation
import Hoard
import Testing

@Suite("MessageLog recovery with other settings", .timeLimit(.minutes(1)))
struct MessageLogRecoverySettingsTests {
    @Test("recover() of a damaged header with a budget smaller than the file refuses and changes nothing")
    func smallerBudgetRefused() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("big.log")
            let messages = (0..<100).map { taggedMessage(writer: 1, sequence: $0, padding: 30) }
            do { try rawLog(url, maximumBytes: 64 + 8000, overwrites: false).append(contentsOf: messages) }
            var file = try bytes(of: url)
            file[30] ^= 0x40  // the header's oldest offset: the header no longer checks out
            try Data(file).write(to: url)

            // An instance opened with a smaller budget cannot hold what the file holds:
            // rebuilding the header with its budget would drop every message past it.
            let small = try rawLog(url, maximumBytes: 64 + 1000, overwrites: false)
            let error = #expect(throws: HoardError.self) { try small.recover() }
            #expect(error?.code == .fileNotWritable)
            #expect(try bytes(of: url) == file, "nothing is written")

            // The budget the log was created with recovers every message.
            let right = try rawLog(url, maximumBytes: 64 + 8000, overwrites: false)
            try right.recover()
            #expect(try right.messages() == messages)
        }
    }

    /// A ring of 18 messages that has wrapped (the 82 before them were overwritten): its
    /// records from offset 64 carry the newest lap, those past them, up to the wrap
    /// point, the lap before.
    private static func wrappedRing(_ url: URL) throws -> (budget: Int, messages: [Data]) {
        let budget = 64 + 1000
        let messages = (0..<100).map { taggedMessage(writer: 1, sequence: $0, padding: 30) }
        let ring = try rawLog(url, maximumBytes: budget, overwrites: true)
        for message in messages { try ring.append(message) }
        let kept = try ring.messages()
        #expect(kept == Array(messages.suffix(kept.count)))
        #expect(kept.count == 18)
        return (budget, kept)
    }

    @Test(
        "recover() of a wrapped ring's damaged header without overwriting refuses; overwriting recovers all",
        arguments: [
            [30],  // the oldest offset
            [12],  // the flags: the damaged header no longer says the log overwrites
            [30, 56],  // the oldest offset and the lap: the lap comes from the records at offset 64
        ])
    func wrappedRingRefusedWithoutOverwriting(damagedBytes: [Int]) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("ring.log")
            let (budget, kept) = try Self.wrappedRing(url)
            var file = try bytes(of: url)
            for offset in damagedBytes { file[offset] ^= 0x40 }
            try Data(file).write(to: url)

            // Rebuilt as a log that does not overwrite, the header would count only the
            // records from offset 64, and the older ones before the wrap point would be
            // gone for good.
            let plain = try rawLog(url, maximumBytes: budget, overwrites: false)
            let error = #expect(throws: HoardError.self) { try plain.recover() }
            #expect(error?.code == .fileNotWritable)
            #expect(error?.message.contains("overwritesOldMessages") == true, "the error says how to recover")
            #expect(try bytes(of: url) == file, "nothing is written")

            // An instance configured as the log was recovers every message.
            let ring = try rawLog(url, maximumBytes: budget, overwrites: true)
            let report = try ring.recover()
            #expect(report.intactMessageCount == kept.count)
            #expect(try ring.messages() == kept)
        }
    }

    @Test("recover() of a ring's damaged header without overwriting keeps every message when it has not wrapped")
    func unwrappedRingRecoveredWithoutOverwriting() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("ring.log")
            let budget = 64 + 1000
            let messages = (0..<15).map { taggedMessage(writer: 1, sequence: $0, padding: 30) }
            do { try rawLog(url, maximumBytes: budget, overwrites: true).append(contentsOf: messages) }
            var file = try bytes(of: url)
            file[30] ^= 0x40
            try Data(file).write(to: url)

            let plain = try rawLog(url, maximumBytes: budget, overwrites: false)
            let report = try plain.recover()
            #expect(report.intactMessageCount == messages.count)
            #expect(try plain.messages() == messages)
            #expect(try plain.verify().isIntact)
        }
    }
}
