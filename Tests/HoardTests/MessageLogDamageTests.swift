import Foundation
import Hoard
import Testing

@Suite("MessageLog damage and recovery", .timeLimit(.minutes(2)))
struct MessageLogDamageTests {
    /// A log built by appending `count` tagged messages, with the model that predicts
    /// where each record is.
    struct Fixture {
        var model: LogModel
        var file: [UInt8]
        var messages: [Data] { model.messages }
    }

    static func fixture(
        at url: URL, maximumBytes: Int, overwrites: Bool, count: Int, seed: UInt64
    ) throws -> Fixture {
        var model = LogModel(maximumBytes: maximumBytes, overwrites: overwrites)
        do {
            // The instance is gone at the end of this scope: its append lease is let go
            // and the header counts every record (a log at rest, not a crash image).
            let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: overwrites)
            var random = SplitMix64(seed: seed)
            for sequence in 0..<count {
                let message = taggedMessage(writer: 0, sequence: sequence, padding: Int(random.next() % 60))
                try log.append(message)
                _ = model.append(message)
            }
        }
        return Fixture(model: model, file: try bytes(of: url))
    }

    // MARK: Torn tails

    @Test(
        "A tail cut at every byte offset of the last record is dropped on open, and appends go on",
        arguments: [false, true])
    func tornTailEveryOffset(overwrites: Bool) throws {
        try withTemporaryDirectory { directory in
            // Given a log whose last record ends the file
            let source = directory.appendingPathComponent("source.log")
            let fixture = try Self.fixture(at: source, maximumBytes: 4096, overwrites: overwrites, count: 6, seed: 1)
            let last = try #require(fixture.model.records.last)
            #expect(last.offset + last.size == fixture.file.count)
            let kept = Array(fixture.messages.dropLast())

            for cut in last.offset..<fixture.file.count {
                // When the file is cut inside the last record (a crash mid-append)
                let url = directory.appendingPathComponent("cut-\(cut).log")
                try write(Array(fixture.file[0..<cut]), to: url)

                // Then a reader skips it and reports it torn
                let reader = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
                #expect(try reader.messages() == kept, "cut at \(cut)")
                let report = try reader.verify()
                #expect(report.tornAppendRanges == [last.offset..<(last.offset + last.size)], "cut at \(cut)")
                #expect(report.intactMessageCount == kept.count)

                // And opening it for writing drops it: intact again, and appends continue
                let log = try rawLog(url, maximumBytes: 4096, overwrites: overwrites)
                #expect(try log.messages() == kept, "cut at \(cut)")
                #expect(try log.verify().isIntact, "cut at \(cut)")
                try log.append(Data("after the crash".utf8))
                #expect(try log.messages() == kept + [Data("after the crash".utf8)], "cut at \(cut)")
            }
        }
    }

    /// Appends `message` to a copy of a log, and returns the files before and after
    /// with the range its record took.
    static func appendOne(
        _ message: Data, to url: URL, maximumBytes: Int, model: inout LogModel
    ) throws -> (before: [UInt8], after: [UInt8], record: Range<Int>) {
        let before = try bytes(of: url)
        try rawLog(url, maximumBytes: maximumBytes, overwrites: true).append(message)
        _ = model.append(message)
        let record = try #require(model.records.last)
        return (before, try bytes(of: url), record.offset..<(record.offset + record.size))
    }

    @Test("A crash between an append's header and its record, at every byte, in a wrapped log, drops that record only")
    func tornRecordInWrappedLog() throws {
        try withTemporaryDirectory { directory in
            // Given a log that has wrapped many times
            let url = directory.appendingPathComponent("ring.log")
            var fixture = try Self.fixture(at: url, maximumBytes: 64 + 700, overwrites: true, count: 90, seed: 2)
            var checked = 0
            for step in 0..<12 {
                // When one more append wrote its header but only part of its record (the
                // rest of the slot still holds what was there before)
                let message = taggedMessage(writer: 1, sequence: step, padding: 10 + step * 3)
                let (before, after, record) = try Self.appendOne(
                    message, to: url, maximumBytes: 64 + 700, model: &fixture.model)
                let expected = fixture.messages
                for cut in record {
                    var torn = after
                    for i in cut..<record.upperBound { torn[i] = i < before.count ? before[i] : 0 }
                    if cut >= before.count { torn.removeSubrange(max(cut, before.count)..<record.upperBound) }
                    let copy = directory.appendingPathComponent("torn.log")
                    try write(torn, to: copy)
                    let whole = torn.count >= record.upperBound && Array(torn[record]) == Array(after[record])

                    // Then opening drops exactly that record, unless its bytes happen to be whole
                    let log = try rawLog(copy, maximumBytes: 64 + 700, overwrites: true)
                    let messages = try log.messages()
                    #expect(messages == (whole ? expected : Array(expected.dropLast())), "step \(step), cut \(cut)")
                    #expect(try log.verify().isIntact)
                    checked += 1
                }
                #expect(try rawLog(url, maximumBytes: 64 + 700, overwrites: true).messages() == expected)
            }
            #expect(checked > 200)
        }
    }

    @Test("A crash in the middle of a batch keeps the records written before it, drops the rest")
    func tornBatch() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("batch.log")
            var fixture = try Self.fixture(at: url, maximumBytes: 64 + 900, overwrites: true, count: 60, seed: 3)
            let before = try bytes(of: url)
            let batch = (0..<5).map { taggedMessage(writer: 2, sequence: $0, padding: 20) }
            try rawLog(url, maximumBytes: 64 + 900, overwrites: true).append(contentsOf: batch)
            for message in batch { _ = fixture.model.append(message) }
            let after = try bytes(of: url)
            let records = fixture.model.records.suffix(5).map { $0.offset..<($0.offset + $0.size) }
            let expected = fixture.messages

            for written in 0..<5 {
                // Given the header and the first `written` records on disk, not the others
                var torn = after
                for record in records.dropFirst(written) {
                    for i in record { torn[i] = i < before.count ? before[i] : 0 }
                }
                let copy = directory.appendingPathComponent("torn-\(written).log")
                try write(torn, to: copy)
                // Then opening keeps the records written and drops the rest
                let log = try rawLog(copy, maximumBytes: 64 + 900, overwrites: true)
                #expect(try log.messages() == Array(expected.dropLast(5 - written)), "\(written) written")
                #expect(try log.verify().isIntact)
            }
        }
    }

    @Test(
        "A crash after the header of a wrapping append but before its wrap marker is a torn append, not damage",
        arguments: 0..<12)
    func crashBeforeWrapMarker(seed: Int) throws {
        try withTemporaryDirectory { directory in
            // Given a ring log whose next append wraps, leaving 8 or more bytes at the end
            let budget = 64 + 600
            let url = directory.appendingPathComponent("ring.log")
            let log = try rawLog(url, maximumBytes: budget, overwrites: true)
            var model = LogModel(maximumBytes: budget, overwrites: true)
            var random = SplitMix64(seed: UInt64(seed))
            var sequence = 0
            var wrapping: Data?
            while wrapping == nil {
                let message = taggedMessage(writer: 0, sequence: sequence, padding: Int(random.next() % 40))
                sequence += 1
                let end = model.records.last.map { $0.offset + $0.size } ?? 64
                if end + 8 + message.count > budget, budget - end >= 8, sequence > 20 {
                    wrapping = message
                } else {
                    try log.append(message)
                    _ = model.append(message)
                }
            }
            let message = try #require(wrapping)
            let marker = try #require(model.records.last).offset + (try #require(model.records.last)).size
            let before = try restingBytes(of: url, after: log)
            try log.append(message)
            _ = model.append(message)
            let after = try restingBytes(of: url, after: log)

            // When the process died after writing that header, before the marker and the record
            // (what lay from the marker on before the append, the file ending where it did)
            var image = Array(after[0..<marker]) + Array(before[min(marker, before.count)...])
            for offset in 64..<(64 + 8 + message.count) { image[offset] = before[offset] }
            let copy = directory.appendingPathComponent("crashed.log")
            try write(image, to: copy)

            // Then a reader sees a torn last append and no damage, and a writer drops it
            let report = try MessageLog<Data>(forReadingFrom: copy, codec: .cacheValue).verify()
            #expect(report.damagedRanges.isEmpty, "seed \(seed): \(report)")
            #expect(!report.tornAppendRanges.isEmpty)
            model.dropLast()
            let writer = try rawLog(copy, maximumBytes: budget, overwrites: true)
            #expect(try writer.messages() == model.messages, "seed \(seed)")
            #expect(try writer.verify().isIntact)
            try writer.append(Data("after".utf8))
            #expect(try writer.messages() == model.messages + [Data("after".utf8)])
        }
    }

    @Test("An instance that stays open drops the torn append of a writer that crashed, then appends")
    func otherWriterCrashed() throws {
        try withTemporaryDirectory { directory in
            // Given two instances on one file
            let url = directory.appendingPathComponent("shared.log")
            let survivor = try rawLog(url, maximumBytes: 2048, overwrites: true)
            try survivor.append(contentsOf: [Data("one".utf8), Data("two".utf8)])
            // When the other's append reached the file only in its header
            try tearAppend(of: Data("lost in the crash".utf8), to: url, maximumBytes: 2048)

            // Then the survivor skips it when reading, and drops it before appending
            #expect(try survivor.messages() == [Data("one".utf8), Data("two".utf8)])
            try survivor.append(Data("three".utf8))
            #expect(try survivor.messages() == [Data("one".utf8), Data("two".utf8), Data("three".utf8)])
            #expect(try survivor.verify().isIntact)
        }
    }

    // MARK: Other damage

    @Test("A damaged length is fileCorrupted at its record's offset; recover() keeps every other message")
    func damagedLength() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("length.log")
            let fixture = try Self.fixture(at: url, maximumBytes: 4096, overwrites: false, count: 8, seed: 4)
            let victim = fixture.model.records[3]
            var file = fixture.file
            file[victim.offset] ^= 0x05
            try write(file, to: url)

            let log = try rawLog(url, maximumBytes: 4096, overwrites: false)
            let error = #expect(throws: HoardError.self) { try log.messages() }
            #expect(error?.code == .fileCorrupted)
            #expect(error?.offset == victim.offset)
            let report = try log.verify()
            #expect(report.damagedRanges == [victim.offset..<(victim.offset + victim.size)])
            #expect(report.intactMessageCount == 7)
            #expect(!report.isIntact)

            try log.recover()
            var expected = fixture.messages
            expected.remove(at: 3)
            #expect(try log.messages() == expected)
            #expect(try log.verify().isIntact)
            try log.append(Data("next".utf8))
            #expect(try log.messages() == expected + [Data("next".utf8)])
            // A second reader sees the recovered log too
            #expect(try rawLog(url, maximumBytes: 4096, overwrites: false).messages() == expected + [Data("next".utf8)])
        }
    }

    @Test("A damaged header makes reads throw at offset 0; recover() rebuilds it with every message")
    func damagedHeader() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("header.log")
            let fixture = try Self.fixture(at: url, maximumBytes: 64 + 800, overwrites: true, count: 80, seed: 5)
            for offset in [12, 20, 30, 36, 44, 50, 57, 61] {
                var file = fixture.file
                file[offset] ^= 0x40
                try write(file, to: url)
                let log = try rawLog(url, maximumBytes: 64 + 800, overwrites: true)
                #expect(!log.isWritable)
                let error = #expect(throws: HoardError.self) { try log.messages() }
                #expect(error?.code == .fileCorrupted)
                #expect(error?.offset == 0)
                #expect(try !log.verify().isHeaderIntact)
                try log.recover()
                #expect(log.isWritable)
                #expect(try log.messages() == fixture.messages, "header byte \(offset)")
                #expect(try log.verify().isIntact)
            }
        }
    }

    @Test(
        "A file that ends inside its header after the HOARDLOG magic is a damaged header: recover() rebuilds an empty log",
        arguments: [8, 12, 40, 60, 63])
    func headerCutShort(length: Int) throws {
        try withTemporaryDirectory { directory in
            // Given a log cut inside its header (a crash while it was created, a truncation)
            let url = directory.appendingPathComponent("short.log")
            let fixture = try Self.fixture(at: url, maximumBytes: 4096, overwrites: false, count: 3, seed: 7)
            let short = Array(fixture.file.prefix(length))
            try write(short, to: url)

            // When it is opened to write, read and verified
            let log = try rawLog(url, maximumBytes: 4096, overwrites: false)

            // Then it opens with a damaged header, which reads and a reader report as such
            #expect(!log.isWritable)
            let read = #expect(throws: HoardError.self) { try log.messages() }
            #expect(read?.code == .fileCorrupted)
            #expect(read?.offset == 0)
            #expect(read?.message.contains("header is damaged") == true, "\(String(describing: read))")
            let report = try log.verify()
            #expect(!report.isHeaderIntact)
            #expect(report.intactMessageCount == 0)
            let reader = #expect(throws: HoardError.self) {
                try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            }
            #expect(reader?.code == .fileCorrupted)
            #expect(reader?.message.contains("header is damaged") == true, "\(String(describing: reader))")
            #expect(try bytes(of: url) == short, "nothing is written before recover()")

            // And recover() rebuilds it: an empty log (a partial header holds no message) that takes appends
            try log.recover()
            #expect(log.isWritable)
            #expect(try log.messages().isEmpty)
            #expect(try log.verify().isIntact)
            try log.append(Data("after".utf8))
            #expect(try rawLog(url, maximumBytes: 4096, overwrites: false).messages() == [Data("after".utf8)])
        }
    }

    @Test(
        "One flipped byte anywhere: an error at the damaged record or the exact messages; recover() keeps all others",
        arguments: [false, true])
    func singleByteFlips(overwrites: Bool) throws {
        try withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("source.log")
            let budget = overwrites ? 64 + 1_500 : 64 + 3_000
            let fixture = try Self.fixture(
                at: source, maximumBytes: budget, overwrites: overwrites, count: overwrites ? 120 : 50, seed: 6)
            let records = fixture.model.records
            var random = SplitMix64(seed: overwrites ? 60 : 61)
            for iteration in 0..<300 {
                // Given one byte flipped at a random offset
                let offset = Int(random.next() % UInt64(fixture.file.count))
                var file = fixture.file
                file[offset] ^= UInt8(truncatingIfNeeded: random.next() % 255 + 1)
                let url = directory.appendingPathComponent("flip.log")
                try write(file, to: url)
                let hit = records.firstIndex { ($0.offset..<($0.offset + $0.size)).contains(offset) }
                let context = "iteration \(iteration), offset \(offset), record \(hit.map(String.init) ?? "none")"

                // When it is opened
                let log: MessageLog<Data>
                do {
                    log = try rawLog(url, maximumBytes: budget, overwrites: overwrites)
                } catch {
                    // Only the magic makes a file unopenable (a damaged version is damage)
                    #expect(offset < 8, "\(context): \(error)")
                    continue
                }

                // Then reading throws at the damaged record, or returns exactly the messages
                // (all of them, or all but a newest one that opening dropped as torn)
                do throws(HoardError) {
                    let messages = try log.messages()
                    let intact = messages == fixture.messages
                    let lastDropped = messages == Array(fixture.messages.dropLast()) && hit == records.count - 1
                    #expect(intact || lastDropped, "\(context)")
                } catch {
                    #expect(error.code == .fileCorrupted, "\(context)")
                    if offset < 64 {
                        #expect(error.offset == 0, "\(context)")
                    } else if let hit {
                        #expect(error.offset == records[hit].offset, "\(context)")
                    }
                }

                // And recovery keeps every message whose record the flip missed
                try log.recover()
                var expected = fixture.messages
                if let hit { expected.remove(at: hit) }
                #expect(try log.messages() == expected, "\(context)")
                #expect(try log.verify().isIntact, "\(context)")
            }
        }
    }

    @Test("recover() of a large ring log keeps its wrap marker: every message but the damaged one reads back")
    func recoverRingLogKeepsWrapMarker() throws {
        try withTemporaryDirectory { directory in
            // Given a 64 KiB log that overwrites, wrapped more than twice by 3,000 messages
            let url = directory.appendingPathComponent("ring.log")
            let budget = 64 * 1024
            let fixture = try Self.fixture(at: url, maximumBytes: budget, overwrites: true, count: 3_000, seed: 16)
            let records = fixture.model.records
            let wrapped = try #require(records.firstIndex { $0.offset < records[0].offset })
            let wrapPoint = records[wrapped - 1].offset + records[wrapped - 1].size
            #expect(budget - wrapPoint >= 8, "the fixture leaves room for a wrap marker")
            #expect(Array(fixture.file[wrapPoint..<(wrapPoint + 4)]) == [0xFF, 0xFF, 0xFF, 0xFF])
            let hit = try #require(records.firstIndex { ($0.offset..<($0.offset + $0.size)).contains(30_000) })

            // When one bit at byte 30,000 is flipped and the log is recovered
            var file = fixture.file
            file[30_000] ^= 0x10
            try write(file, to: url)
            let log = try rawLog(url, maximumBytes: budget, overwrites: true)
            let report = try log.recover()
            #expect(report.intactMessageCount == records.count - 1)

            // Then the wrap marker is still a wrap marker, and every other message reads back
            #expect(Array(try bytes(of: url)[wrapPoint..<(wrapPoint + 4)]) == [0xFF, 0xFF, 0xFF, 0xFF])
            var expected = fixture.messages
            expected.remove(at: hit)
            #expect(try log.messages() == expected)
            #expect(try log.verify().isIntact)
            #expect(try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue).messages() == expected)
        }
    }

    @Test(
        "Several flipped bytes: never a message that was not appended, never out of order, and recover() keeps the untouched"
    )
    func multipleByteFlips() throws {
        try withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("source.log")
            let fixture = try Self.fixture(at: source, maximumBytes: 64 + 2_000, overwrites: true, count: 150, seed: 7)
            let records = fixture.model.records
            var random = SplitMix64(seed: 70)
            for iteration in 0..<150 {
                var file = fixture.file
                var touched = Set<Int>()
                for _ in 0..<(2 + Int(random.next() % 4)) {
                    let offset = 12 + Int(random.next() % UInt64(file.count - 12))
                    file[offset] ^= UInt8(truncatingIfNeeded: random.next() % 255 + 1)
                    if let hit = records.firstIndex(where: { ($0.offset..<($0.offset + $0.size)).contains(offset) }) {
                        touched.insert(hit)
                    }
                }
                let url = directory.appendingPathComponent("flips.log")
                try write(file, to: url)
                let log = try rawLog(url, maximumBytes: 64 + 2_000, overwrites: true)
                if let messages = try? log.messages() {
                    #expect(isOrderedSubsequence(messages, of: fixture.messages), "iteration \(iteration)")
                }
                try log.recover()
                let recovered = try log.messages()
                #expect(isOrderedSubsequence(recovered, of: fixture.messages), "iteration \(iteration)")
                let untouched = fixture.messages.indices.filter { !touched.contains($0) }.map { fixture.messages[$0] }
                #expect(
                    isOrderedSubsequence(untouched, of: recovered),
                    "iteration \(iteration), touched \(touched.sorted())")
            }
        }
    }

    /// Appends `messages` through an instance that is gone when this returns.
    func appendAll(_ messages: [Data], to url: URL, maximumBytes: Int) throws {
        let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: true)
        for message in messages { try log.append(message) }
    }

    @Test("Zeros, or an older record of the same size, where a record should be are never read as a message")
    func staleAndZeroSlots() throws {
        try withTemporaryDirectory { directory in
            // Given a ring exactly full of ten 24-byte messages (32-byte records)
            let url = directory.appendingPathComponent("ring.log")
            let budget = 64 + 10 * 32
            let messages = (0..<11).map { taggedMessage(writer: 0, sequence: $0, padding: 8) }
            // (each instance is gone before the file is read: its lease let go, the
            // header exact)
            try appendAll(Array(messages.prefix(10)), to: url, maximumBytes: budget)
            let before = try bytes(of: url)
            // When the eleventh append wraps to offset 64 but a crash keeps its record
            // from the disk: the slot still holds message 0, a valid record of the same
            // size from the previous lap (a payload-only checksum would accept it)
            try appendAll([messages[10]], to: url, maximumBytes: budget)
            let after = try bytes(of: url)
            let stale = Array(after[0..<64]) + Array(before[64...])
            let copy = directory.appendingPathComponent("copy.log")
            try write(stale, to: copy)
            // Then opening drops the torn append; message 0 is not returned as message 10
            #expect(try rawLog(copy, maximumBytes: budget, overwrites: true).messages() == Array(messages[1..<10]))

            // And when the slot holds zeros instead (an empty payload's CRC-32C is 0)
            var zeroed = after
            for i in 64..<96 { zeroed[i] = 0 }
            try write(zeroed, to: copy)
            #expect(try rawLog(copy, maximumBytes: budget, overwrites: true).messages() == Array(messages[1..<10]))

            // And zeros in the middle of the log are damage at their offset, not empty messages
            var middle = before
            for i in (64 + 3 * 32)..<(64 + 5 * 32) { middle[i] = 0 }
            try write(middle, to: copy)
            let reader = try rawLog(copy, maximumBytes: budget, overwrites: true)
            let error = #expect(throws: HoardError.self) { try reader.messages() }
            #expect(error?.code == .fileCorrupted)
            #expect(error?.offset == 64 + 3 * 32)
        }
    }
}

/// Whether every element of `part` appears in `whole`, in the same order.
func isOrderedSubsequence(_ part: [Data], of whole: [Data]) -> Bool {
    var index = whole.startIndex
    for element in part {
        guard let found = whole[index...].firstIndex(of: element) else { return false }
        index = found + 1
    }
    return true
}
