#if Redis
import NIOCore

/// The Redis Cluster hash slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial
/// value 0) of the key, or of its hash tag, modulo 16,384.
///
/// A key's hash tag is what lies between its first `{` and the first `}` after it,
/// when that is not empty; keys with the same tag share a slot. This is the rule the
/// server applies (`CLUSTER KEYSLOT`), so a command routed by it reaches the primary
/// that owns the key unless the slot is moving.
enum _RedisHashSlot {
    /// How many slots a cluster has.
    static let count = 16_384

    /// The slot of `key`.
    static func slot(of key: ByteBuffer) -> Int {
        key.withUnsafeReadableBytes { slot(of: $0) }
    }

    /// The slot of the key whose bytes are `key`.
    static func slot(of key: UnsafeRawBufferPointer) -> Int {
        var hashed = key
        if let open = key.firstIndex(of: UInt8(ascii: "{")),
            let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
        {
            hashed = UnsafeRawBufferPointer(rebasing: key[(open + 1)..<close])
        }
        return Int(crc16(hashed) & 0x3FFF)
    }

    /// CRC16/XMODEM of `bytes`.
    static func crc16(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// The CRC16/XMODEM table, one entry per byte value.
    private static let table: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
#endif
