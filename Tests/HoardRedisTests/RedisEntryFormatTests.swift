#if Redis
import Foundation
import Hoard
import NIOCore
import Testing

@testable import HoardRedis

@Suite("Redis value format")
struct RedisEntryFormatTests {
    @Test("Version byte, storedAt and expiresAt as big-endian milliseconds, then the bytes")
    func layout() {
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000.123)
        let value = _RedisEntryFormat.encode(Data([0xAA, 0xBB]), storedAt: storedAt, expiresAt: storedAt + 60)
        let bytes = Array(value.readableBytesView)
        #expect(bytes.count == 17 + 2)
        #expect(bytes[0] == 1)
        #expect(bytes[1..<9] == ArraySlice(withUnsafeBytes(of: Int64(1_700_000_000_123).bigEndian, Array.init)))
        #expect(bytes[9..<17] == ArraySlice(withUnsafeBytes(of: Int64(1_700_000_060_123).bigEndian, Array.init)))
        #expect(bytes[17...] == [0xAA, 0xBB])

        let forever = _RedisEntryFormat.encode(Data(), storedAt: storedAt, expiresAt: nil)
        #expect(
            Array(forever.readableBytesView)[9..<17] == ArraySlice(withUnsafeBytes(of: Int64.min.bigEndian, Array.init))
        )
    }

    @Test("Entries round-trip at millisecond precision")
    func roundTrip() {
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000.1234)
        let entry = _RedisEntryFormat.decode(
            _RedisEntryFormat.encode(
                Data("hello".utf8), storedAt: storedAt, expiresAt: Date(timeIntervalSince1970: 1_800_000_000.9876)))
        #expect(
            entry
                == StoredEntry(
                    data: Data("hello".utf8), storedAt: Date(timeIntervalSince1970: 1_700_000_000.123),
                    expiresAt: Date(timeIntervalSince1970: 1_800_000_000.988)))
        #expect(
            _RedisEntryFormat.decode(_RedisEntryFormat.encode(Data(), storedAt: storedAt, expiresAt: nil))?.expiresAt
                == nil)
        // Dates no Int64 of milliseconds holds are clamped, never a crash, and never read as "no expiry".
        let far = _RedisEntryFormat.decode(
            _RedisEntryFormat.encode(Data(), storedAt: .distantPast, expiresAt: Date(timeIntervalSince1970: -1e300)))
        #expect(far?.expiresAt != nil)
    }

    @Test("Values too short or of another version are not entries")
    func foreignValues() {
        #expect(_RedisEntryFormat.decode(ByteBuffer(string: "plain text written by someone else")) == nil)
        #expect(_RedisEntryFormat.decode(ByteBuffer(bytes: [1, 0, 0])) == nil)
        var future = _RedisEntryFormat.encode(Data([1]), storedAt: .now, expiresAt: nil)
        future.setInteger(UInt8(2), at: future.readerIndex)
        #expect(_RedisEntryFormat.decode(future) == nil)
    }
}
#endif
