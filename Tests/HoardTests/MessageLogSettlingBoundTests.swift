import Foundation
import Testing

@testable import Hoard

/// Settling a header left with its lease flag set looks for the records the dead
/// writer dropped ahead of its appends in at most ``_LogHeader/droppedAheadSearchBytes``
/// before the oldest record. A crafted file can fill that window with markers that
/// chain from every offset to the oldest record; the search must still parse each
/// offset at most once, not once per offset it starts from.
@Suite("MessageLog: settling a leased header is bounded", .timeLimit(.minutes(3)))
struct MessageLogSettlingBoundTests {
    /// An 8-byte skip marker (it covers itself only).
    static let skip: [UInt8] = [0xFE, 0xFF, 0xFF, 0xFF, 8, 0, 0, 0]

    /// A record at `offset` with `payload`, checked for `lap`.
    static func record(at offset: Int, _ payload: [UInt8], lap: UInt32) -> [UInt8] {
        let check = payload.withUnsafeBytes {
            _LogRecord.check(offset: offset, length: UInt32(payload.count), payload: $0, lap: lap)
        }
        return withUnsafeBytes(of: UInt32(payload.count).littleEndian) { Array($0) }
            + withUnsafeBytes(of: check.littleEndian) { Array($0) } + payload
    }

    @Test("A window of skip markers that holds no record is searched with one parse per offset at most")
    func markersOnly() {
        let low = 64
        let window = 64 << 10
        let bytes = Array([[UInt8]](repeating: Self.skip, count: window / 8).joined())
        let image = _LogImage(pieces: [.init(start: low, bytes: bytes)])

        let search = _LogHeader.firstRun(
            in: image, from: low, before: low + window, segmentEnd: low + window, lap: 1, endsAtWrap: false)

        #expect(search.run == nil)
        #expect(search.slotsParsed <= window, "\(search.slotsParsed) slots parsed for \(window) bytes")
    }

    @Test("Records claimed all through half a window, each reaching markers that run on, cost a bounded checksum")
    func claimsIntoMarkers() {
        let low = 64
        let window = 64 << 10
        let middle = low + window / 2
        // At each 8th offset before the middle, a record whose length reaches the
        // middle, with a check that does not match; markers from the middle on.
        var bytes: [UInt8] = []
        for position in stride(from: low, to: middle, by: 8) {
            bytes += withUnsafeBytes(of: UInt32(middle - position - 8).littleEndian) { Array($0) }
            bytes += [0xEF, 0xBE, 0xAD, 0xDE]
        }
        bytes += Array([[UInt8]](repeating: Self.skip, count: window / 16).joined())
        let image = _LogImage(pieces: [.init(start: low, bytes: bytes)])

        let search = _LogHeader.firstRun(
            in: image, from: low, before: low + window, segmentEnd: low + window, lap: 1, endsAtWrap: false)

        #expect(search.run == nil)
        #expect(search.slotsParsed <= 2 * window, "\(search.slotsParsed) slots parsed for \(window) bytes")
        // Each claim checked costs at most 12 + 512 bytes (``_LogScanChecks``), one
        // per 8 bytes: linear, where checking each claim whole costs window² / 32.
        #expect(search.bytesChecked <= 80 * window, "\(search.bytesChecked) bytes checksummed for \(window) bytes")
    }

    @Test("Intact records whose payloads claim a record reaching the run's end at every 8th offset are all found")
    func recordsFullOfClaims() {
        let low = 64
        let window = 64 << 10
        let end = low + window
        // 64 intact records of 1 KiB fill the window up to the segment's end; at every
        // 8th offset inside each payload, 8 bytes read as a record that reaches that
        // end, with a check that does not match. Checking each claim's whole length
        // costs about window² / 16 bytes.
        var bytes: [UInt8] = []
        for recordStart in stride(from: low, to: end, by: 1_024) {
            var payload: [UInt8] = []
            for claim in stride(from: recordStart + 8, to: recordStart + 1_024, by: 8) {
                payload += withUnsafeBytes(of: UInt32(end - claim - 8).littleEndian) { Array($0) }
                payload += [0xEF, 0xBE, 0xAD, 0xDE]
            }
            bytes += Self.record(at: recordStart, payload, lap: 1)
        }
        let image = _LogImage(pieces: [.init(start: low, bytes: bytes)])

        let search = _LogHeader.firstRun(
            in: image, from: low, before: end, segmentEnd: end, lap: 1, endsAtWrap: false)

        #expect(search.run?.start == low, "the run starts at the first record")
        #expect(search.run?.count == 64)
        #expect(search.bytesChecked <= 80 * window, "\(search.bytesChecked) bytes checksummed for \(window) bytes")
    }

    @Test("The first run found is the one the search without memory found: after damage, and merging into markers")
    func runsFound() {
        let low = 64
        // Markers, 3 bytes of damage, then a record and markers up to the end.
        var damaged = Array([[UInt8]](repeating: Self.skip, count: 100).joined()) + [1, 2, 3]
        damaged += Self.record(at: low + damaged.count, [7, 7], lap: 1)
        damaged += Array([[UInt8]](repeating: Self.skip, count: 10).joined())
        let first = _LogHeader.firstRun(
            in: _LogImage(pieces: [.init(start: low, bytes: damaged)]), from: low, before: low + damaged.count,
            segmentEnd: low + damaged.count, lap: 1, endsAtWrap: false)
        #expect(first.run?.start == low + 803)
        #expect(first.run?.count == 1)

        // A 16-byte skip marker whose second half is an empty record: the run from
        // offset 64 holds no record; the one from the record joins its markers.
        var merging: [UInt8] = [0xFE, 0xFF, 0xFF, 0xFF, 16, 0, 0, 0] + Self.record(at: low + 8, [], lap: 1)
        merging += Array([[UInt8]](repeating: Self.skip, count: 50).joined())
        let second = _LogHeader.firstRun(
            in: _LogImage(pieces: [.init(start: low, bytes: merging)]), from: low, before: low + merging.count,
            segmentEnd: low + merging.count, lap: 1, endsAtWrap: false)
        #expect(second.run?.start == low + 8)
        #expect(second.run?.count == 1)
    }

    @Test("A leased log with 1 MiB of skip markers before its oldest record opens, counts and reads its record")
    func craftedFile() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("crafted.log")
            let oldest = 64 + _LogHeader.droppedAheadSearchBytes
            let message = Array("the one message".utf8)
            let record = Self.record(at: oldest, message, lap: 1)
            var header = _LogHeader(maximumBytes: oldest + 4_096, overwritesOldMessages: true)
            (header.oldest, header.next, header.count, header.lap) = (oldest, oldest + record.count, 1, 1)
            header.lastAppendStart = oldest
            header.isLeased = true
            var file = [UInt8](repeating: 0, count: 64)
            file.withUnsafeMutableBytes { header.write(into: $0) }
            file += Array([[UInt8]](repeating: Self.skip, count: _LogHeader.droppedAheadSearchBytes / 8).joined())
            file += record
            try Data(file).write(to: url)

            let log = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
            #expect(try log.count == 1)
            #expect(try log.messages() == [Data(message)])
        }
    }
}
