#if Postgres
import Foundation
import PostgresNIO

/// A `Date` as a `timestamptz` parameter or column, to the nearest microsecond.
///
/// PostgreSQL keeps whole microseconds since 2000-01-01. postgres-nio's own `Date`
/// encoding truncates toward zero, and a `Date` is a binary fraction of a second, so
/// a time such as `…:01.524` (just below in binary) would be stored as `…:01.523999`;
/// its decoding adds two rounded numbers, so even an exact microsecond can come back
/// one unit in the last place off. This type stores the nearest microsecond and reads
/// it back with one rounding (microseconds since 1970, divided by a million), so a
/// time made with `Date(timeIntervalSince1970:)` from whole milliseconds or
/// microseconds reads back as the same `Date`, and any other time as the nearest
/// microsecond. Every time a ``PostgresStore`` binds or reads goes through this type.
/// A time more than
/// about 285,000 years from now is sent as PostgreSQL's `infinity` or `-infinity`
/// rather than trapping, as postgres-nio's encoding would.
struct _PostgresTimestamp: PostgresNonThrowingEncodable, PostgresArrayEncodable, PostgresDecodable {
    static var psqlType: PostgresDataType { .timestamptz }
    static var psqlFormat: PostgresFormat { .binary }
    static var psqlArrayType: PostgresDataType { .timestamptzArray }

    /// PostgreSQL's epoch, 2000-01-01 00:00:00 UTC, in microseconds after 1970.
    private static let epoch: Double = 946_684_800_000_000
    /// Foundation's reference date, 2001-01-01, in seconds after PostgreSQL's epoch.
    private static let referenceDateSeconds: Int64 = 31_622_400

    let date: Date

    init(_ date: Date) {
        self.date = date
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        buffer.writeInteger(Self.microseconds(date))
    }

    /// Microseconds from PostgreSQL's epoch to `date`, rounded to the nearest, taken
    /// from the `Date`'s own value in whole seconds and a fraction (both exact), so
    /// that no product of large numbers rounds; `Int64.max` (`infinity`) or
    /// `Int64.min` (`-infinity`, also for NaN) when out of range.
    static func microseconds(_ date: Date) -> Int64 {
        let interval = date.timeIntervalSinceReferenceDate
        // Within about 285,000 years of 2001 every step below stays in range.
        guard interval.magnitude < 9e12 else { return interval > 0 ? .max : .min }
        let seconds = interval.rounded(.down)
        let fraction = ((interval - seconds) * 1_000_000).rounded()  // 0…1,000,000
        return (Int64(seconds) + Self.referenceDateSeconds) * 1_000_000 + Int64(fraction)
    }

    init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard type == .timestamptz || type == .timestamp else { throw PostgresDecodingError.Code.typeMismatch }
        guard format == .binary, buffer.readableBytes == 8, let microseconds = buffer.readInteger(as: Int64.self)
        else { throw PostgresDecodingError.Code.failure }
        date = Date(timeIntervalSince1970: (Double(microseconds) + Self.epoch) / 1_000_000)
    }
}
#endif
