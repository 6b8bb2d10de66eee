import Foundation
import Hoard
import Testing

/// The append lease: an instance holds the file lock across appends and writes the
/// header only at checkpoints, so the file read while it appends is exactly what a
/// crash at that moment would leave. These tests copy the file after every append (a
/// crash image) and check that a new instance reads every acknowledged message from it.
@Suite("MessageLog append lease", .timeLimit(.minutes(3)))
struct MessageLogLeaseTests {
    /// Bytes 12..<16 of the header: bit 0 overwrite, bit 1 the lease flag.
    static func flags(_ file: [UInt8]) -> UInt32 {
        UInt32(file[12]) | UInt32(file[13]) << 8 | UInt32(file[14]) << 16 | UInt32(file[15]) << 24
    }

    @Test(
        "A crash image taken after any append holds exactly the acknowledged messages",
        arguments: [
            (64 + 72, 0...20, true), (64 + 333, 0...60, true), (64 + 1_000, 0...200, true),
            (64 + 4_096, 100...900, true), (64 + 20_000, 0...100, true), (64 + 60_000, 0...100, false),
        ])
    func crashImagesAreExact(maximumBytes: Int, sizes: ClosedRange<Int>, overwrites: Bool) throws {
        try withTemporaryDirectory { directory in
            // Given an instance that keeps appending (and so holds the lease)
            let url = directory.appendingPathComponent("log")
            let copy = directory.appendingPathComponent("crash.log")
            let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: overwrites)
            var model = LogModel(maximumBytes: maximumBytes, overwrites: overwrites)
            var random = SplitMix64(seed: UInt64(maximumBytes))
            for sequence in 0..<500 {
                let padding = Int(random.next() % UInt64(sizes.count)) + sizes.lowerBound
                let message = taggedMessage(writer: 0, sequence: sequence, padding: max(0, padding - 16))
                guard model.append(message) else {
                    #expect(throws: HoardError.self) { try log.append(message) }
                    break
                }
                try log.append(message)

                // When the process dies now (the file as it is, copied; never half of
                // a header the lease timer is writing, which no crash leaves)
                try write(try crashImage(of: url), to: copy)

                // Then a reader and a writer opening the copy see exactly the model's messages
                let reader = try MessageLog<Data>(forReadingFrom: copy, codec: .cacheValue)
                #expect(try reader.messages() == model.messages, "after message \(sequence)")
                let writer = try rawLog(copy, maximumBytes: maximumBytes, overwrites: overwrites)
                #expect(try writer.messages() == model.messages, "after message \(sequence)")
                #expect(try writer.verify().isIntact, "after message \(sequence)")
            }
        }
    }

    @Test("After a crash image is settled, appends go on and a second crash leaves no ghost of the first")
    func appendsAfterACrashImage() throws {
        try withTemporaryDirectory { directory in
            let budget = 64 + 2_000
            let url = directory.appendingPathComponent("log")
            var model = LogModel(maximumBytes: budget, overwrites: true)
            var random = SplitMix64(seed: 42)
            var sequence = 0
            for round in 0..<20 {
                // Given a crash image of an instance in the middle of appending, whose last
                // record may be torn (the file cut inside it)
                let crashed = try rawLog(url, maximumBytes: budget, overwrites: true)
                let count = Int(random.next() % 40) + 1
                for _ in 0..<count {
                    let message = taggedMessage(writer: round, sequence: sequence, padding: Int(random.next() % 50))
                    try crashed.append(message)
                    _ = model.append(message)
                    sequence += 1
                }
                var image = try crashImage(of: url)
                let last = try #require(model.records.last)
                let tears = random.next() % 2 == 0 && last.offset + last.size == image.count
                if tears {
                    image.removeLast(Int(random.next() % UInt64(last.size - 1)) + 1)
                    model.dropLast()
                }
                let next = directory.appendingPathComponent("round-\(round).log")
                try write(image, to: next)

                // When it is opened for writing and appended to
                let log = try rawLog(next, maximumBytes: budget, overwrites: true)
                #expect(try log.messages() == model.messages, "round \(round), torn: \(tears)")
                let message = taggedMessage(writer: 99, sequence: sequence, padding: 3)
                try log.append(message)
                _ = model.append(message)
                sequence += 1

                // Then its own crash image (nothing written since but that one record)
                // holds exactly the model's messages: nothing of the dropped tail returns
                let again = directory.appendingPathComponent("again-\(round).log")
                try write(try crashImage(of: next), to: again)
                #expect(
                    try rawLog(again, maximumBytes: budget, overwrites: true).messages() == model.messages,
                    "round \(round)")
                try FileManager.default.removeItem(at: url)
                try write(try bytes(of: again), to: url)
            }
        }
    }

    @Test(
        "A crash in a wrapping append that drops ahead every record before its wrap point keeps them (in a child: RLIMIT_FSIZE stops it)",
        arguments: [false, true])
    func crashInWrappingAppendKeepsRecordsBeforeTheWrap(batch: Bool) async throws {
        try await withTemporaryDirectory { directory in
            // Given a log of 64 + 1,000 bytes holding a (64..<672) and b (672..<980), and an
            // append of c that wraps: it evicts a, goes to 64 after a wrap marker at 980,
            // and its checkpoint drops b ahead (a sixteenth of the log is 62 bytes)
            let url = directory.appendingPathComponent("log")
            let a = taggedMessage(writer: 1, sequence: 0, padding: 600 - 16)
            let b = taggedMessage(writer: 1, sequence: 1, padding: 300 - 16)
            // When the append dies at its first write past the end of the file, the
            // marker's (the child's file size limit makes that write fail, and an append
            // whose write fails leaves the file as a crash there leaves it)
            let (status, lines) = try await DiskTest.onThread {
                try DiskTest.runChild(["log-wrap-fsize", url.path, "\(batch)"])
            }
            #expect(status == 0, "\(lines)")
            #expect(lines == ["thrown storageFull", "done"])
            // Then b, acknowledged and not overwritten, is still there, and c is not (nor
            // is a after the batch's checkpoint, which evicts it for c)
            let expected = batch ? [b] : [a, b]
            let reader = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            #expect(try reader.messages() == expected)
            let writer = try rawLog(url, maximumBytes: 64 + 1_000, overwrites: true)
            #expect(try writer.messages() == expected)
            #expect(try writer.verify().isIntact)
        }
    }

    @Test(
        "A crash after a checkpoint that could drop ahead a record over 1 MiB keeps it (in a child: RLIMIT_FSIZE stops it)"
    )
    func crashAfterCheckpointKeepsLargeRecordsAhead() async throws {
        try await withTemporaryDirectory { directory in
            // Given a log that holds exactly three messages of 1.5 MB, and an append of a
            // fourth that wraps to 64 (no room for a marker) and evicts the first: its
            // checkpoint has no free byte after the record and would drop the second
            // ahead, which starts 1.5 MB before the third, beyond settling's 1 MiB reach
            let url = directory.appendingPathComponent("log")
            let size = 1_500_000
            let second = taggedMessage(writer: 1, sequence: 1, padding: size - 16)
            let third = taggedMessage(writer: 1, sequence: 2, padding: size - 16)
            // When the append dies at its record, after its checkpoint (the child's file
            // size limit of 64 bytes lets the header write through and fails the record)
            let (status, lines) = try await DiskTest.onThread {
                try DiskTest.runChild(["log-ahead-fsize", url.path])
            }
            #expect(status == 0, "\(lines)")
            #expect(lines == ["thrown storageFull", "done"])
            // Then the second and third, acknowledged and not overwritten, are there (the
            // first was evicted for the fourth, which is torn)
            let reader = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            #expect(try reader.messages() == [second, third])
            let writer = try rawLog(url, maximumBytes: 64 + 3 * (8 + size), overwrites: true)
            #expect(try writer.messages() == [second, third])
            #expect(try writer.verify().isIntact)
        }
    }

    @Test(
        "The lease flag is set in the file while an instance appends, and cleared with an exact header when it is gone")
    func leaseFlagOnDisk() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("log")
            do {
                let log = try rawLog(url, maximumBytes: 4_096, overwrites: true)
                try log.append(Data("one".utf8))
                // While it holds the lease: bit 1 set
                #expect(Self.flags(try bytes(of: url)) == 0b11)
                // Any other operation lets it go first
                #expect(try log.count == 1)
                #expect(Self.flags(try bytes(of: url)) == 0b01)
                try log.append(Data("two".utf8))
                #expect(Self.flags(try bytes(of: url)) == 0b11)
            }
            // Once the instance is gone: cleared, and the header counts both records
            let file = try bytes(of: url)
            #expect(Self.flags(file) == 0b01)
            let count = file[40..<48].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            #expect(count == 2)
        }
    }

    @Test("Another instance waiting on the lock gets it when the lease's time is up, and sees every append")
    func otherInstanceGetsTheLock() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("log")
            let writer = try rawLog(url, maximumBytes: 1 << 16, overwrites: false)
            let reader = try rawLog(url, maximumBytes: 1 << 16, overwrites: false)
            for index in 0..<50 {
                // Given the writer holding the lease after an append
                try writer.append(Data("message \(index)".utf8))
                // When another instance reads (on its own thread: it waits on flock)
                let messages = try await withCheckedThrowingContinuation { continuation in
                    Thread.detachNewThread {
                        continuation.resume(with: Result { try reader.messages() })
                    }
                }
                // Then it gets the lock without the writer doing anything, and sees the append
                #expect(messages.count == index + 1)
                #expect(messages.last == Data("message \(index)".utf8))
            }
        }
    }
}
