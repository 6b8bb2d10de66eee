/// The record layer of the message log format: what may start at an offset after the
/// 64-byte header, and how it is checked.
///
/// ```
/// record:  length  UInt32 LE   payload bytes, at most 0x7FFF_FFFF
///          check   UInt32 LE   CRC-32C(offset UInt64 LE ‖ length UInt32 LE ‖ payload) XOR lap
///          payload
/// wrap:    0xFFFF_FFFF         the rest of the file up to the budget is unused; the
///                              next record is at offset 64 (implicit when fewer than
///                              8 bytes are left before the budget)
/// skip:    0xFFFF_FFFE, size   `size` bytes (this marker included, at least 8) hold no
///                              record; written by `recover()` over damaged bytes
/// ```
///
/// The check covers more than the payload: the CRC-32C of the payload alone would
/// accept an 8-byte zero prefix (an empty payload, whose CRC-32C is 0) and a stale
/// record of the right length (see <doc:TheMessageLogFormat>). What it covers:
/// - The length: a damaged length is caught by the record it starts.
/// - The record's own offset: a record written to the wrong place, or a block of
///   records copied elsewhere, fails, so the log never returns a message twice or out of
///   order; and a zero-filled region (what a file system shows after a crash) passes
///   only by a CRC collision, not as a run of empty records.
/// - The *lap* (how many times writing restarted at offset 64), XOR-ed in: a record left
///   over from an earlier lap fails where the header expects a newer one, so after a
///   crash a slot that never received its new record cannot pass off an older message
///   of the same size as the new one.
enum _LogRecord {
    /// The size of the header every record and marker starts with.
    static let prefixSize = 8
    /// The largest payload the format stores: lengths above it are marker tags.
    static let maximumPayload = 0x7FFF_FFFF
    /// The length value of a wrap marker.
    static let wrapTag: UInt32 = 0xFFFF_FFFF
    /// The length value of a skip marker.
    static let skipTag: UInt32 = 0xFFFF_FFFE
    /// The largest region one skip marker covers; longer ones are chains of markers.
    static let maximumSkip = 0x7FFF_FFF8

    /// The check value of a record at `offset`.
    static func check(offset: Int, length: UInt32, payload: UnsafeRawBufferPointer, lap: UInt32) -> UInt32 {
        checksum(offset: offset, length: length, payload: payload) ^ lap
    }

    /// CRC-32C of a record's offset, length and payload: its check without the lap.
    static func checksum(offset: Int, length: UInt32, payload: UnsafeRawBufferPointer) -> UInt32 {
        _CRC32C.update(prefixChecksum(offset: offset, length: length), payload)
    }

    /// CRC-32C of a record's offset and length (12 bytes): what its checksum continues
    /// over the payload.
    static func prefixChecksum(offset: Int, length: UInt32) -> UInt32 {
        withUnsafeTemporaryAllocation(byteCount: 12, alignment: 8) { prefix in
            prefix.storeBytes(of: UInt64(offset).littleEndian, toByteOffset: 0, as: UInt64.self)
            prefix.storeBytes(of: length.littleEndian, toByteOffset: 8, as: UInt32.self)
            return _CRC32C.checksum(UnsafeRawBufferPointer(prefix))
        }
    }

    /// The lap after `lap` (never 0, which marks a log that has no record yet).
    static func lap(after lap: UInt32) -> UInt32 {
        lap == UInt32.max ? 1 : lap + 1
    }

    /// The lap before `lap` (of a log with records, so never 0): the one
    /// ``lap(after:)`` follows with `lap`, `UInt32.max` before 1.
    static func lap(before lap: UInt32) -> UInt32 {
        lap <= 1 ? UInt32.max : lap - 1
    }

    /// What starts at one offset.
    enum Slot: Equatable {
        /// A record whose payload is `length` bytes (8 + length in the file).
        case record(length: Int)
        /// A wrap marker.
        case wrap
        /// A skip marker covering `size` bytes.
        case skip(size: Int)
        /// Bytes that are none of these; `reason` says why, for error messages.
        case invalid(reason: String)
        /// The bytes needed to tell (`count` of them from the offset) were not
        /// loaded; the caller loads them or, at the end of the file, treats the slot as
        /// torn.
        case unavailable(count: Int)

        /// The bytes the slot occupies, for records and skips.
        var size: Int? {
            switch self {
            case .record(let length): return _LogRecord.prefixSize + length
            case .skip(let size): return size
            default: return nil
            }
        }
    }

    /// Parses what starts at file offset `position`.
    ///
    /// - Parameters:
    ///   - bytes: Loaded file bytes; `bytes[0]` is the byte at file offset `base`.
    ///   - position: The offset to parse; at least `base`.
    ///   - segmentEnd: The offset nothing at `position` may reach past.
    ///   - lap: The lap a record here must carry, or `nil` to skip the checksum (when
    ///     only the layout matters, as for records about to be overwritten).
    static func slot(
        in bytes: UnsafeRawBufferPointer, base: Int, at position: Int, segmentEnd: Int, lap: UInt32?
    ) -> Slot {
        // Every comparison subtracts rather than adds, so that no length read from the
        // file can overflow an offset (on 32-bit platforms too).
        guard position >= base, segmentEnd - position >= prefixSize else {
            return .invalid(reason: "there is no room for a record before offset \(segmentEnd)")
        }
        let start = position - base
        guard bytes.count - start >= 4 else { return .unavailable(count: 4) }
        let length = bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self).littleEndian
        if length == wrapTag { return .wrap }  // 4 bytes; the rest of the space is unused
        guard bytes.count - start >= prefixSize else { return .unavailable(count: prefixSize) }
        let second = bytes.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self).littleEndian
        let room = segmentEnd - position
        if length == skipTag {
            guard second >= UInt32(prefixSize), UInt64(second) <= UInt64(room) else {
                return .invalid(reason: "a skip marker of \(second) bytes does not fit before offset \(segmentEnd)")
            }
            return .skip(size: Int(second))
        }
        guard length <= UInt32(maximumPayload), Int(length) <= room - prefixSize else {
            return .invalid(reason: "a record length of \(length) bytes does not fit before offset \(segmentEnd)")
        }
        guard bytes.count - start - prefixSize >= Int(length) else {
            return .unavailable(count: prefixSize + Int(length))
        }
        if let lap {
            let payload = UnsafeRawBufferPointer(
                rebasing: bytes[(start + prefixSize)..<(start + prefixSize + Int(length))])
            guard check(offset: position, length: length, payload: payload, lap: lap) == second else {
                return .invalid(reason: "the record's checksum does not match its bytes")
            }
        }
        return .record(length: Int(length))
    }

    /// Writes the prefix (length and check) of a record of `payload` at `offset` into
    /// 8 bytes.
    static func writePrefix(
        into prefix: UnsafeMutableRawBufferPointer, offset: Int, payload: UnsafeRawBufferPointer, lap: UInt32
    ) {
        let length = UInt32(payload.count)
        prefix.storeBytes(of: length.littleEndian, toByteOffset: 0, as: UInt32.self)
        prefix.storeBytes(
            of: check(offset: offset, length: length, payload: payload, lap: lap).littleEndian, toByteOffset: 4,
            as: UInt32.self)
    }
}
