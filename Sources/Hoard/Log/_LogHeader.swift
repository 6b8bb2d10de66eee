/// The 64-byte header at the start of every message log file, every integer little
/// endian:
///
/// ```
///  0  8  magic "HOARDLOG"
///  8  4  format version (1)
/// 12  4  flags: bit 0 set when the log overwrites old messages; bit 1 set while a
///        writer holds the log's append lease (records may follow `next`); other
///        bits zero
/// 16  8  maximumBytes: the file's byte budget, this header included
/// 24  8  oldest: offset of the oldest record (equal to next when empty)
/// 32  8  next: offset just past the newest record
/// 40  8  count: the number of records
/// 48  8  lastAppendStart: where the most recent append starts: its wrap marker, when
///          it wrote one that is still live, else its first record
///        still in the log (next when there is none)
/// 56  4  lap: how many times writing restarted at offset 64
/// 60  4  CRC-32C of bytes 0..<60
/// ```
///
/// Bytes 0..<24 change only in the lease flag. A writer sets the flag when it takes
/// the append lease and clears it, with the exact offsets and count, when it lets the
/// lease go; in between its header is a *checkpoint* that may lag behind the records
/// (see ``_LogLease``). Any header that is written is written before the records it
/// counts, so a crash between the two leaves a torn append, never a header that lost
/// track of a record.
///
/// Records live between offset 64 and `maximumBytes`. When the log has wrapped
/// (`count > 0 && next <= oldest`) they run from `oldest` to a wrap point, then from 64
/// to `next`; the records before the wrap point carry the lap before `lap` (`lap - 1`,
/// or `UInt32.max` when `lap` is 1: ``_LogRecord/lap(after:)`` skips 0), the others `lap`.
struct _LogHeader: Equatable, Sendable {
    /// The header's size, and the offset of the first record.
    static let size = 64
    /// The first offset a record may use.
    static let recordsStart = 64
    /// The offset of the part of the header that appends rewrite.
    static let mutableStart = 24
    /// The format version this code reads and writes.
    static let currentVersion: UInt32 = 1
    /// "HOARDLOG" as a little-endian integer.
    static let magic: UInt64 = 0x474F_4C44_5241_4F48
    /// The smallest budget: the header and one empty record.
    static let minimumBytes = size + _LogRecord.prefixSize
    /// The largest budget: 256 TiB, or half the address space on 32-bit platforms, so
    /// that no sum of an offset and a record size can overflow.
    static let maximumBytes = Int(truncatingIfNeeded: min(UInt64(Int.max / 2), 1 << 48))

    var maximumBytes: Int
    var overwritesOldMessages: Bool
    var oldest: Int
    var next: Int
    var count: Int
    var lastAppendStart: Int
    var lap: UInt32
    /// Set while a writer holds the append lease: records appended after this header
    /// was written may follow `next`, and a reader that finds the flag set (the writer
    /// died holding the lease) looks for them (``settled(file:)``).
    var isLeased = false

    /// The header of a new, empty log.
    init(maximumBytes: Int, overwritesOldMessages: Bool) {
        self.maximumBytes = maximumBytes
        self.overwritesOldMessages = overwritesOldMessages
        oldest = Self.recordsStart
        next = Self.recordsStart
        count = 0
        lastAppendStart = Self.recordsStart
        lap = 0
    }

    /// Whether the records run past a wrap point and on from offset 64.
    var wraps: Bool { count > 0 && next <= oldest }

    /// The lap of the oldest record.
    var oldestLap: UInt32 { wraps ? _LogRecord.lap(before: lap) : lap }

    /// Where the segment holding the oldest record ends: the budget when the log
    /// wraps, `next` otherwise.
    var oldestSegmentEnd: Int { wraps ? maximumBytes : next }

    /// Whether `position` lies between the oldest record and `next`, around the ring.
    func isLive(_ position: Int) -> Bool {
        wraps ? position >= oldest || position < next : position >= oldest && position < next
    }

    /// Whether `position` lies in the segment before the wrap point (assuming it is a
    /// live offset).
    func isInUpperSegment(_ position: Int) -> Bool { wraps && position >= oldest }

    // MARK: Reading and writing

    /// What 64 bytes at the start of a file say.
    enum Parsed: Equatable {
        /// A valid header.
        case header(_LogHeader)
        /// The file does not start with the whole 8-byte magic: not a message log.
        case notALog
        /// A message log of another format version.
        case unsupportedVersion(UInt32)
        /// A version-1 header whose checksum or fields are wrong, or a header the
        /// file ends inside, after the magic (and the version, when it got that far).
        /// `lap` and `maximumBytes` are what the damaged bytes say, as hints for
        /// recovery (0 for a header cut short).
        case damaged(reason: String, lap: UInt32, maximumBytes: Int)
    }

