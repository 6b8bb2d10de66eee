import Foundation

/// File bytes loaded from one or two ranges: the live part of a log (the segment
/// before the wrap point and the one from offset 64), or a chunk of it.
struct _LogImage {
    /// One loaded range: `bytes[0]` is the file's byte at offset `start`. Shorter than
    /// asked when the file ends early.
    struct Piece {
        var start: Int
        var bytes: [UInt8]
        var end: Int { start + bytes.count }
    }

    var pieces: [Piece]

    /// Loads the byte ranges `start ..< end` (at most up to the file's size; an
    /// inverted range loads nothing).
    static func load(_ ranges: [(start: Int, end: Int)], from file: _LogFile) throws(HoardError) -> _LogImage {
        let size = try file.size()
        var pieces: [Piece] = []
        for range in ranges {
            let end = min(range.end, size)
            let bytes = end > range.start ? try file.read(at: range.start, count: end - range.start) : []
            pieces.append(Piece(start: range.start, bytes: bytes))
        }
        return _LogImage(pieces: pieces)
    }

    /// The live records of `header` from `start` (the oldest record, or any record
    /// boundary after it) to `next`.
    static func loadLive(_ header: _LogHeader, from start: Int, file: _LogFile) throws(HoardError) -> _LogImage {
        guard header.count > 0, start != header.next || header.isInUpperSegment(start) else {
            return _LogImage(pieces: [])
        }
        if header.isInUpperSegment(start) {
            return try load([(start, header.maximumBytes), (_LogHeader.recordsStart, header.next)], from: file)
        }
        return try load([(start, header.next)], from: file)
    }

    /// What starts at `position`; `.unavailable` when its bytes were not loaded.
    func slot(at position: Int, segmentEnd: Int, lap: UInt32?) -> _LogRecord.Slot {
        for piece in pieces where piece.start <= position && position < max(piece.end, piece.start + 1) {
            return piece.bytes.withUnsafeBytes { bytes in
                _LogRecord.slot(in: bytes, base: piece.start, at: position, segmentEnd: segmentEnd, lap: lap)
            }
        }
        return .unavailable(count: _LogRecord.prefixSize)
    }

    /// Appends to `records` the run of consecutive intact records that starts at
    /// `position` inside one loaded piece, up to `limit` records in all, and returns
    /// where the run stopped: at the first offset that holds anything but an intact
    /// record of `lap` wholly before `segmentEnd` and loaded (a marker, damage, the
    /// end of the segment or of the loaded bytes), which the caller then parses with
    /// ``slot(at:segmentEnd:lap:)``. Accepts exactly what that method reports as
    /// `.record`, in one pass over the bytes, without building a slot per record.
    ///
    /// - Returns: The offset after the last record appended (`position` when none
    ///   was), and whether one of them started at `lastAppendStart`.
    func appendRecords(
        from position: Int, segmentEnd: Int, lap: UInt32, isInUpperSegment: Bool, limit: Int,
        lastAppendStart: Int, into records: inout [_LogWalk.Record]
    ) -> (position: Int, passedLastAppendStart: Bool) {
        for piece in pieces where piece.start <= position && position < piece.end {
            return piece.bytes.withUnsafeBytes { bytes in
                var position = position
                var passed = false
                let end = min(piece.end, segmentEnd)
                while records.count < limit, end - position >= _LogRecord.prefixSize {
                    let start = position - piece.start
                    let length = bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self).littleEndian
                    // Marker tags are above maximumPayload; a record must fit before `end`.
                    guard length <= UInt32(_LogRecord.maximumPayload),
                        Int(length) <= end - position - _LogRecord.prefixSize
                    else { break }
                    let check = bytes.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self).littleEndian
                    let payloadStart = start + _LogRecord.prefixSize
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[payloadStart..<(payloadStart + Int(length))])
                    guard _LogRecord.check(offset: position, length: length, payload: payload, lap: lap) == check
                    else { break }
                    if position == lastAppendStart { passed = true }
                    records.append(
                        _LogWalk.Record(offset: position, length: Int(length), isInUpperSegment: isInUpperSegment))
                    position += _LogRecord.prefixSize + Int(length)
                }
                return (position, passed)
            }
        }
        return (position, false)
    }

    /// The end of the loaded piece that holds `position`, or `position` itself when no
    /// piece holds it: no record can start at or after it.
    func loadedEnd(at position: Int) -> Int {
        for piece in pieces where piece.start <= position && position < piece.end { return piece.end }
        return position
    }

    /// Calls `body` with the payload of each of `records` (found in this image), in
    /// order, pointing into the loaded bytes.
    func forEachPayload(
        of records: ArraySlice<_LogWalk.Record>, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) rethrows {
        var remaining = records[...]
        for piece in pieces {
            try piece.bytes.withUnsafeBytes { bytes in
                while let record = remaining.first {
                    let start = record.offset + _LogRecord.prefixSize
                    guard piece.start <= start && start + record.length <= piece.end else { break }
                    try body(
                        UnsafeRawBufferPointer(
                            rebasing: bytes[(start - piece.start)..<(start - piece.start + record.length)]))
                    remaining = remaining.dropFirst()
                }
            }
        }
        precondition(remaining.isEmpty, "forEachPayload(of:_:) asked for a record the walk did not find")
    }

    /// The payload of the record at `position`, whose length is `length`: a new `Data`
    /// copied straight from the loaded bytes (one buffer, no per-byte iteration).
    func payload(at position: Int, length: Int) -> Data {
        let start = position + _LogRecord.prefixSize
        guard length > 0 else { return Data() }
        for piece in pieces where piece.start <= start && start + length <= piece.end {
            return piece.bytes.withUnsafeBytes { bytes in
                Data(bytes: bytes.baseAddress! + (start - piece.start), count: length)
            }
        }
        preconditionFailure("payload(at:length:) asked for a record the walk did not find")
    }
}
