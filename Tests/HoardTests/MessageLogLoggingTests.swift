import Foundation
import Hoard
import HoardLoggingTestSupport
import Testing

@Suite("MessageLog logging", .timeLimit(.minutes(2)))
struct MessageLogLoggingTests {
    @Test("Appends and reads log nothing at info or above")
    func quietHotPath() throws {
        try withTemporaryDirectory { directory in
            let handler = RecordingLogHandler()
            let log = try MessageLog<Data>(
                fileURL: directory.appendingPathComponent("quiet.log"), maximumBytes: 1024,
                overwritesOldMessages: true, codec: .cacheValue, logger: handler.logger())
            for index in 0..<200 { try log.append(Data(repeating: UInt8(index % 256), count: 20)) }
            #expect(try log.messages().count == 34, "(1024 - 64) / 28: the ring overwrote its oldest messages")
            #expect(handler.records.isEmpty)
        }
    }

    @Test("A torn last append dropped on open is logged once, at notice, with the file's metadata")
    func tornAppendIsLogged() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("torn.log")
            do {
                let log = try rawLog(url, maximumBytes: 2048, overwrites: true)
                try log.append(contentsOf: [Data("one".utf8), Data("two".utf8)])
            }
            try tearAppend(of: Data("lost in the crash".utf8), to: url, maximumBytes: 2048)

            let handler = RecordingLogHandler()
            let log = try MessageLog<Data>(
                fileURL: url, maximumBytes: 2048, overwritesOldMessages: true, codec: .cacheValue,
                logger: handler.logger())
            #expect(try log.messages() == [Data("one".utf8), Data("two".utf8)])
            let records = handler.records
            #expect(records.count == 1)
            let record = try #require(records.first)
            #expect(record.level == .notice)
            #expect(record.message.contains("torn"))
            #expect(record.message.contains("2 messages remain"))
            #expect(record.metadata["hoard.store"] == url.path)
            #expect(record.metadata["hoard.tier"] == "log")
            #expect(record.metadata["hoard.operation"] == "open")
        }
    }

    @Test(
        "Opening with other settings logs why appends will be refused; a damaged header and its recovery are warnings")
    func readOnlyAndRecoveryAreLogged() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("settings.log")
            do {
                let log = try rawLog(url, maximumBytes: 4096, overwrites: false)
                for index in 0..<5 { try log.append(Data("message \(index)".utf8)) }
            }
            let handler = RecordingLogHandler()
            let other = try MessageLog<Data>(
                fileURL: url, maximumBytes: 8192, overwritesOldMessages: false, codec: .cacheValue,
                logger: handler.logger())
            #expect(!other.isWritable)
            let readOnly = try #require(handler.records.first)
            #expect(readOnly.level == .notice)
            #expect(readOnly.metadata["hoard.error"]?.contains("maximumBytes 4096") == true)

            // A damaged header: a warning on open, and another when recover() rebuilds it
            var file = try bytes(of: url)
            file[20] ^= 0x40
            try write(file, to: url)
            let damagedHandler = RecordingLogHandler()
            let damaged = try MessageLog<Data>(
                fileURL: url, maximumBytes: 4096, overwritesOldMessages: false, codec: .cacheValue,
                logger: damagedHandler.logger())
            #expect(damagedHandler.records.map(\.level) == [.warning])
            #expect(damagedHandler.records.first?.metadata["hoard.operation"] == "open")
            try damaged.recover()
            #expect(damagedHandler.records.map(\.level) == [.warning, .warning])
            let recovered = try #require(damagedHandler.records.last)
            #expect(recovered.metadata["hoard.operation"] == "recover")
            #expect(recovered.message.contains("kept 5 intact messages"))
            #expect(try damaged.messages().count == 5)

            // An intact log's recover() logs nothing
            try damaged.recover()
            #expect(damagedHandler.records.count == 2)
        }
    }
}