    /// Parses and validates a header from the first bytes of a file (all 64, or fewer
    /// when the file is shorter).
    ///
    /// A file that starts with the whole magic but ends before the 64th byte is a log
    /// whose header is damaged (a crash while the file was created, a truncation): it
    /// holds no record, so ``MessageLog/recover()`` loses nothing by rebuilding it;
    /// unless its version field, when there, names another version. A file without
    /// the whole magic is never taken for a log.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Parsed {
        guard bytes.count >= 8, bytes.loadUnaligned(as: UInt64.self).littleEndian == magic else {
            return .notALog
        }
        guard bytes.count >= size else {
            // A version this code does not know may be a format whose header differs:
            // refused, never rewritten, as below.
            if bytes.count >= 12 {
                let version = bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self).littleEndian
                if version != currentVersion { return .unsupportedVersion(version) }
            }
            return .damaged(
                reason: "the file ends after \(bytes.count) of the header's \(size) bytes", lap: 0, maximumBytes: 0)
        }
        func u32(_ offset: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian }
        func u64(_ offset: Int) -> UInt64 { bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian }
        let version = u32(8)
        let lap = u32(56)
        let budgetHint = Int(exactly: u64(16)) ?? 0
        // The checksum before the version. Every format version keeps the magic,
        // the version at byte 8 and the CRC-32C of bytes 0..<60 at byte 60, so a
        // header of another version that checks out as written is that version's:
        // refused, never rewritten. One that checks out once this version is put
        // back has a damaged version field; one that checks out neither way is
        // damaged in the version field and elsewhere.
        let checksum = _CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<60]))
        if version != currentVersion {
            if checksum == u32(60) { return .unsupportedVersion(version) }
            let asCurrent = withUnsafeBytes(of: currentVersion.littleEndian) { current in
                var crc = _CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<8]))
                crc = _CRC32C.update(crc, current)
                return _CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: bytes[12..<60]))
            }
            guard asCurrent == u32(60) else {
                return .damaged(
                    reason: "the header is damaged, its version field included (it says \(version)): its checksum "
                        + "matches neither as written nor as version \(currentVersion)",
                    lap: lap, maximumBytes: budgetHint)
            }
            return .damaged(
                reason: "the header's version field is damaged (it says \(version)); the rest of the header checks out",
                lap: lap, maximumBytes: budgetHint)
        }
        guard checksum == u32(60) else {
            return .damaged(
                reason: "the header's checksum does not match its bytes", lap: lap, maximumBytes: budgetHint)
        }
        func damaged(_ reason: String) -> Parsed { .damaged(reason: reason, lap: lap, maximumBytes: budgetHint) }
        let flags = u32(12)
        guard flags & ~3 == 0 else { return damaged("the header has unknown flags \(flags)") }
        guard let maximumBytes = Int(exactly: u64(16)), (minimumBytes...Self.maximumBytes).contains(maximumBytes),
            let oldest = Int(exactly: u64(24)), let next = Int(exactly: u64(32)),
            let count = Int(exactly: u64(40)), let lastAppendStart = Int(exactly: u64(48))
        else { return damaged("a header field is out of range") }
        var header = _LogHeader(maximumBytes: maximumBytes, overwritesOldMessages: flags & 1 == 1)
        header.oldest = oldest
        header.next = next
        header.count = count
        header.lastAppendStart = lastAppendStart
        header.lap = lap
        header.isLeased = flags & 2 != 0
        if let problem = header.inconsistency { return damaged(problem) }
        return .header(header)
    }

    /// Why the fields cannot describe a log, or `nil` when they can.
    var inconsistency: String? {
        let start = Self.recordsStart
        guard maximumBytes >= start else { return "the budget is smaller than the header" }
        let records = start...maximumBytes
        guard records.contains(oldest), records.contains(next), records.contains(lastAppendStart) else {
            return "an offset in the header lies outside the file's budget"
        }
        guard count <= (maximumBytes - start) / _LogRecord.prefixSize else {
            return "the header counts more records than fit"
        }
        if count == 0 {
            guard oldest == next else { return "an empty log's oldest and next offsets differ" }
            guard lastAppendStart == next else { return "an empty log has a last append" }
        } else {
            guard next >= start + _LogRecord.prefixSize else {
                return "the next offset is before the first record's end"
            }
            guard overwritesOldMessages || next > oldest else {
                return "a log that does not overwrite has wrapped"
            }
            guard lap != 0 else { return "a log with records has lap 0" }
            guard maximumBytes - oldest >= _LogRecord.prefixSize else {
                return "the oldest record starts past the budget"
            }
            // The last append starts at a live record or marker, or equals next when
            // there is none.
            guard isLive(lastAppendStart) || lastAppendStart == next else {
                return "the last append starts outside the log's records"
            }
        }
        return nil
    }

    /// The 64 bytes of this header.
    func write(into bytes: UnsafeMutableRawBufferPointer) {
        precondition(bytes.count >= Self.size)
        func put32(_ value: UInt32, _ offset: Int) {
            bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
        }
        func put64(_ value: UInt64, _ offset: Int) {
            bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self)
        }
        put64(Self.magic, 0)
        put32(Self.currentVersion, 8)
        put32((overwritesOldMessages ? 1 : 0) | (isLeased ? 2 : 0), 12)
        put64(UInt64(maximumBytes), 16)
        put64(UInt64(oldest), 24)
        put64(UInt64(next), 32)
        put64(UInt64(count), 40)
        put64(UInt64(lastAppendStart), 48)
        put32(lap, 56)
        put32(_CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<60])), 60)
    }

    /// Whether this header's fixed part (budget, flag) matches a configuration.
    func matches(maximumBytes: Int, overwritesOldMessages: Bool) -> Bool {
        self.maximumBytes == maximumBytes && self.overwritesOldMessages == overwritesOldMessages
    }
}
