/// CRC-32C of any range of one byte array, each in bounded work however long the
/// range: for scans that check many overlapping ranges of the same bytes.
///
/// Keeps the checksum of the bytes from the start to every multiple of ``stride``
/// (built lazily, as far as a range has reached: about 1.6% of the bytes in memory),
/// and joins two of those prefixes with ``_CRC32C/shift(_:byZeroBytes:)``: for a range
/// `s..<e`, `checksum(bytes[s..<e]) == prefix(e) ^ shift(prefix(s), e - s)`. Each
/// prefix is the nearest stored one continued over fewer than ``stride`` bytes. So
/// a range costs at most ``maximumBytesPerRange`` checksummed bytes and one shift,
/// plus, once over all calls, the bytes up to the furthest range end; the result is
/// exactly ``_CRC32C/update(_:_:)`` over the range's bytes.
struct _CRC32CRanges {
    /// The distance between stored prefixes.
    static let stride = 256
    /// Ranges up to this length are checksummed directly, which costs about what
    /// joining two prefixes does.
    static let directLength = 2 * stride
    /// The most bytes one range checksums directly (besides building the prefixes).
    static let maximumBytesPerRange = max(directLength, 2 * (stride - 1))

    /// The bytes whose ranges are checksummed.
    let bytes: [UInt8]
    /// `prefixes[k]` is the checksum of `bytes[0 ..< k * stride]`.
    private var prefixes: [UInt32] = [0]
    /// How many bytes this instance has fed to CRC-32C: for tests that bound a scan's
    /// work.
    private(set) var checksummedBytes = 0

    /// Ranges of `bytes` (shared, not copied).
    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The checksum of whatever `crc` was the checksum of, followed by
    /// `bytes[range]`: the same as ``_CRC32C/update(_:_:)`` over those bytes.
    ///
    /// - Parameter range: Inside `bytes.indices` (or empty at `bytes.count`).
    /// - Complexity: At most ``maximumBytesPerRange`` bytes checksummed and
    ///   O(log `range.count`) for the shift, plus the bytes not yet covered by stored
    ///   prefixes up to `range.upperBound`, once.
    mutating func update(_ crc: UInt32, _ range: Range<Int>) -> UInt32 {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "a range outside the bytes")
        if range.count <= Self.directLength {
            checksummedBytes += range.count
            return bytes.withUnsafeBytes { _CRC32C.update(crc, UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
        let start = prefix(upTo: range.lowerBound)
        let end = prefix(upTo: range.upperBound)
        return _CRC32C.shift(crc ^ start, byZeroBytes: range.count) ^ end
    }

    /// The checksum of `bytes[0 ..< offset]`, storing the prefixes up to it.
    private mutating func prefix(upTo offset: Int) -> UInt32 {
        let index = offset / Self.stride
        let stored = index * Self.stride
        // A local reference, so the closure reads it while it changes `prefixes`.
        let bytes = self.bytes
        return bytes.withUnsafeBytes { buffer in
            while prefixes.count <= index {
                let from = (prefixes.count - 1) * Self.stride
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[from..<(from + Self.stride)])
                prefixes.append(_CRC32C.update(prefixes[prefixes.count - 1], chunk))
                checksummedBytes += Self.stride
            }
            checksummedBytes += offset - stored
            return _CRC32C.update(prefixes[index], UnsafeRawBufferPointer(rebasing: buffer[stored..<offset]))
        }
    }
}
