#if Redis
import Foundation
import Hoard
import NIOCore

/// The bytes a ``RedisStore`` keeps as the value of one Redis key.
///
/// ```
/// offset  size  field
///      0     1  format version, 1
///      1     8  storedAt:  Int64 big-endian, milliseconds since 1970-01-01 00:00 UTC
///      9     8  expiresAt: Int64 big-endian, milliseconds since 1970-01-01 00:00 UTC,
///               or Int64.min when the entry never expires
///     17     …  the entry's bytes, as given
/// ```
///
/// The expiry is in the value as well as in the key's `PX` lifetime, so a read gets
/// the entry's exact dates from `GET` or `MGET` alone, without a `PTTL` per key.
/// Dates keep millisecond precision. A value that is shorter than the header or has
/// another version byte is not an entry of this format.
enum _RedisEntryFormat {
    /// The version byte this code writes and reads.
    static let version: UInt8 = 1
    /// The header's length in bytes.
    static let headerLength = 17
    /// The `expiresAt` field of an entry that never expires.
    static let never = Int64.min

    /// The value for an entry.
    static func encode(_ data: Data, storedAt: Date, expiresAt: Date?) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(headerLength + data.count)
        buffer.writeInteger(version)
        buffer.writeInteger(milliseconds(storedAt), endianness: .big)
        buffer.writeInteger(expiresAt.map(milliseconds) ?? never, endianness: .big)
        buffer.writeBytes(data)
        return buffer
    }

    /// Appends the value for an entry to a command, as one argument: the same bytes
    /// as ``encode(_:storedAt:expiresAt:)``.
    static func write(_ data: Data, storedAt: Date, expiresAt: Date?, to writer: inout _RESPCommandWriter) {
        writer.bulk(length: headerLength + data.count) { bytes in
            bytes.write(version)
            bytes.write(bigEndian: milliseconds(storedAt))
            bytes.write(bigEndian: expiresAt.map(milliseconds) ?? never)
            bytes.write(data)
        }
    }

    /// The entry a value holds, or `nil` when the value is not in this format.
    static func decode(_ value: ByteBuffer) -> StoredEntry? {
        var value = value
        guard value.readableBytes >= headerLength,
            value.readInteger(as: UInt8.self) == version,
            let storedAt = value.readInteger(endianness: .big, as: Int64.self),
            let expiresAt = value.readInteger(endianness: .big, as: Int64.self)
        else { return nil }
        return StoredEntry(
            // From the raw bytes: one copy, no generic sequence path.
            data: value.withUnsafeReadableBytes { Data($0) },
            storedAt: date(milliseconds: storedAt),
            expiresAt: expiresAt == never ? nil : date(milliseconds: expiresAt))
    }

    /// Milliseconds since 1970, rounded to the nearest, clamped to what an `Int64` holds.
    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return value > 0 ? Int64.max : Int64.min + 1 }
        // Int64.min itself marks "never expires".
        return max(Int64(exactly: value) ?? (value > 0 ? Int64.max : Int64.min), Int64.min + 1)
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
#endif
