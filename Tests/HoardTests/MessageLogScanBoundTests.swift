import Foundation
import Testing

@testable import Hoard

/// ``MessageLog/verify()`` and ``MessageLog/recover()`` scan a damaged log for the next
/// intact record by trying every offset after the damage. A crafted file can make
/// every offset claim a record that reaches the end of the segment; the work must stay
/// linear in the bytes scanned (checksumming each claim whole made it quadratic), and
/// the scan must still find every intact record, whatever the damage.
@Suite("MessageLog: scanning a damaged log is linear")
struct MessageLogScanBoundTests {
    /// The bytes from offset `low` to `end` with, at each 8th offset, a record whose
    /// length reaches `end` exactly and whose check matches nothing.
    static func claimsReachingEnd(from low: Int, to end: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for position in stride(from: low, to: end, by: 8) {
            bytes += withUnsafeBytes(of: UInt32(end - position - 8).littleEndian) { Array($0) }
            bytes += [0xEF, 0xBE, 0xAD, 0xDE]
        }
        return bytes
    }

    @Test("64 KiB of records claimed at every 8th offset, each reaching the segment's end, cost linear checksum work")
    func craftedClaims() {
        // Given a header whose one record is 64 KiB of claims that fail their check
        let low = _LogHeader.recordsStart
        let window = 64 << 10
        let end = low + window
        var header = _LogHeader(maximumBytes: end, overwritesOldMessages: false)
        (header.oldest, header.next, header.count, header.lap, header.lastAppendStart) = (low, end, 1, 1, end)
        let image = _LogImage(pieces: [.init(start: low, bytes: Self.claimsReachingEnd(from: low, to: end))])

        // When it is scanned
        let scan = _LogScan.scan(header, image: image)

        // Then it is all damage, found with a bounded checksum per offset tried (each
        // claim checksummed whole was about 4,096 bytes per byte scanned, 268 MiB)
        #expect(scan.records.isEmpty)
        #expect(scan.damaged == [low..<end])
        #expect(scan.checksummedBytes <= 80 * window, "\(scan.checksummedBytes) bytes checksummed for \(window)")
    }

    @Test("The same claims under a damaged header cost linear checksum work for each lap tried")
    func craftedClaimsWithoutHeader() {
        // Given the claims, and a damaged header whose lap field says 1
        let low = _LogHeader.recordsStart
        let window = 64 << 10
        let end = low + window
        let image = _LogImage(pieces: [.init(start: low, bytes: Self.claimsReachingEnd(from: low, to: end))])

        // When the file is scanned without a header
        let scan = _LogScan.scanWithoutHeader(image: image, maximumBytes: end, overwrites: false, lapHints: [1])

        // Then lap 1 finds nothing, and the lap the first claim implies finds only that
        // claim (one record is no proof), each pass with a bounded checksum per offset
        #expect(scan.records.isEmpty)
        #expect(scan.checksummedBytes <= 2 * 80 * window, "\(scan.checksummedBytes) bytes checksummed for \(window)")
    }

