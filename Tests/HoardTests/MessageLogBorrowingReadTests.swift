import Foundation
import Hoard
import Testing

@Suite("MessageLog borrowing read", .timeLimit(.minutes(2)))
struct MessageLogBorrowingReadTests {
    @Test("forEachEncodedMessage sees exactly what messages() returns, across the wrap point")
    func matchesMessages() throws {
        try withTemporaryDirectory { directory in
            let log = try rawLog(directory.appendingPathComponent("ring.log"), maximumBytes: 4096, overwrites: true)
            for sequence in 0..<500 {
                try log.append(taggedMessage(writer: 0, sequence: sequence, padding: sequence % 37))
            }
            var seen: [Data] = []
            try log.forEachEncodedMessage { seen.append(Data($0)) }
            let messages = try log.messages()
            #expect(seen == messages)
            #expect(messages.count > 10)
            #expect(tag(of: try #require(messages.last))?.sequence == 499)
        }
    }

    @Test("A damaged record throws fileCorrupted before body sees any message")
    func damageThrowsFirst() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("damaged.log")
            do {
                let log = try rawLog(url, maximumBytes: 4096, overwrites: false)
                for index in 0..<10 { try log.append(Data("message \(index)".utf8)) }
            }
            var file = try bytes(of: url)
            file[64 + 3 * (8 + 9) + 10] ^= 0x01  // a payload byte of the fourth record
            try write(file, to: url)
            let log = try rawLog(url, maximumBytes: 4096, overwrites: false)
            var calls = 0
            let error = #expect(throws: HoardError.self) { try log.forEachEncodedMessage { _ in calls += 1 } }
            #expect(error?.code == .fileCorrupted)
            #expect(error?.offset == 64 + 3 * (8 + 9))
            #expect(calls == 0)
        }
    }

    @Test("An error thrown by body ends the scan and reaches the caller")
    func bodyErrorStops() throws {
        struct Enough: Error {}
        try withTemporaryDirectory { directory in
            let log = try rawLog(directory.appendingPathComponent("stop.log"), maximumBytes: 4096, overwrites: false)
            for index in 0..<10 { try log.append(Data("message \(index)".utf8)) }
            var calls = 0
            #expect(throws: Enough.self) {
                try log.forEachEncodedMessage { _ in
                    calls += 1
                    if calls == 3 { throw Enough() }
                }
            }
            #expect(calls == 3)
        }
    }
}
