/// Settling a header left by a writer that died holding the append lease: counting the
/// records it appended after its last checkpoint.
///
/// A leased header is a checkpoint (see ``_LogLease``): the records it counts are
/// intact, and the writer appended further records after `next` in ring order, each
/// where ``_LogHeader/place(recordSize:path:source:)`` put it, without touching a record
/// the checkpoint counts. So the appended records are found by walking on from `next`
/// the way appends move: a record that passes its check (bound to its offset and the
/// lap) is the next one; a wrap marker, or fewer than 8 bytes before the budget, moves
/// to offset 64 and the next lap; anything else is where the writer stopped.
///
/// Every byte after that point up to the checkpoint's oldest record is free space.
/// Settling for a writer zeroes it, for the same reason a torn append is zeroed: a
/// record of the current lap left there by the dead writer (after a torn one, when the
/// system wrote its pages out of order) could otherwise line up behind a later append
/// and pass as a newer message.
extension _LogHeader {
    /// What settling found.
    struct Settlement {
        /// The header with the lease flag cleared and the records found counted.
        var header: _LogHeader
        /// The free bytes after the last record found, clipped to the file's size:
        /// what a writer zeroes before it writes the settled header.
        var stale: [Range<Int>]
    }

    /// Finds the records appended after this leased header was written.
    ///
    /// Reads at most the bytes between `next` and the checkpoint's oldest record, in
    /// chunks of 1 MiB, and never past the end of the file, whatever the header says.
    func settled(file: _LogFile) throws(HoardError) -> Settlement {
        let start = Self.recordsStart
        var settled = self
        settled.isLeased = false
        let fileSize = try file.size()
        // Appends wrap at most once between checkpoints (a second wrap would evict a
        // record the checkpoint counts, which forces a new checkpoint first).
        let mayWrap = overwritesOldMessages && count > 0 && !wraps
        var inUpper = !wraps
        var position = count == 0 ? start : next
        var lap = count == 0 ? _LogRecord.lap(after: self.lap) : self.lap
        var bound = inUpper ? maximumBytes : oldest
        var reader = _ChunkReader(file: file, fileSize: fileSize)
        scan: while true {
            if inUpper && mayWrap && maximumBytes - position < _LogRecord.prefixSize {
                (position, lap, bound, inUpper) = (start, _LogRecord.lap(after: lap), oldest, false)
                continue
            }
            switch try reader.slot(at: position, segmentEnd: bound, lap: lap) {
            case .record(let length):
                if settled.count == 0 { settled.oldest = position }
                settled.count += 1
                settled.lap = lap
                settled.next = position + _LogRecord.prefixSize + length
                position = settled.next
            case .wrap where inUpper && mayWrap:
                (position, lap, bound, inUpper) = (start, _LogRecord.lap(after: lap), oldest, false)
            default:
                break scan
            }
        }
        if settled.count == 0 {
            (settled.oldest, settled.next, settled.lastAppendStart) = (start, start, start)
        } else if count == 0 {
            settled.lastAppendStart = settled.oldest
        }
        if overwritesOldMessages && count > 0 {
            if let ahead = try droppedAhead(after: settled, file: file, fileSize: fileSize) {
                settled.oldest = ahead.start
                settled.count += ahead.count
            }
            // A run that reaches offset 64 may have begun before the wrap point (in the
            // lap before, which lap 1 has too once the lap counter has overflowed).
            if settled.oldest == start, !settled.wraps,
                let upper = try droppedAheadBeforeWrap(after: settled, file: file, fileSize: fileSize)
            {
                settled.oldest = upper.start
                settled.count += upper.count
            }
        }
        // The free space after the last record, up to the oldest one around the ring.
        var stale: [Range<Int>] = []
        if settled.count == 0 {
            stale.append(start..<maximumBytes)
        } else if settled.wraps {
            stale.append(settled.next..<settled.oldest)
        } else {
            stale.append(settled.next..<maximumBytes)
            if overwritesOldMessages { stale.append(start..<settled.oldest) }
        }
        let clipped = stale.compactMap { range -> Range<Int>? in
            let end = min(range.upperBound, fileSize)
            return range.lowerBound < end ? range.lowerBound..<end : nil
        }
        return Settlement(header: settled, stale: clipped)
    }
}

extension _LogHeader {
    /// How far before the checkpoint's oldest record (and, for the records before the
    /// wrap point, before the budget or the end of a shorter file) settling looks for
    /// the records it dropped ahead, which bounds the work of opening a file;
    /// ``evictAhead(toFree:path:source:)`` drops no record that starts further back.
    static let droppedAheadSearchBytes = 1 << 20

    /// The records this checkpoint dropped ahead of the appends (see ``_LogLease``) that
    /// the dead writer had not overwritten yet: the longest run of intact records that
    /// ends exactly at the checkpoint's oldest record, in the same segment, after the
    /// records `settled` found.
    ///
    /// The writer's own header still counted them; only the checkpoint did not. Which of
    /// them the later appends overwrote is not written anywhere, so they are found the way
    /// ``_LogScan/resynchronize(_:from:segmentEnd:lap:)`` finds records after damage:
    /// the first offset where a record passes its check (its lap is the oldest record's)
    /// and a chain of such records lands exactly on the oldest record. Bytes that were not
    /// such a chain pass only by a CRC-32C collision. Runs that straddle the wrap point
    /// are not searched here, nor bytes more than ``droppedAheadSearchBytes`` before the
    /// oldest record, where ``evictAhead(toFree:path:source:)`` drops no record.
    /// The records before the wrap point that a run found by ``droppedAhead(after:file:fileSize:)``
    /// from offset 64 continues: a chain of intact records of the lap before, after the
    /// records `settled` found, that ends at a wrap marker or less than 8 bytes before
    /// the budget.
    fileprivate func droppedAheadBeforeWrap(
        after settled: _LogHeader, file: _LogFile, fileSize: Int
    ) throws(HoardError) -> (start: Int, count: Int)? {
        let end = min(maximumBytes, fileSize)
        let low = max(settled.next, end - Self.droppedAheadSearchBytes)
        guard low < end else { return nil }
        let image = try _LogImage.load([(low, end)], from: file)
        return Self.firstRun(
            in: image, from: low, before: end, segmentEnd: maximumBytes, lap: _LogRecord.lap(before: settled.lap),
            endsAtWrap: true
        ).run
    }

