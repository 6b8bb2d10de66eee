import Foundation
import Hoard
import Testing

@Suite("MessageLog basics", .timeLimit(.minutes(3)))
struct MessageLogTests {
    struct Event: Codable, Sendable, Equatable {
        var name: String
        var count: Int
    }

    @Test("A new log is created empty and writable, and returns what was appended, oldest first")
    func createAppendRead() throws {
        try withTemporaryDirectory { directory in
            // Given a path with no file
            let url = directory.appendingPathComponent("events.log")
            let log = try MessageLog<Event>(fileURL: url, maximumBytes: 4096, overwritesOldMessages: false)
            #expect(FileManager.default.fileExists(atPath: url.path))
            #expect(try log.isEmpty)
            #expect(log.isWritable)

            // When messages are appended
            let events = (0..<5).map { Event(name: "e\($0)", count: $0) }
            for event in events { try log.append(event) }

            // Then they come back in order, and the file holds JSON
            #expect(try log.messages() == events)
            #expect(try log.count == 5)
            #expect(try !log.isEmpty)
            let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
            #expect(text.contains(#"{"name":"e3","count":3}"#) || text.contains(#"{"count":3,"name":"e3"}"#))
        }
    }

    @Test("A new log file is readable and writable by its owner only (0600), as the disk store's files are")
    func ownerOnlyMode() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("private.log")
            let log = try rawLog(url, maximumBytes: 4096, overwrites: false)
            try log.append(Data("secret".utf8))
            var info = stat()
            #expect(stat(url.path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
        }
    }

    @Test("Reopening a log keeps its messages and appends after them")
    func reopen() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("a.log")
            do {
                let log = try MessageLog<Event>(fileURL: url, maximumBytes: 4096, overwritesOldMessages: true)
                try log.append(Event(name: "first", count: 1))
            }
            let log = try MessageLog<Event>(fileURL: url, maximumBytes: 4096, overwritesOldMessages: true)
            try log.append(Event(name: "second", count: 2))
            #expect(try log.messages().map(\.name) == ["first", "second"])
            #expect(log.isWritable)
        }
    }

    @Test("Any codec can be given")
    func customCodec() throws {
        try withTemporaryDirectory { directory in
            let codec = ValueCodec<Int>(
                encode: { withUnsafeBytes(of: Int64($0).bigEndian) { Data($0) } },
                decode: { data in Int(Int64(bigEndian: data.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) })) })
            let url = directory.appendingPathComponent("ints.log")
            let log = try MessageLog(fileURL: url, maximumBytes: 1000, overwritesOldMessages: true, codec: codec)
            try log.append(contentsOf: [1, -2, 3_000_000_000])
            #expect(try log.messages() == [1, -2, 3_000_000_000])
            // 64-byte header, then three records of an 8-byte prefix and 8 bytes
            #expect(try Data(contentsOf: url).count == 64 + 3 * 16)
        }
    }

    // MARK: Budget edges

    @Test("Without overwrite, a log filled exactly refuses one more message, even an empty one, and is unchanged")
    func exactlyFull() throws {
        try withTemporaryDirectory { directory in
            // Given a budget of the header and exactly three records of 8 + 10 bytes
            let url = directory.appendingPathComponent("full.log")
            let log = try rawLog(url, maximumBytes: 64 + 3 * 18, overwrites: false)
            let messages = (0..<3).map { Data(repeating: UInt8($0), count: 10) }
            for message in messages { try log.append(message) }
            #expect(try Data(contentsOf: url).count == 64 + 3 * 18)
            let before = try restingBytes(of: url, after: log)

            // When one more is appended, Then it is refused as logFull and nothing changes
            let error = #expect(throws: HoardError.self) { try log.append(Data()) }
            #expect(error?.code == .logFull)
            #expect(try restingBytes(of: url, after: log) == before)
            #expect(try log.messages() == messages)
        }
    }

    @Test("Without overwrite, one byte over the room left is logFull; one byte less fits")
    func oneByteOver() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("over.log")
            let log = try rawLog(url, maximumBytes: 64 + 18 + 17, overwrites: false)
            try log.append(Data(count: 10))
            let before = try restingBytes(of: url, after: log)
            let error = #expect(throws: HoardError.self) { try log.append(Data(count: 10)) }
            #expect(error?.code == .logFull)
            #expect(try restingBytes(of: url, after: log) == before)
            try log.append(Data(count: 9))
            #expect(try log.messages().map(\.count) == [10, 9])
            #expect(try Data(contentsOf: url).count == 64 + 18 + 17)
        }
    }

    @Test(
        "A message larger than the budget minus the header is its own error, in both modes", arguments: [false, true])
    func largerThanBudget(overwrites: Bool) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("budget.log")
            let log = try rawLog(url, maximumBytes: 200, overwrites: overwrites)
            try log.append(Data("small".utf8))
            let before = try restingBytes(of: url, after: log)
            let largest = 200 - 64 - 8

            let error = #expect(throws: HoardError.self) { try log.append(Data(count: largest + 1)) }
            #expect(error?.code == .messageLargerThanBudget)
            #expect(try restingBytes(of: url, after: log) == before)

            if overwrites {
                // The largest message fits, alone; then smaller ones evict it in turn.
                try log.append(Data(count: largest))
                #expect(try log.messages() == [Data(count: largest)])
                try log.append(Data("after".utf8))
                #expect(try log.messages() == [Data("after".utf8)])
            } else {
                let full = #expect(throws: HoardError.self) { try log.append(Data(count: largest)) }
                #expect(full?.code == .logFull)
            }
        }
    }

    @Test("A budget too small for one record is refused")
    func tinyBudget() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("tiny.log")
            let error = #expect(throws: HoardError.self) { try rawLog(url, maximumBytes: 71, overwrites: true) }
            #expect(error?.code == .invalidConfiguration)
            let log = try rawLog(url, maximumBytes: 72, overwrites: true)
            try log.append(Data())
            try log.append(Data())
            #expect(try log.messages() == [Data()])
        }
    }

    // MARK: Files it must not write

    @Test(
        "A log opened with another budget or flag stays readable, refuses appends, and is never rewritten",
        arguments: [(8192, false), (4096, true), (100, true)])
    func mismatchedConfiguration(maximumBytes: Int, overwrites: Bool) throws {
        try withTemporaryDirectory { directory in
            // Given a log created with 4096 bytes, no overwrite
            let url = directory.appendingPathComponent("mismatch.log")
            let writer = try rawLog(url, maximumBytes: 4096, overwrites: false)
            try writer.append(contentsOf: [Data("a".utf8), Data("b".utf8)])
            let before = try restingBytes(of: url, after: writer)

            // When it is opened with other settings
            let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: overwrites)

            // Then it reads, refuses appends with fileNotWritable, and is not changed
            #expect(!log.isWritable)
            #expect(try log.messages() == [Data("a".utf8), Data("b".utf8)])
            let error = #expect(throws: HoardError.self) { try log.append(Data("c".utf8)) }
            #expect(error?.code == .fileNotWritable)
            #expect(error?.description.contains("created with maximumBytes 4096") == true)
            let recovery = #expect(throws: HoardError.self) { try log.recover() }
            #expect(recovery?.code == .fileNotWritable)
            #expect(try bytes(of: url) == before)
        }
    }

    @Test("A log of an unknown format version is refused the same way, and never rewritten")
    func unknownVersion() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("future.log")
            try rawLog(url, maximumBytes: 4096, overwrites: true).append(Data("x".utf8))
            var file = try bytes(of: url)
            file[8] = 2  // format version 2, with a header checksum that matches it
            let crc = bitwiseCRC32C(file[0..<60])
            for i in 0..<4 { file[60 + i] = UInt8(truncatingIfNeeded: crc >> (8 * i)) }
            try write(file, to: url)

            let log = try rawLog(url, maximumBytes: 4096, overwrites: true)
            #expect(!log.isWritable)
            let append = #expect(throws: HoardError.self) { try log.append(Data("y".utf8)) }
            #expect(append?.code == .unsupportedFormat)
            let read = #expect(throws: HoardError.self) { try log.messages() }
            #expect(read?.code == .unsupportedFormat)
            #expect(read?.description.contains("format version 2") == true)
            #expect(throws: HoardError.self) { try log.recover() }
            #expect(try bytes(of: url) == file)

            // Cut inside its header after the version field, it is still that version's file
            let short = Array(file.prefix(40))
            try write(short, to: url)
            let cut = try rawLog(url, maximumBytes: 4096, overwrites: true)
            #expect(!cut.isWritable)
            let cutRead = #expect(throws: HoardError.self) { try cut.messages() }
            #expect(cutRead?.code == .unsupportedFormat)
            #expect(throws: HoardError.self) { try cut.recover() }
            #expect(try bytes(of: url) == short)
        }
    }

    @Test(
        "A flipped bit in the header's version field is damage, not another version: recover() repairs it",
        arguments: [0, 1, 9, 17, 31])
    func flippedVersionBit(bit: Int) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("flipped.log")
            let messages = (0..<5).map { Data("message \($0)".utf8) }
            for message in messages { try rawLog(url, maximumBytes: 4096, overwrites: true).append(message) }
            var file = try bytes(of: url)
            file[8 + bit / 8] ^= UInt8(1) << (bit % 8)
            try write(file, to: url)

            let log = try rawLog(url, maximumBytes: 4096, overwrites: true)
            let read = #expect(throws: HoardError.self) { try log.messages() }
            #expect(read?.code == .fileCorrupted)
            #expect(read?.description.contains("version field is damaged") == true)
            #expect(try !log.verify().isHeaderIntact)
            try log.recover()
            #expect(try log.messages() == messages)
            #expect(try log.verify().isIntact)
        }
    }

    @Test("A header damaged in its version field and elsewhere is damage, not another version: recover() repairs it")
    func damagedVersionAndMore() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("twice.log")
            let messages = (0..<5).map { Data("message \($0)".utf8) }
            for message in messages { try rawLog(url, maximumBytes: 4096, overwrites: true).append(message) }
            var file = try bytes(of: url)
            file[8] ^= 1 << 6  // version 1 reads as 65
            file[40] ^= 1 << 3  // and the count is damaged too
            try write(file, to: url)

            let log = try rawLog(url, maximumBytes: 4096, overwrites: true)
            let read = #expect(throws: HoardError.self) { try log.messages() }
            #expect(read?.code == .fileCorrupted, "\(String(describing: read))")
            #expect(read?.description.contains("newer Hoard") == false)
            try log.recover()
            #expect(try log.messages() == messages)
            #expect(try log.verify().isIntact)
        }
    }

    @Test("A file that is not a log is refused with fileCorrupted at offset 0 and not changed")
    func notALog() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("notes.txt")
            let text = Array("These are my notes, not a message log. Please do not overwrite them. ".utf8)
            try write(text, to: url)
            let error = #expect(throws: HoardError.self) { try rawLog(url, maximumBytes: 4096, overwrites: true) }
            #expect(error?.code == .fileCorrupted)
            #expect(error?.offset == 0)
            #expect(try bytes(of: url) == text)
            let short = #expect(throws: HoardError.self) {
                try write(Array("short".utf8), to: url)
                return try rawLog(url, maximumBytes: 4096, overwrites: true)
            }
            #expect(short?.code == .fileCorrupted)
            #expect(try bytes(of: url) == Array("short".utf8))
        }
    }

    @Test("An existing empty file becomes a log")
    func emptyFile() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("empty.log")
            #expect(FileManager.default.createFile(atPath: url.path, contents: Data()))
            let log = try rawLog(url, maximumBytes: 4096, overwrites: false)
            try log.append(Data("hello".utf8))
            #expect(try log.messages() == [Data("hello".utf8)])
        }
    }

    @Test(
        "A file shorter than a header without the whole HOARDLOG magic is not a log, and is not changed",
        arguments: ["short", "HOARDLO", "hoardlog, lower case"])
    func shortForeignFile(text: String) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("notes.txt")
            try write(Array(text.utf8), to: url)
            let writer = #expect(throws: HoardError.self) { try rawLog(url, maximumBytes: 4096, overwrites: true) }
            #expect(writer?.code == .fileCorrupted)
            #expect(writer?.offset == 0)
            #expect(writer?.message.contains("not a message log") == true, "\(String(describing: writer))")
            let reader = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            }
            #expect(reader?.message.contains("not a message log") == true, "\(String(describing: reader))")
            #expect(try bytes(of: url) == Array(text.utf8))
        }
    }

    @Test("An empty file (0 bytes) is not a log to a reader, and is not changed; opened to write, it becomes a log")
    func emptyFileToAReader() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("empty.log")
            #expect(FileManager.default.createFile(atPath: url.path, contents: Data()))
            let reader = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            }
            #expect(reader?.code == .fileCorrupted)
            #expect(reader?.message.contains("not a message log") == true, "\(String(describing: reader))")
            let unchanged = try bytes(of: url)
            #expect(unchanged.isEmpty)
            let writer = try rawLog(url, maximumBytes: 4096, overwrites: false)
            #expect(writer.isWritable)
            #expect(try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue).maximumBytes == 4096)
        }
    }

    // MARK: Reading

    @Test("The newest N messages, oldest of them first")
    func newest() throws {
        try withTemporaryDirectory { directory in
            let log = try rawLog(directory.appendingPathComponent("n.log"), maximumBytes: 4096, overwrites: false)
            #expect(try log.newestMessages(3) == [])
            let messages = (0..<10).map { Data("m\($0)".utf8) }
            try log.append(contentsOf: messages)
            #expect(try log.newestMessages(3) == Array(messages[7...]))
            #expect(try log.newestMessages(100) == messages)
            #expect(try log.newestMessages(0) == [])
        }
    }

    @Test("The async sequence returns every message in order, across chunks and a wrap")
    func asyncSequence() async throws {
        try await withTemporaryDirectory { directory in
            // Given a log of about 1 MiB that has wrapped, so reading takes several chunks
            let log = try rawLog(directory.appendingPathComponent("async.log"), maximumBytes: 1 << 20, overwrites: true)
            var model = LogModel(maximumBytes: 1 << 20, overwrites: true)
            for sequence in 0..<2_500 {
                let message = taggedMessage(writer: 0, sequence: sequence, padding: 300 + sequence % 700)
                try log.append(message)
                let accepted = model.append(message)
                #expect(accepted)
            }
            // When it is iterated
            var seen: [Data] = []
            for try await message in log.asyncMessages { seen.append(message) }
            // Then it returns what messages() returns, which the model predicts
            #expect(seen.count == model.messages.count)
            #expect(seen == model.messages)
            #expect(try log.messages() == seen)
        }
    }

    @Test("A batch append is one write of messages in order; without overwrite it is all or nothing")
    func batch() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("batch.log")
            let log = try rawLog(url, maximumBytes: 64 + 10 * 12, overwrites: false)
            try log.append(contentsOf: (0..<6).map { Data(repeating: UInt8($0), count: 4) })
            let before = try restingBytes(of: url, after: log)
            let error = #expect(throws: HoardError.self) {
                try log.append(contentsOf: (0..<5).map { Data(repeating: UInt8($0), count: 4) })
            }
            #expect(error?.code == .logFull)
            #expect(try restingBytes(of: url, after: log) == before)
            try log.append(contentsOf: (6..<10).map { Data(repeating: UInt8($0), count: 4) })
            #expect(try log.messages() == (0..<10).map { Data(repeating: UInt8($0), count: 4) })
        }
    }

    @Test("With overwrite, a batch larger than the log keeps its newest messages that fit")
    func batchLargerThanLog() throws {
        try withTemporaryDirectory { directory in
            let log = try rawLog(directory.appendingPathComponent("big.log"), maximumBytes: 64 + 100, overwrites: true)
            var model = LogModel(maximumBytes: 64 + 100, overwrites: true)
            let batch = (0..<50).map { taggedMessage(writer: 1, sequence: $0, padding: $0 % 5) }
            try log.append(contentsOf: batch)
            for message in batch { _ = model.append(message) }
            #expect(try log.messages() == model.messages)
            #expect(try log.verify().isIntact)
        }
    }

    @Test("A log opened for reading uses the file's settings and never writes")
    func forReading() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("r.log")
            let writer = try rawLog(url, maximumBytes: 777, overwrites: true)
            try writer.append(Data("kept".utf8))
            let before = try restingBytes(of: url, after: writer)
            let reader = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            #expect(reader.maximumBytes == 777)
            #expect(reader.overwritesOldMessages)
            #expect(!reader.isWritable)
            #expect(try reader.messages() == [Data("kept".utf8)])
            let error = #expect(throws: HoardError.self) { try reader.append(Data()) }
            #expect(error?.code == .fileNotWritable)
            #expect(try bytes(of: url) == before)

            let missing = directory.appendingPathComponent("missing.log")
            let notFound = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: missing, codec: .cacheValue)
            }
            #expect(notFound?.code == .ioFailed)
            #expect(!FileManager.default.fileExists(atPath: missing.path))
        }
    }

    @Test("With fsync durability appends and reads work the same")
    func fsyncDurability() throws {
        try withTemporaryDirectory { directory in
            let log = try rawLog(
                directory.appendingPathComponent("sync.log"), maximumBytes: 300, overwrites: true, durability: .fsync)
            var model = LogModel(maximumBytes: 300, overwrites: true)
            for sequence in 0..<40 {
                let message = taggedMessage(writer: 0, sequence: sequence, padding: sequence % 20)
                try log.append(message)
                _ = model.append(message)
            }
            #expect(try log.messages() == model.messages)
        }
    }
}
