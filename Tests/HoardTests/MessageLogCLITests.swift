import Foundation
import Hoard
import Testing

/// `hoard log dump|tail|verify`, run as the built executable on real log files.
@Suite("MessageLog through the hoard command-line tool", .timeLimit(.minutes(3)))
struct MessageLogCLITests {
    struct Event: Codable, Sendable, Equatable {
        var name: String
        var number: Int
    }

    /// Runs `hoard` with `arguments` on its own thread.
    static func hoard(_ arguments: String...) async throws -> (status: Int32, output: String, errors: String) {
        try await DiskTest.onThread { try DiskTest.run(DiskTest.executable(named: "hoard"), arguments) }
    }

    static let events = (1...5).map { Event(name: "event \($0)", number: $0) }
    static let binary = Data([0, 1, 2, 255])

    /// A log of five JSON events, then one message of raw bytes that is not JSON.
    static func makeLog(_ url: URL) throws {
        let log = try MessageLog<Event>(fileURL: url, maximumBytes: 64 << 10, overwritesOldMessages: true)
        for event in events { try log.append(event) }
        let raw = try rawLog(url, maximumBytes: 64 << 10, overwrites: true)
        try raw.append(binary)
    }

    /// The offsets of the records of an unwrapped log, walked from offset 64.
    static func recordOffsets(_ file: [UInt8], count: Int) -> [Int] {
        var offsets: [Int] = []
        var position = 64
        for _ in 0..<count {
            offsets.append(position)
            let length = file[position..<position + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
                .littleEndian
            position += 8 + Int(length)
        }
        return offsets
    }

    @Test("dump prints every message as a JSON line, oldest first; tail the newest N")
    func dumpAndTail() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("events.log")
            try Self.makeLog(url)

            let dump = try await Self.hoard("log", "dump", url.path)
            #expect(dump.status == 0, "\(dump.errors)")
            let lines = dump.output.split(separator: "\n").map(String.init)
            #expect(lines.count == 6)
            let decoded = try lines.prefix(5).map { try JSONDecoder().decode(Event.self, from: Data($0.utf8)) }
            #expect(decoded == Self.events)
            // Bytes that are not JSON print as a JSON string of their base64.
            #expect(lines.last == "\"\(Self.binary.base64EncodedString())\"")

            let tail = try await Self.hoard("log", "tail", url.path, "-n", "2")
            #expect(tail.status == 0)
            let newest = tail.output.split(separator: "\n").map(String.init)
            #expect(newest == Array(lines.suffix(2)))
            let all = try await Self.hoard("log", "tail", url.path, "-n", "50")
            #expect(all.output == dump.output)
            let negative = try await Self.hoard("log", "tail", url.path, "-n", "-1")
            #expect(negative.status != 0)
        }
    }

    @Test("verify: exit 0 and the count on an intact log; exit 1 and the damaged offset after a flipped byte")
    func verify() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("events.log")
            try Self.makeLog(url)

            let clean = try await Self.hoard("log", "verify", url.path)
            #expect(clean.status == 0, "\(clean.errors)")
            #expect(clean.output.hasPrefix("intact: 6 messages"))

            // Damage the third record's payload
            var file = try bytes(of: url)
            let third = Self.recordOffsets(file, count: 6)[2]
            file[third + 10] ^= 0x20
            try write(file, to: url)

            let damaged = try await Self.hoard("log", "verify", url.path)
            #expect(damaged.status == 1)
            #expect(damaged.output.contains("damaged: 5 intact messages"), "\(damaged.output)")
            #expect(damaged.output.contains("damaged bytes \(third)..<"), "\(damaged.output)")
            // Reading it reports the same offset, and changes nothing.
            let dump = try await Self.hoard("log", "dump", url.path)
            #expect(dump.status != 0)
            #expect(dump.errors.contains("at byte offset \(third)"), "\(dump.errors)")
            #expect(try bytes(of: url) == file)
        }
    }

    @Test("verify reports a torn tail, which dump skips; a file that is not a log is refused")
    func tornAndForeign() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("events.log")
            try Self.makeLog(url)
            var file = try bytes(of: url)
            let last = Self.recordOffsets(file, count: 6)[5]
            file.removeLast(file.count - (last + 5))  // a crash in the middle of the last append
            try write(file, to: url)

            let torn = try await Self.hoard("log", "verify", url.path)
            #expect(torn.status == 1)
            #expect(torn.output.contains("torn last append: 5 intact messages"), "\(torn.output)")
            #expect(torn.output.contains("torn bytes \(last)..<"))
            let dump = try await Self.hoard("log", "dump", url.path)
            #expect(dump.status == 0)
            #expect(dump.output.split(separator: "\n").count == 5)

            let foreign = directory.appendingPathComponent("notes.txt")
            try write(Array("just some text, long enough to fill a header of sixty-four bytes!".utf8), to: foreign)
            for command in ["dump", "tail", "verify"] {
                let result = try await Self.hoard("log", command, foreign.path)
                #expect(result.status != 0)
                #expect(result.errors.contains("is not a message log"), "\(command): \(result.errors)")
            }
            let missing = try await Self.hoard("log", "dump", directory.appendingPathComponent("none.log").path)
            #expect(missing.status != 0)
            #expect(missing.errors.contains("there is no log file at this path"))
        }
    }

    @Test("verify --json: the documented object, intact, then with the damaged range after a flipped byte")
    func verifyJSON() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("events.log")
            try Self.makeLog(url)

            let clean = try await Self.hoard("log", "verify", url.path, "--json")
            #expect(clean.status == 0, "\(clean.errors)")
            let intact = try DiskStoreSuites.DiskStoreCLITests.object(clean.output)
            #expect(intact["file"] as? String == url.standardizedFileURL.path)
            #expect(intact["intact"] as? Bool == true)
            #expect(intact["headerIntact"] as? Bool == true)
            #expect(intact["maximumBytes"] as? Int == 64 << 10)
            #expect(intact["overwritesOldMessages"] as? Bool == true)
            #expect(intact["headerMessageCount"] as? Int == 6)
            #expect(intact["intactMessageCount"] as? Int == 6)
            #expect((intact["damagedRanges"] as? [Any])?.isEmpty == true)

            var file = try bytes(of: url)
            let third = Self.recordOffsets(file, count: 6)[2]
            file[third + 10] ^= 0x20
            try write(file, to: url)

            let damaged = try await Self.hoard("log", "verify", url.path, "--json")
            #expect(damaged.status == 1)
            let report = try DiskStoreSuites.DiskStoreCLITests.object(damaged.output)
            #expect(report["intact"] as? Bool == false)
            #expect(report["intactMessageCount"] as? Int == 5)
            let ranges = try #require(report["damagedRanges"] as? [[String: Int]])
            #expect(ranges.first?["start"] == third)
            #expect((ranges.first?["end"] ?? 0) > third)
        }
    }

    @Test("A log can be named instead of given by path: <name>.log in the default logs folder")
    func logByName() async throws {
        try await withTemporaryDirectory { directory in
            // Given a log in the default location of a cache folder
            let logs = directory.appendingPathComponent("caches/hoard-logs", isDirectory: true)
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            try Self.makeLog(logs.appendingPathComponent("events.log"))
            let environment = ["XDG_CACHE_HOME": directory.appendingPathComponent("caches").path]
            let hoard = try DiskTest.executable(named: "hoard")

            // When it is named, with and without the extension
            let dump = try await DiskTest.onThread {
                try DiskTest.run(hoard, ["log", "dump", "events"], environment: environment)
            }
            let verify = try await DiskTest.onThread {
                try DiskTest.run(hoard, ["log", "verify", "events.log", "--json"], environment: environment)
            }
            let missing = try await DiskTest.onThread {
                try DiskTest.run(hoard, ["log", "dump", "other"], environment: environment)
            }

            // Then the name resolves to that file, and stderr says so
            #expect(dump.status == 0, "\(dump.errors)")
            #expect(dump.output.split(separator: "\n").count == 6)
            #expect(dump.errors.contains("log \"events\": \(logs.path)/events.log"))
            #expect(verify.status == 0, "\(verify.errors)")
            let report = try DiskStoreSuites.DiskStoreCLITests.object(verify.output)
            #expect(report["file"] as? String == logs.appendingPathComponent("events.log").standardizedFileURL.path)
            #expect(missing.status != 0)
            #expect(missing.errors.contains("there is no log file at this path"))
        }
    }

    @Test("dump, tail and verify refuse a FIFO without opening it (opening one for reading waits for a writer)")
    func fifo() async throws {
        try await withTemporaryDirectory { directory in
            // Given a FIFO where a log is expected, with bytes waiting in it: held open
            // for writing by this test, so that a command that opened it would not
            // wait but read those bytes (and fail some other way)
            let path = directory.appendingPathComponent("events.log").path
            #expect(mkfifo(path, 0o600) == 0)
            let writer = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            try #require(writer >= 0)
            defer { close(writer) }
            let garbage = [UInt8](repeating: 0x41, count: 4_096)
            #expect(garbage.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == garbage.count)

            for command in ["dump", "tail", "verify"] {
                // When a log command is given it
                let result = try await Self.hoard("log", command, path)

                // Then it refuses it, saying what it is, and has read nothing from it
                #expect(result.status != 0, "\(command)")
                #expect(
                    result.errors.contains("is a FIFO (named pipe), not a message log file; nothing was opened"),
                    "\(command): \(result.errors)")
            }
            var left = [UInt8](repeating: 0, count: 8_192)
            #expect(left.withUnsafeMutableBytes { read(writer, $0.baseAddress, $0.count) } == garbage.count)
        }
    }
}