    fileprivate func droppedAhead(
        after settled: _LogHeader, file: _LogFile, fileSize: Int
    ) throws(HoardError) -> (start: Int, count: Int)? {
        let start = Self.recordsStart
        guard overwritesOldMessages, count > 0, oldest > start else { return nil }
        let target = oldest
        // Where the appends found stop in the oldest record's segment, if they reach it.
        let from = (wraps || settled.wraps) ? settled.next : start
        let low = max(from, target - Self.droppedAheadSearchBytes)
        guard low < target, target <= fileSize else { return nil }
        let image = try _LogImage.load([(low, target)], from: file)
        return Self.firstRun(
            in: image, from: low, before: target, segmentEnd: target, lap: oldestLap, endsAtWrap: false
        ).run
    }

    /// The first offset in `low..<end` (the loaded bytes: a header may claim a budget
    /// far larger than the file) where intact records of `lap` (and skip markers) run
    /// without a gap to `segmentEnd` or, with `endsAtWrap`, to a wrap marker or less
    /// than 8 bytes before it; and how many records that run holds (at least one).
    ///
    /// Where a run goes from an offset does not depend on where it started, so what
    /// each offset in `low..<end` leads to (the records from it to the run's end, or
    /// nothing intact) is kept once known, and a run from a later offset that reaches
    /// it stops there. Each offset is parsed at most once, plus at most one offset past
    /// `end` per offset before it: O(`end - low`) in all, even when a crafted file
    /// chains markers from every offset (starting over from each candidate made that
    /// quadratic, hours of work on a 1 MiB window). `slotsParsed` counts the offsets
    /// parsed.
    static func firstRun(
        in image: _LogImage, from low: Int, before end: Int, segmentEnd: Int, lap: UInt32, endsAtWrap: Bool
    ) -> (run: (start: Int, count: Int)?, slotsParsed: Int) {
        guard low < end else { return (nil, 0) }
        // For each offset in low..<end: unknown, a dead end, or the records from it to
        // the end of its run.
        let unknown: Int32 = -2
        let deadEnd: Int32 = -1
        var outcomes = [Int32](repeating: unknown, count: end - low)
        var slotsParsed = 0
        var path: [(position: Int, isRecord: Bool)] = []
        for candidate in low..<end where outcomes[candidate - low] == unknown {
            path.removeAll(keepingCapacity: true)
            var position = candidate
            var outcome: Int32
            walk: while true {
                if position >= low, position < end, outcomes[position - low] != unknown {
                    outcome = outcomes[position - low]
                    break
                }
                if position == segmentEnd || (endsAtWrap && segmentEnd - position < _LogRecord.prefixSize) {
                    outcome = 0
                    break
                }
                slotsParsed += 1
                switch image.slot(at: position, segmentEnd: segmentEnd, lap: lap) {
                case .record(let length):
                    path.append((position, true))
                    position += _LogRecord.prefixSize + length
                case .skip(let size):
                    path.append((position, false))
                    position += size
                case .wrap where endsAtWrap:
                    outcome = 0
                    break walk
                default:
                    outcome = deadEnd
                    break walk
                }
            }
            for step in path.reversed() {
                if outcome != deadEnd && step.isRecord { outcome += 1 }
                if step.position >= low && step.position < end { outcomes[step.position - low] = outcome }
            }
            // A wrap marker, the end or a dead end right at the candidate leaves no step.
            if path.isEmpty { outcomes[candidate - low] = outcome }
            if outcome > 0 { return ((candidate, Int(outcome)), slotsParsed) }
        }
        return (nil, slotsParsed)
    }
}

/// Reads a file forward in chunks for ``_LogHeader/settled(file:)``.
private struct _ChunkReader {
    static let chunkSize = 1 << 20

    let file: _LogFile
    let fileSize: Int
    var image = _LogImage(pieces: [])

    init(file: _LogFile, fileSize: Int) {
        self.file = file
        self.fileSize = fileSize
    }

    /// What starts at `position`, loading more of the file when the loaded bytes do not
    /// hold it; bytes past the end of the file make it `.invalid`.
    mutating func slot(at position: Int, segmentEnd: Int, lap: UInt32) throws(HoardError) -> _LogRecord.Slot {
        var slot = image.slot(at: position, segmentEnd: segmentEnd, lap: lap)
        if case .unavailable(let needed) = slot {
            let end = max(position, min(fileSize, segmentEnd, position + max(needed, Self.chunkSize)))
            image = try _LogImage.load([(position, end)], from: file)
            slot = image.slot(at: position, segmentEnd: segmentEnd, lap: lap)
            if case .unavailable = slot { return .invalid(reason: "the file ends before the record does") }
        }
        return slot
    }
}
