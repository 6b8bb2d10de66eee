/// The check of a record at any offset of a ``_LogImage``, in bounded work per offset
/// however long the record claims to be: what lets a scan that tries every offset
/// after damage stay linear.
///
/// ``slot(at:segmentEnd:lap:)`` and ``impliedLap(at:segmentEnd:)`` return exactly what
/// ``_LogImage/slot(at:segmentEnd:lap:)`` and the check bytes do, bit for bit: the
/// checksum of a record's payload comes from ``_CRC32CRanges`` over the loaded piece
/// (the same CRC-32C, joined from stored prefixes), not from its bytes one by one. So
/// a crafted file that claims a record reaching the end of the segment at every offset
/// costs a bounded checksum per offset, not the whole claim.
struct _LogScanChecks {
    /// The loaded bytes.
    let image: _LogImage
    /// Ranges of each of `image.pieces`, at the same index.
    private var ranges: [_CRC32CRanges]
    /// How many record prefixes (offset and length, 12 bytes) were checksummed.
    private var prefixesChecksummed = 0

    init(_ image: _LogImage) {
        self.image = image
        self.ranges = image.pieces.map { _CRC32CRanges($0.bytes) }
    }

    /// How many bytes the checks have fed to CRC-32C: for tests that bound a scan's
    /// work.
    var checksummedBytes: Int {
        ranges.reduce(12 * prefixesChecksummed) { $0 + $1.checksummedBytes }
    }

    /// What starts at `position`, checked for `lap`: the same as
    /// ``_LogImage/slot(at:segmentEnd:lap:)``.
    ///
    /// - Complexity: At most 12 + ``_CRC32CRanges/maximumBytesPerRange`` bytes
    ///   checksummed and one shift, besides prefixes stored once per piece.
    mutating func slot(at position: Int, segmentEnd: Int, lap: UInt32) -> _LogRecord.Slot {
        let (layout, record) = checked(at: position, segmentEnd: segmentEnd)
        if let record, record.checksum ^ lap != record.check {
            return .invalid(reason: "the record's checksum does not match its bytes")
        }
        return layout
    }

    /// The lap the record at `position` was written in, read from its check, when a
    /// record's layout (length fitting before `segmentEnd`, bytes loaded) starts there.
    ///
    /// - Complexity: As ``slot(at:segmentEnd:lap:)``.
    mutating func impliedLap(at position: Int, segmentEnd: Int) -> (lap: UInt32, length: Int)? {
        guard case (.record(let length), let record?) = checked(at: position, segmentEnd: segmentEnd) else {
            return nil
        }
        // check = checksum ^ lap, so lap = check ^ checksum.
        return (record.checksum ^ record.check, length)
    }

    /// What starts at `position` without its checksum compared (as
    /// ``_LogImage/slot(at:segmentEnd:lap:)`` parses it with no lap), and for a
    /// record, the checksum of its offset, length and payload and its check field.
    private mutating func checked(at position: Int, segmentEnd: Int) -> (
        layout: _LogRecord.Slot, record: (checksum: UInt32, check: UInt32)?
    ) {
        // The piece _LogImage.slot(at:segmentEnd:lap:) reads: the first that holds `position`.
        guard
            let index = image.pieces.firstIndex(where: {
                $0.start <= position && position < max($0.end, $0.start + 1)
            })
        else { return (.unavailable(count: _LogRecord.prefixSize), nil) }
        let piece = image.pieces[index]
        let layout = piece.bytes.withUnsafeBytes {
            _LogRecord.slot(in: $0, base: piece.start, at: position, segmentEnd: segmentEnd, lap: nil)
        }
        guard case .record(let length) = layout else { return (layout, nil) }
        let start = position - piece.start
        let check = piece.bytes.withUnsafeBytes {
            $0.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self).littleEndian
        }
        prefixesChecksummed += 1
        let prefix = _LogRecord.prefixChecksum(offset: position, length: UInt32(length))
        let payload = (start + _LogRecord.prefixSize)..<(start + _LogRecord.prefixSize + length)
        return (layout, (ranges[index].update(prefix, payload), check))
    }
}
