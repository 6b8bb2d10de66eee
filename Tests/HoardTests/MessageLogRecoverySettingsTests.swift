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
}
