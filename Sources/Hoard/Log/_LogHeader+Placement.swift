/// Where the records before the oldest one come from when an append must evict them:
/// the file (through a read-ahead window) for a single append, the file and the
/// batch's own not-yet-written records for `append(contentsOf:)`.
protocol _SlotSource {
    /// What starts at `position` (a live offset at or after the oldest record), without
    /// checking checksums: eviction needs only the layout.
    mutating func slot(at position: Int, segmentEnd: Int) throws(HoardError) -> _LogRecord.Slot
    /// The record or marker at `position` has been evicted or stepped over.
    mutating func passed(_ position: Int)
    /// The oldest record moved from the end of the file back to offset 64: bytes read
    /// before this point may be rewritten from now on.
    mutating func oldestWrapped()
    /// Every record has been evicted.
    mutating func evictedAll()
}

/// Where one record goes.
struct _Placement {
    /// The record's offset.
    var offset: Int
    /// The lap its check must carry.
    var lap: UInt32
    /// The offset of the wrap marker the append must write, if it wrapped with 8 or
    /// more bytes left before the end of the budget.
    var wrapMarker: Int?
    /// How many records it evicted.
    var evicted: Int
}

extension _LogHeader {
    /// Reserves room for a record of `size` bytes (prefix included) and updates the
    /// offsets, count and lap to include it.
    ///
    /// The rule, for a log that overwrites: a record goes at `next` if it fits before
    /// the budget, otherwise at offset 64 (after a wrap marker at `next`). Either way
    /// the oldest records it would overlap are evicted first, oldest first, and never
    /// the record itself, so a log that has wrapped is never empty. A log that does not
    /// overwrite never evicts and never wraps.
    ///
    /// - Throws: ``HoardError/Code/messageLargerThanBudget``, ``HoardError/Code/logFull``,
    ///   ``HoardError/Code/fileCorrupted`` when an evicted slot is not a record, or
    ///   what `source` throws. On a throw `self` may be partly updated: discard it.
    mutating func place(
        recordSize size: Int, path: String, source: inout some _SlotSource
    ) throws(HoardError) -> _Placement {
        let start = Self.recordsStart
        let room = maximumBytes - start
        guard size <= room else {
            throw HoardError(
                .messageLargerThanBudget,
                "a record of \(size) bytes (message and 8-byte prefix) cannot fit in a log whose budget of "
                    + "\(maximumBytes) bytes leaves \(room) bytes after the header; raise maximumBytes or "
                    + "append smaller messages",
                path: path)
        }
        var placement = _Placement(offset: next, lap: lap, wrapMarker: nil, evicted: 0)
        if count == 0 {
            oldest = start
            next = start
            lap = _LogRecord.lap(after: lap)
        } else if !overwritesOldMessages {
            guard next + size <= maximumBytes else {
                throw HoardError(
                    .logFull,
                    "the log is full: a record of \(size) bytes does not fit in the \(maximumBytes - next) "
                        + "bytes left, and it does not overwrite old messages; nothing was written",
                    path: path)
            }
        } else if next + size > maximumBytes {
            let wrapAt = next
            while count > 0 && wraps {
                try evictOldest(path: path, source: &source)
                placement.evicted += 1
            }
            while count > 0 && oldest < start + size {
                try evictOldest(path: path, source: &source)
                placement.evicted += 1
            }
            if count > 0 && maximumBytes - wrapAt >= _LogRecord.prefixSize { placement.wrapMarker = wrapAt }
            lap = _LogRecord.lap(after: lap)
            next = start
        } else {
            while count > 0 && wraps && oldest < next + size {
                try evictOldest(path: path, source: &source)
                placement.evicted += 1
            }
        }
        if count == 0 { oldest = next }
        placement.offset = next
        placement.lap = lap
        next += size
        count += 1
        return placement
    }

