import Foundation
import Hoard
import Testing

/// Several tasks, and several instances on one file (each with its own file
/// descriptor, so their `flock` locks exclude each other as two processes' would).
///
/// `flock` locks belong to the open file description, so two instances in one process
/// exercise the same locking as two processes; ``MessageLogProcessTests`` runs real
/// child processes too.
@Suite("MessageLog under concurrency", .timeLimit(.minutes(2)))
struct MessageLogConcurrencyTests {
    /// Checks that each writer's messages are in the order it appended them, with no
    /// message that was never appended, and returns how many each writer has.
    static func perWriterOrder(_ messages: [Data], writers: Int) -> (counts: [Int], problems: [String]) {
        var last = [Int](repeating: -1, count: writers)
        var counts = [Int](repeating: 0, count: writers)
        var problems: [String] = []
        for message in messages {
            guard let (writer, sequence) = tag(of: message), writer < writers else {
                problems.append("a message that was never appended")
                continue
            }
            if sequence <= last[writer] { problems.append("writer \(writer): \(sequence) after \(last[writer])") }
            last[writer] = sequence
            counts[writer] += 1
        }
        return (counts, problems)
    }

    @Test("Two tasks appending to one instance at once lose nothing")
    func twoTasksOneInstance() async throws {
        try await withTemporaryDirectory { directory in
            // Given one log, large enough for everything
            let log = try rawLog(
                directory.appendingPathComponent("tasks.log"), maximumBytes: 4 << 20, overwrites: false)
            // When two tasks append 3,000 messages each at once
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<2 {
                    group.addTask {
                        for sequence in 0..<3_000 {
                            try log.append(taggedMessage(writer: writer, sequence: sequence, padding: sequence % 40))
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Then all 6,000 are there, each writer's in order
            let messages = try log.messages()
            let (counts, problems) = Self.perWriterOrder(messages, writers: 2)
            #expect(counts == [3_000, 3_000])
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(try log.verify().isIntact)
        }
    }

    @Test(
        "Two instances on one file, appending at once, see each other's appends and never interleave a record",
        arguments: [false, true])
    func twoInstancesOneFile(batched: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.log")
            let logs = try (0..<2).map { _ in try rawLog(url, maximumBytes: 4 << 20, overwrites: false) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<2 {
                    let log = logs[writer]
                    group.addTask {
                        if batched {
                            for start in stride(from: 0, to: 3_000, by: 25) {
                                try log.append(
                                    contentsOf: (start..<start + 25).map {
                                        taggedMessage(writer: writer, sequence: $0, padding: $0 % 90)
                                    })
                            }
                        } else {
                            for sequence in 0..<3_000 {
                                try log.append(
                                    taggedMessage(writer: writer, sequence: sequence, padding: sequence % 90))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for log in logs {
                let (counts, problems) = Self.perWriterOrder(try log.messages(), writers: 2)
                #expect(counts == [3_000, 3_000])
                #expect(problems.isEmpty, "\(problems.prefix(5))")
                #expect(try log.verify().isIntact)
            }
        }
    }

    @Test("Writers on two instances of a small ring, with readers on a third: every read is a consistent log")
    func ringWithReaders() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("ring.log")
            let writers = try (0..<2).map { _ in try rawLog(url, maximumBytes: 64 + 3_000, overwrites: true) }
            let reader = try rawLog(url, maximumBytes: 64 + 3_000, overwrites: true)
            let problems = try await withThrowingTaskGroup(of: [String].self) { group in
                for writer in 0..<2 {
                    let log = writers[writer]
                    group.addTask {
                        for sequence in 0..<2_000 {
                            try log.append(taggedMessage(writer: writer, sequence: sequence, padding: sequence % 60))
                        }
                        return []
                    }
                }
                group.addTask {
                    var problems: [String] = []
                    for _ in 0..<150 {
                        let messages = try reader.messages()
                        problems += Self.perWriterOrder(messages, writers: 2).problems
                        var streamed: [Data] = []
                        for try await message in reader.asyncMessages { streamed.append(message) }
                        problems += Self.perWriterOrder(streamed, writers: 2).problems
                        if try reader.count == 0 { problems.append("empty after a wrap") }
                    }
                    return problems
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            let final = try reader.messages()
            #expect(Self.perWriterOrder(final, writers: 2).problems.isEmpty)
            #expect(try reader.verify().isIntact)
            // The last message each writer appended survives: it is among the newest.
            let last = Set(final.suffix(2).compactMap { tag(of: $0) }.map { "\($0.writer):\($0.sequence)" })
            #expect(last.contains("0:1999") || last.contains("1:1999"))
        }
    }

    @Test("Many tasks over several instances of one ring keep the log intact")
    func manyTasks() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("many.log")
            let logs = try (0..<3).map { _ in try rawLog(url, maximumBytes: 64 + 5_000, overwrites: true) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    let log = logs[writer % 3]
                    group.addTask {
                        for sequence in 0..<400 {
                            let message = taggedMessage(
                                writer: writer, sequence: sequence, padding: (writer * sequence) % 120)
                            if sequence % 10 == 9 {
                                try log.append(contentsOf: [message])
                            } else {
                                try log.append(message)
                            }
                            if sequence % 50 == 0 { _ = try log.newestMessages(5) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let messages = try logs[0].messages()
            #expect(!messages.isEmpty)
            #expect(Self.perWriterOrder(messages, writers: 8).problems.isEmpty)
            #expect(try logs[2].verify().isIntact)
        }
    }
}
