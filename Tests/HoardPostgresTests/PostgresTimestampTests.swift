#if Postgres
import Foundation
import NIOCore
import PostgresNIO
import Testing

@testable import HoardPostgres

@Suite("Times as PostgreSQL parameters")
struct PostgresTimestampTests {
    private func microseconds(_ date: Date) throws -> Int64 {
        var buffer = ByteBuffer()
        _PostgresTimestamp(date).encode(into: &buffer, context: .default)
        #expect(buffer.readableBytes == 8)
        let value = buffer.readInteger(as: Int64.self)
        return try #require(value)
    }

    @Test("A time is sent as the nearest microsecond after 2000-01-01, never truncated below it")
    func rounding() throws {
        // 2026-11-23 19:58:01.524 UTC: just below .524 in binary, truncation gives …523_999.
        let date = Date(timeIntervalSince1970: 1_795_463_881.524)
        #expect(try microseconds(date) == 848_779_081_524_000)
        #expect(try microseconds(Date(timeIntervalSince1970: 946_684_800)) == 0)
        #expect(try microseconds(Date(timeIntervalSince1970: 946_684_799.999_999)) == -1)
        for millisecond in 0..<1_000 {
            let time = Date(timeIntervalSince1970: 1_795_463_881 + Double(millisecond) / 1_000)
            #expect(try microseconds(time) == 848_779_081_000_000 + Int64(millisecond) * 1_000)
        }
    }

    @Test("Whole milliseconds and whole microseconds read back as the same Date; others as the nearest microsecond")
    func roundTrip() throws {
        func readBack(_ date: Date) throws -> Date {
            var buffer = ByteBuffer()
            _PostgresTimestamp(date).encode(into: &buffer, context: .default)
            return try _PostgresTimestamp(from: &buffer, type: .timestamptz, format: .binary, context: .default).date
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let milliseconds = Double(Int64.random(in: 0..<4_102_444_800_000, using: &generator))  // 1970…2100
            let date = Date(timeIntervalSince1970: milliseconds / 1_000)
            #expect(try readBack(date) == date, "\(milliseconds) ms")
            let microseconds = Double(Int64.random(in: 0..<4_102_444_800_000_000, using: &generator))
            let precise = Date(timeIntervalSince1970: microseconds / 1_000_000)
            #expect(try readBack(precise) == precise, "\(microseconds) µs")
        }
        // Any other time: half a microsecond of rounding, plus a few units in the last
        // place of a Double near 2026 (0.12 µs each).
        for _ in 0..<1_000 {
            let date = Date(timeIntervalSinceReferenceDate: Double.random(in: 0..<1e9, using: &generator))
            #expect(
                abs(try readBack(date).timeIntervalSince(date)) < 0.000_001, "\(date.timeIntervalSinceReferenceDate)")
        }
    }

    @Test("A column that is not a timestamp, or not 8 bytes, is a decoding error")
    func badColumns() {
        var text = ByteBuffer(string: "2026-11-23")
        #expect(throws: (any Error).self) {
            try _PostgresTimestamp(from: &text, type: .text, format: .text, context: .default)
        }
        var short = ByteBuffer(bytes: [0, 1, 2])
        #expect(throws: (any Error).self) {
            try _PostgresTimestamp(from: &short, type: .timestamptz, format: .binary, context: .default)
        }
    }

    @Test("Times beyond about 285,000 years are infinity or -infinity, not a trap")
    func extremes() throws {
        #expect(try microseconds(Date(timeIntervalSince1970: 1e20)) == .max)
        #expect(try microseconds(Date(timeIntervalSince1970: -1e20)) == .min)
        #expect(try microseconds(Date(timeIntervalSinceReferenceDate: .nan)) == .min)
        #expect(try microseconds(.distantFuture) == 63_145_526_400_000_000)
    }
}
#endif