    @Test("recover() on a 6 MiB log with 5 KiB of random damage in the middle keeps every intact record")
    func randomDamageInLargeLog() throws {
        try withTemporaryDirectory { directory in
            // Given a log of about 6 MiB of messages of up to 16 KiB
            let url = directory.appendingPathComponent("large.log")
            let maximumBytes = 8 << 20
            var model = LogModel(maximumBytes: maximumBytes, overwrites: false)
            var random = SplitMix64(seed: 2_026)
            do {
                let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: false)
                var sequence = 0
                while model.records.last.map({ $0.offset + $0.size }) ?? 0 < 6 << 20 {
                    let message = taggedMessage(writer: 1, sequence: sequence, padding: Int(random.next() % (16 << 10)))
                    try log.append(message)
                    let fits = model.append(message)
                    #expect(fits)
                    sequence += 1
                }
            }

            // When 5 KiB of random bytes overwrite the middle of it
            var file = try bytes(of: url)
            let damage = (3 << 20)..<((3 << 20) + 5_000)
            for offset in damage { file[offset] = UInt8(truncatingIfNeeded: random.next()) }
            try write(file, to: url)
            let log = try rawLog(url, maximumBytes: maximumBytes, overwrites: false)
            let report = try log.recover()

            // Then every record that the damage does not touch is kept, those after it too
            let intact = model.records.filter { !damage.overlaps($0.offset..<($0.offset + $0.size)) }
            #expect(intact.count < model.records.count)
            #expect(report.intactMessageCount == intact.count)
            #expect(try log.messages() == intact.map(\.message))
            #expect(try log.verify().isIntact)
        }
    }

    /// A record at `offset` with `payload`, checked for `lap`.
    static func record(at offset: Int, _ payload: [UInt8], lap: UInt32) -> [UInt8] {
        MessageLogSettlingBoundTests.record(at: offset, payload, lap: lap)
    }

    @Test("At every offset of random images, the checks give the slot and lap a check of the whole record gives")
    func checksMatchWholeRecordChecks() {
        var random = SplitMix64(seed: 77)
        for round in 0..<12 {
            // Given two loaded pieces (as around a wrap point) of intact records of two
            // laps, claims reaching the end, skip markers and random bytes
            func piece(start: Int, count: Int) -> _LogImage.Piece {
                var bytes: [UInt8] = []
                while bytes.count < count {
                    let position = start + bytes.count
                    switch random.next() % 5 {
                    case 0, 1:
                        let payload = (0..<Int(random.next() % 900)).map { _ in UInt8(truncatingIfNeeded: random.next())
                        }
                        bytes += Self.record(at: position, payload, lap: UInt32(1 + random.next() % 2))
                    case 2:
                        let length = max(0, start + count - position - 8 - Int(random.next() % 3))
                        bytes += withUnsafeBytes(of: UInt32(length).littleEndian) { Array($0) }
                        bytes += withUnsafeBytes(of: UInt32(truncatingIfNeeded: random.next())) { Array($0) }
                    case 3:
                        bytes += [0xFE, 0xFF, 0xFF, 0xFF, 8, 0, 0, 0]
                    default:
                        bytes += (0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                    }
                }
                return .init(start: start, bytes: bytes)
            }
            let lower = piece(start: 64, count: 6_000)
            let upper = piece(start: lower.end + Int(random.next() % 100), count: 5_000)
            let pieces = round % 3 == 0 ? [upper, .init(start: lower.start, bytes: []), lower] : [upper, lower]
            let image = _LogImage(pieces: pieces)
            var checks = _LogScanChecks(image)
            let ends = [lower.end, lower.end - 3, upper.end, upper.end + 50]

            for position in 60..<(upper.end + 4) {
                let segmentEnd = ends[position % ends.count]
                let lap = UInt32(1 + position % 2)

                // When an offset is checked through the checks, and by its whole record
                let slot = checks.slot(at: position, segmentEnd: segmentEnd, lap: lap)
                let implied = checks.impliedLap(at: position, segmentEnd: segmentEnd)

                // Then both give the same slot and implied lap
                #expect(slot == image.slot(at: position, segmentEnd: segmentEnd, lap: lap), "offset \(position)")
                var expected: (lap: UInt32, length: Int)?
                if case .record(let length) = image.slot(at: position, segmentEnd: segmentEnd, lap: nil),
                    let piece = pieces.first(where: { $0.start <= position && position < $0.end })
                {
                    let start = position - piece.start
                    let check = piece.bytes[(start + 4)..<(start + 8)].withUnsafeBytes {
                        $0.loadUnaligned(as: UInt32.self)
                    }
                    let payload = Array(piece.bytes[(start + 8)..<(start + 8 + length)])
                    let checksum = payload.withUnsafeBytes {
                        _LogRecord.checksum(offset: position, length: UInt32(length), payload: $0)
                    }
                    expected = (checksum ^ UInt32(littleEndian: check), length)
                }
                #expect(implied?.lap == expected?.lap && implied?.length == expected?.length, "offset \(position)")
            }
        }
    }
}
