/// The records of a log, found by walking from a record boundary to `next` and
/// checking every record's length, lap and checksum.
///
/// A record that fails its check inside the most recent append is a torn append (the
/// writer stopped between the header and the records): the walk stops there and
/// reports it in ``tornAt``. A record that fails before it is damage, and the walk
/// throws ``HoardError/Code/fileCorrupted`` with its offset.
struct _LogWalk {
    /// A record the walk found.
    struct Record {
        var offset: Int
        var length: Int
        /// Whether it lies before the wrap point (and carries the previous lap).
        var isInUpperSegment: Bool
        var end: Int { offset + _LogRecord.prefixSize + length }
    }

    var records: [Record] = []
    /// Where the torn part of the most recent append begins, if the walk found one.
    var tornAt: Int?

    /// Walks from `start` (the oldest record, or the first record of the most recent
    /// append) to `header.next`.
    ///
    /// - Throws: ``HoardError/Code/fileCorrupted`` at the first damaged record before
    ///   the most recent append, or when the records do not end where the header says.
    static func run(_ header: _LogHeader, image: _LogImage, from start: Int, path: String) throws(HoardError)
        -> _LogWalk
    {
        var walk = _LogWalk()
        if start == header.oldest {
            // A walk of the whole log finds the header's count (or throws); the budget
            // bounds what a damaged count could make it reserve.
            walk.records.reserveCapacity(min(header.count, header.maximumBytes / _LogRecord.prefixSize))
        }
        let end = header.maximumBytes
        var position = start
        var inUpper = header.isInUpperSegment(start)
        var lap = inUpper ? _LogRecord.lap(before: header.lap) : header.lap
        var inLastAppend = false
        while inUpper || position != header.next {
            if position == header.lastAppendStart { inLastAppend = true }
            if inUpper && end - position < _LogRecord.prefixSize {
                (position, inUpper, lap) = (_LogHeader.recordsStart, false, header.lap)
                continue
            }
            // The common case, a run of intact records, in one pass; what stops it is
            // parsed below.
            let run = image.appendRecords(
                from: position, segmentEnd: inUpper ? end : header.next, lap: lap, isInUpperSegment: inUpper,
                limit: header.count, lastAppendStart: header.lastAppendStart, into: &walk.records)
            if run.position != position {
                position = run.position
                inLastAppend = inLastAppend || run.passedLastAppendStart
                continue
            }
            var slot = image.slot(at: position, segmentEnd: inUpper ? end : header.next, lap: lap)
            if case .unavailable = slot { slot = .invalid(reason: "the file ends before the record does") }
            switch slot {
            case .record(let length) where walk.records.count < header.count:
                walk.records.append(Record(offset: position, length: length, isInUpperSegment: inUpper))
                position += _LogRecord.prefixSize + length
            case .wrap where inUpper:
                (position, inUpper, lap) = (_LogHeader.recordsStart, false, header.lap)
            case .skip(let size):
                position += size
            default:
                if inLastAppend {
                    walk.tornAt = position
                    return walk
                }
                throw _LogHeader.corrupted(slot, at: position, path: path, doing: "reading it")
            }
        }
        if start == header.oldest && walk.records.count != header.count {
            throw HoardError(
                .fileCorrupted,
                "the log is damaged: its header counts \(header.count) messages but \(walk.records.count) were found; "
                    + "recover() keeps every intact message",
                path: path, offset: position)
        }
        return walk
    }
}
