import Foundation
import Hoard
import Testing

@Suite("MessageLog: reading past messages of an older type", .timeLimit(.minutes(3)))
struct MessageLogEvolutionTests {
    /// The message type as first shipped.
    struct EventV1: Codable, Sendable, Equatable {
        var name: String
    }

    /// The same type with its field renamed: an `EventV1` does not decode as it.
    struct EventV2: Codable, Sendable, Equatable {
        var title: String
    }

    /// Writes v1 "a", v2 "b", v1 "c", v2 "d" to one file.
    static func mixedLog(_ url: URL) throws {
        let old = try MessageLog<EventV1>(fileURL: url, maximumBytes: 4_096, overwritesOldMessages: false)
        let new = try MessageLog<EventV2>(fileURL: url, maximumBytes: 4_096, overwritesOldMessages: false)
        try old.append(EventV1(name: "a"))
        try new.append(EventV2(title: "b"))
        try old.append(EventV1(name: "c"))
        try new.append(EventV2(title: "d"))
    }

    @Test("messages() throws for one undecodable message; skipping returns the rest in order and reports each")
    func skipAndReport() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("events.log")
            try Self.mixedLog(url)
            let log = try MessageLog<EventV2>(fileURL: url, maximumBytes: 4_096, overwritesOldMessages: false)

            #expect(throws: HoardError.self) { try log.messages() }

            var skipped: [MessageLog<EventV2>.UndecodableMessage] = []
            let read = try log.messages { skipped.append($0) }
            #expect(read == [EventV2(title: "b"), EventV2(title: "d")])
            #expect(skipped.map(\.position) == [0, 2])
            #expect(skipped.allSatisfy { $0.error.code == .decodingFailed })
            // The bytes are the old message's, to decode with the old type.
            let recovered = try skipped.map { try JSONDecoder().decode(EventV1.self, from: $0.data) }
            #expect(recovered == [EventV1(name: "a"), EventV1(name: "c")])

            // The newest three: v2 "b", v1 "c", v2 "d".
            var newestSkipped: [Int] = []
            #expect(
                try log.newestMessages(3) { newestSkipped.append($0.position) } == [
                    EventV2(title: "b"), EventV2(title: "d"),
                ])
            #expect(newestSkipped == [1])
            #expect(try log.newestMessages(0) { _ in Issue.record("nothing is read") }.isEmpty)
        }
    }

    @Test("Skipping forgives decoding only: a damaged record still throws")
    func damageStillThrows() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("events.log")
            try Self.mixedLog(url)
            // Flip a byte of the first message's JSON: its checksum no longer matches.
            var bytes = try Data(contentsOf: url)
            let range = try #require(bytes.range(of: Data("\"a\"".utf8)))
            bytes[range.lowerBound + 1] = UInt8(ascii: "e")
            try bytes.write(to: url)
            let log = try MessageLog<EventV2>(forReadingFrom: url)
            #expect {
                _ = try log.messages { _ in }
            } throws: { error in
                (error as? HoardError)?.code == .fileCorrupted
            }
        }
    }
}