    /// Removes the oldest record and moves `oldest` to the next record, over any
    /// marker.
    mutating func evictOldest(path: String, source: inout some _SlotSource) throws(HoardError) {
        let inUpper = wraps
        let slot = try source.slot(at: oldest, segmentEnd: inUpper ? maximumBytes : next)
        guard case .record(let length) = slot else {
            throw Self.corrupted(slot, at: oldest, path: path, doing: "making room for a new message")
        }
        source.passed(oldest)
        oldest += _LogRecord.prefixSize + length
        count -= 1
        if count == 0 {
            oldest = next
            source.evictedAll()
            return
        }
        try normalizeOldest(inUpper: inUpper, path: path, source: &source)
    }

    /// The bytes an append may write from `next` on before it must evict a record: up
    /// to the oldest record around the ring, or up to the budget for a log that does
    /// not overwrite or holds nothing.
    var freeBytes: Int {
        let start = Self.recordsStart
        guard count > 0 else { return maximumBytes - start }
        guard overwritesOldMessages else { return maximumBytes - next }
        return wraps ? oldest - next : (maximumBytes - next) + (oldest - start)
    }

    /// Evicts the oldest records until `bytes` are free after `next` (or one record is
    /// left), for a lease checkpoint that drops records ahead of the appends that will
    /// overwrite them (see ``_LogLease``), but only as far as settling finds them again
    /// after a crash (see ``droppedAheadSearchBytes``): the records it drops in the
    /// segment it stops in start at most that many bytes before the new oldest record,
    /// and those it drops before the wrap point, in the last that many bytes before the
    /// budget. It stops before the first record that would break that or, when that
    /// would leave the oldest record at offset 64 with others after it (see below),
    /// where it last could stop: so it may free fewer bytes, or evict nothing. An
    /// append that evicts more than was dropped writes a new checkpoint first.
    ///
    /// - Returns: How many records it evicted. `source` may have passed more.
    mutating func evictAhead(toFree bytes: Int, path: String, source: inout some _SlotSource) throws(HoardError) -> Int
    {
        let start = Self.recordsStart
        let reach = Self.droppedAheadSearchBytes
        let firstDropped = oldest
        // Where the dropped records of the segment `oldest` is in begin.
        var segmentStart = oldest
        var kept = (header: self, evicted: 0)
        var evicted = 0
        // Never stop at offset 64 (but with one record left): records dropped ahead are
        // found again after a crash only when they lie in the oldest record's own segment.
        while count > 1 && (freeBytes < bytes || oldest == start) {
            let inUpper = wraps
            try evictOldest(path: path, source: &source)
            evicted += 1
            if inUpper && !wraps {
                // Past the wrap point: every record before it is dropped.
                guard maximumBytes - firstDropped <= reach else { break }
                segmentStart = start
            }
            guard oldest - segmentStart <= reach else { break }
            if oldest != start || count == 1 { kept = (self, evicted) }
        }
        self = kept.header
        return kept.evicted
    }

    /// Moves `oldest` over markers to the record they lead to.
    mutating func normalizeOldest(inUpper: Bool, path: String, source: inout some _SlotSource) throws(HoardError) {
        var inUpper = inUpper
        while true {
            if inUpper && maximumBytes - oldest < _LogRecord.prefixSize {
                oldest = Self.recordsStart
                inUpper = false
                source.oldestWrapped()
                continue
            }
            let slot = try source.slot(at: oldest, segmentEnd: inUpper ? maximumBytes : next)
            switch slot {
            case .record:
                return
            case .wrap where inUpper:
                source.passed(oldest)
                oldest = Self.recordsStart
                inUpper = false
                source.oldestWrapped()
            case .skip(let size):
                source.passed(oldest)
                oldest += size
            default:
                throw Self.corrupted(slot, at: oldest, path: path, doing: "making room for a new message")
            }
        }
    }

    /// The error for a slot that should have been a record.
    static func corrupted(_ slot: _LogRecord.Slot, at offset: Int, path: String, doing: String) -> HoardError {
        let reason: String
        switch slot {
        case .invalid(let text): reason = text
        case .unavailable: reason = "the file ends before the record does"
        case .wrap: reason = "a wrap marker stands where a record should"
        case .skip: reason = "a skip marker stands where a record should"
        case .record: reason = "a record stands where none should"
        }
        return HoardError(
            .fileCorrupted,
            "the log is damaged (\(reason)) and was found so while \(doing); recover() keeps every intact message",
            path: path, offset: offset)
    }
}
