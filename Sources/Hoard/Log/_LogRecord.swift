/// The record layer of the message log format: what may start at an offset after the
/// 64-byte header, and how it is checked.
///
/// ```
/// record:  length  UInt32 LE   payload bytes, at most 0x7FFF_FFFF
///          check   UInt32 LE   CRC-32C(length bytes ‖ payload) XOR lap
///          payload
/// wrap:    0xFFFF_FFFF         the rest of the file up to the budget is unused; the
///                              next record is at offset 64 (implicit when fewer than
///                              8 bytes are left before the budget)
/// skip:    0xFFFF_FFFE, size   `size` bytes (this marker included, at least 8) hold no
///                              record; written by `recover()` over damaged bytes
/// ```
///
/// The check covers the length as well as the payload, so a zero-filled region (what a
/// file system shows after a crash) never reads as a run of empty records, and a
/// damaged length is caught by the checksum of the record it starts. XOR-ing in the
/// *lap* (how many times writing restarted at offset 64) makes a record left over from
/// an earlier lap fail the check where the header expects a newer one: after a crash,
/// a slot that never received its new record cannot pass an older message of the same
/// size off as the new one.
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

    /// The lap whose records a run of zero bytes would pass for; laps skip it (and
    /// the one after it, whose previous lap it is) so zeros never read as records.
    static let zeroLap: UInt32 = _CRC32C.checksum(of: 0)

    /// The check value of a record.
    static func check(length: UInt32, payload: UnsafeRawBufferPointer, lap: UInt32) -> UInt32 {
        _CRC32C.update(_CRC32C.checksum(of: length), payload) ^ lap
    }

    /// The lap after `lap`, skipping 0 and the laps a zero-filled region would match.
    static func lap(after lap: UInt32) -> UInt32 {
        var next = lap &+ 1
        while next == 0 || next == zeroLap || next &- 1 == zeroLap {
            next &+= 1
        }
        return next
    }

    /// The lap a stored record was written in, whatever it is: its check XOR the
    /// CRC-32C of its length and payload. Used to find the lap when the header that
    /// held it is damaged.
    static func impliedLap(length: UInt32, payload: UnsafeRawBufferPointer, check: UInt32) -> UInt32 {
        _CRC32C.update(_CRC32C.checksum(of: length), payload) ^ check
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
        guard position >= base, position + prefixSize <= segmentEnd else {
            return .invalid(reason: "there is no room for a record before offset \(segmentEnd)")
        }
        let start = position - base
        guard start + 4 <= bytes.count else { return .unavailable(count: 4) }
        let length = bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self).littleEndian
        if length == wrapTag { return .wrap }  // 4 bytes; the rest of the space is unused
        guard start + prefixSize <= bytes.count else { return .unavailable(count: prefixSize) }
        let second = bytes.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self).littleEndian
        if length == skipTag {
            let size = Int(second)
            guard size >= prefixSize, position + size <= segmentEnd else {
                return .invalid(reason: "a skip marker of \(size) bytes does not fit before offset \(segmentEnd)")
            }
            return .skip(size: size)
        }
        guard Int(length) <= maximumPayload, position + prefixSize + Int(length) <= segmentEnd else {
            return .invalid(reason: "a record length of \(length) bytes does not fit before offset \(segmentEnd)")
        }
        guard start + prefixSize + Int(length) <= bytes.count else {
            return .unavailable(count: prefixSize + Int(length))
        }
        if let lap {
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(start + prefixSize)..<(start + prefixSize + Int(length))])
            guard check(length: length, payload: payload, lap: lap) == second else {
                return .invalid(reason: "the record's checksum does not match its bytes")
            }
        }
        return .record(length: Int(length))
    }

    /// Writes a record prefix (length and check) for `payload` into 8 bytes.
    static func writePrefix(into prefix: UnsafeMutableRawBufferPointer, payload: UnsafeRawBufferPointer, lap: UInt32) {
        let length = UInt32(payload.count)
        prefix.storeBytes(of: length.littleEndian, toByteOffset: 0, as: UInt32.self)
        prefix.storeBytes(of: check(length: length, payload: payload, lap: lap).littleEndian, toByteOffset: 4, as: UInt32.self)
    }
}
