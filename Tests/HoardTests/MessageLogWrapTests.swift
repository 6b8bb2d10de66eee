import Foundation
import Hoard
import Testing

@Suite("MessageLog wrap-around", .timeLimit(.minutes(3)))
struct MessageLogWrapTests {
    @Test(
        "Wrapping many times keeps exactly the newest messages the model predicts, in order, never none",
        arguments: [(64 + 1_000, 0...200), (64 + 333, 0...60), (64 + 4_096, 100...900), (64 + 72, 0...20)])
    func manyWraps(maximumBytes: Int, sizes: ClosedRange<Int>) throws {
        try withTemporaryDirectory { directory in
            // Given a small log that overwrites
            let url = directory.appendingPathComponent("ring.log")
            let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: true)
            var model = LogModel(maximumBytes: maximumBytes, overwrites: true)
            var random = SplitMix64(seed: UInt64(maximumBytes))
            var wraps = 0
            var lastOffset = 0

            // When thousands of messages of random sizes are appended
            for sequence in 0..<3_000 {
                let padding = Int(random.next() % UInt64(sizes.count)) + sizes.lowerBound
                let message = taggedMessage(writer: 0, sequence: sequence, padding: max(0, padding - 16))
                try log.append(message)
                let accepted = model.append(message)
                #expect(accepted)
                if let offset = model.records.last?.offset {
                    if offset < lastOffset { wraps += 1 }
                    lastOffset = offset
                }
                // Then after each, the log holds what the model holds
                if sequence % 37 == 0 || sequence > 2_950 {
                    let messages = try log.messages()
                    #expect(messages == model.messages, "after message \(sequence)")
                    #expect(!messages.isEmpty)
                    #expect(messages.last == message)
                }
            }
            #expect(wraps > 10)
            #expect(try log.count == model.messages.count)
            #expect(try Data(contentsOf: url).count <= maximumBytes)
            #expect(try log.verify().isIntact)
        }
    }

    @Test("A log reopened after wrapping has the same messages, and appends continue the ring")
    func reopenAfterWrap() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("ring.log")
            var model = LogModel(maximumBytes: 64 + 500, overwrites: true)
            var sequence = 0
            for round in 0..<5 {
                // Given a log reopened each round
                let log = try rawLog(url, maximumBytes: 64 + 500, overwrites: true)
                #expect(try log.messages() == model.messages, "round \(round)")
                // When it wraps several times more
                for _ in 0..<120 {
                    let message = taggedMessage(writer: round, sequence: sequence, padding: sequence % 50)
                    try log.append(message)
                    _ = model.append(message)
                    sequence += 1
                }
                // Then it matches the model
                #expect(try log.messages() == model.messages)
            }
            let reader = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            #expect(try reader.messages() == model.messages)
        }
    }

    @Test("Messages that divide the budget exactly fill it to the byte, and then replace one at a time")
    func exactFit() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("exact.log")
            let log = try rawLog(url, maximumBytes: 64 + 10 * 32, overwrites: true)
            for sequence in 0..<10 { try log.append(taggedMessage(writer: 0, sequence: sequence, padding: 8)) }
            #expect(try log.count == 10)
            #expect(try Data(contentsOf: url).count == 64 + 320)
            for sequence in 10..<35 {
                try log.append(taggedMessage(writer: 0, sequence: sequence, padding: 8))
                let sequences = try log.messages().compactMap { tag(of: $0)?.sequence }
                #expect(sequences == Array((sequence - 9)...sequence))
            }
        }
    }

    @Test(
        "Messages larger than the 64 KiB read-ahead are evicted like small ones, one by one and in batches",
        arguments: [1, 2])
    func largeMessagesWrap(batchSize: Int) throws {
        try withTemporaryDirectory { directory in
            // Given a log that holds three messages of 70,000 bytes
            let budget = 64 + 3 * (8 + 70_000)
            let log = try rawLog(directory.appendingPathComponent("large.log"), maximumBytes: budget, overwrites: true)
            var model = LogModel(maximumBytes: budget, overwrites: true)
            // When it keeps wrapping, each append evicting one of them
            for round in 0..<4 {
                let batch = (0..<batchSize).map {
                    taggedMessage(writer: 3, sequence: round * batchSize + $0, padding: 70_000 - 16)
                }
                if batchSize == 1 { try log.append(batch[0]) } else { try log.append(contentsOf: batch) }
                for message in batch {
                    let accepted = model.append(message)
                    #expect(accepted)
                }
                // Then it holds the newest three
                #expect(try log.messages() == model.messages, "round \(round)")
            }
            #expect(try log.verify().isIntact)
        }
    }

    @Test("A ring whose lap counter overflows (UInt32.max, then 1) reads, verifies, settles and recovers as before")
    func lapOverflow() async throws {
        try await withTemporaryDirectory { directory in
            // Given an empty log whose lap field says UInt32.max - 1 (its header rewritten,
            // checksum included), so that it fills in lap UInt32.max and wraps to lap 1
            let url = directory.appendingPathComponent("lap.log")
            let copy = directory.appendingPathComponent("crash.log")
            let budget = 64 + 10 * 24
            do { _ = try rawLog(url, maximumBytes: budget, overwrites: true) }
            var file = try bytes(of: url)
            withUnsafeBytes(of: (UInt32.max - 1).littleEndian) { file.replaceSubrange(56..<60, with: $0) }
            withUnsafeBytes(of: bitwiseCRC32C(file[0..<60]).littleEndian) { file.replaceSubrange(60..<64, with: $0) }
            try write(file, to: url)
            let log = try rawLog(url, maximumBytes: budget, overwrites: true)
            var model = LogModel(maximumBytes: budget, overwrites: true)
            // When it fills, wraps into lap 1, and wraps again into lap 2
            for sequence in 0..<25 {
                let message = taggedMessage(writer: 2, sequence: sequence, padding: 0)
                try log.append(message)
                let accepted = model.append(message)
                #expect(accepted)
                // Then a crash image reads back what was appended (settling the lease)
                try write(try crashImage(of: url), to: copy)
                let reader = try MessageLog<Data>(forReadingFrom: copy, codec: .cacheValue)
                #expect(try reader.messages() == model.messages, "crash after message \(sequence)")
                // And so does the log, all at once and as an async sequence, intact
                #expect(try log.messages() == model.messages, "after message \(sequence)")
                var seen: [Data] = []
                for try await message in log.asyncMessages { seen.append(message) }
                #expect(seen == model.messages, "after message \(sequence)")
                #expect(try log.verify().isIntact, "after message \(sequence)")
                // And recover() finds every message when the header is damaged
                if sequence == 14 {
                    var damaged = try restingBytes(of: url, after: log)
                    damaged[30] ^= 0x40
                    try write(damaged, to: copy)
                    let recovering = try rawLog(copy, maximumBytes: budget, overwrites: true)
                    try recovering.recover()
                    #expect(try recovering.messages() == model.messages)
                }
            }
        }
    }

    @Test("Batches wrap like the same messages appended one by one", arguments: [1, 3, 17, 60])
    func batchesMatchSingles(batchSize: Int) throws {
        try withTemporaryDirectory { directory in
            let log = try rawLog(directory.appendingPathComponent("b.log"), maximumBytes: 64 + 700, overwrites: true)
            var model = LogModel(maximumBytes: 64 + 700, overwrites: true)
            var random = SplitMix64(seed: UInt64(batchSize))
            var sequence = 0
            for _ in 0..<(1_200 / batchSize) {
                var batch: [Data] = []
                for _ in 0..<batchSize {
                    batch.append(taggedMessage(writer: 2, sequence: sequence, padding: Int(random.next() % 90)))
                    sequence += 1
                }
                try log.append(contentsOf: batch)
                for message in batch { _ = model.append(message) }
                #expect(try log.messages() == model.messages)
            }
            #expect(try log.verify().isIntact)
        }
    }

    @Test("Reading while another instance keeps wrapping the log never sees a mixed state")
    func readerSeesConsistentStates() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("shared.log")
            let writer = try rawLog(url, maximumBytes: 64 + 900, overwrites: true)
            let reader = try rawLog(url, maximumBytes: 64 + 900, overwrites: true)
            var model = LogModel(maximumBytes: 64 + 900, overwrites: true)
            for sequence in 0..<600 {
                let message = taggedMessage(writer: 0, sequence: sequence, padding: (sequence * 13) % 70)
                try writer.append(message)
                _ = model.append(message)
                #expect(try reader.messages() == model.messages)
                #expect(try reader.newestMessages(1) == [message])
            }
        }
    }
}
