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

    /// What ``firstRun(in:from:before:segmentEnd:lap:endsAtWrap:)`` found, and the
    /// work it took.
    struct RunSearch {
        /// The first run's start and how many records it holds, or `nil`.
        var run: (start: Int, count: Int)?
        /// How many times an offset was parsed (once for its layout, and again with
        /// its checksum for a record whose end continues a run).
        var slotsParsed = 0
        /// The bytes fed to CRC-32C (``_LogScanChecks/checksummedBytes``).
        var bytesChecked = 0
    }

    /// The first offset in `low..<end` (the loaded bytes: a header may claim a budget
    /// far larger than the file) where intact records of `lap` (and skip markers) run
    /// without a gap to `segmentEnd` or, with `endsAtWrap`, to a wrap marker or less
    /// than 8 bytes before it; and how many records that run holds (at least one).
    ///
    /// Where a run goes from an offset does not depend on where it started, so the
    /// offsets are settled from the last to the first, each once: what follows an
    /// offset is known when it is parsed. A record's check is made only when its end
    /// continues a run, by ``_LogScanChecks`` in bounded work however long the record
    /// claims to be. So the work is linear in `end - low`, even when a crafted file
    /// chains markers from every offset or claims a long record reaching a run at
    /// every offset (walking again from each offset made that quadratic: hours on a
    /// 1 MiB window), and every record of the run is checked: no budget runs out
    /// before the run's first record.
    static func firstRun(
        in image: _LogImage, from low: Int, before end: Int, segmentEnd: Int, lap: UInt32, endsAtWrap: Bool
    ) -> RunSearch {
        var search = RunSearch()
        guard low < end else { return search }
        let deadEnd: Int32 = -1
        var checks = _LogScanChecks(image)
        // For each offset in low..<end: the records from it to the end of its run, or
        // deadEnd when no run goes on from it.
        var outcomes = [Int32](repeating: deadEnd, count: end - low)
        // What follows at `position`: a run's end counts no record; an offset past
        // the loaded bytes holds nothing intact.
        func outcome(at position: Int) -> Int32 {
            if position == segmentEnd || (endsAtWrap && segmentEnd - position < _LogRecord.prefixSize) { return 0 }
            guard position >= low, position < end else { return deadEnd }
            return outcomes[position - low]
        }
        for position in stride(from: end - 1, through: low, by: -1) {
            if endsAtWrap && segmentEnd - position < _LogRecord.prefixSize {
                outcomes[position - low] = 0
                continue
            }
            search.slotsParsed += 1
            switch image.slot(at: position, segmentEnd: segmentEnd, lap: nil) {
            case .skip(let size):
                outcomes[position - low] = outcome(at: position + size)
            case .wrap where endsAtWrap:
                outcomes[position - low] = 0
            case .record(let length):
                let next = outcome(at: position + _LogRecord.prefixSize + length)
                guard next != deadEnd else { continue }
                search.slotsParsed += 1
                if case .record = checks.slot(at: position, segmentEnd: segmentEnd, lap: lap) {
                    outcomes[position - low] = next + 1
                }
            default:
                continue
            }
        }
        if let start = (low..<end).first(where: { outcomes[$0 - low] > 0 }) {
            search.run = (start, Int(outcomes[start - low]))
        }
        search.bytesChecked = checks.checksummedBytes
        return search
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
