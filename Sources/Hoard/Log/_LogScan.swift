/// A full inspection of a log for ``MessageLog/verify()`` and ``MessageLog/recover()``:
/// every intact record, and the byte ranges that hold none.
///
/// Unlike ``_LogWalk``, a scan does not stop at damage: it looks for the next offset
/// where a record passes its check (its length fits, and the CRC-32C of its length and
/// payload, bound to its offset and the lap the segment must carry, matches) and goes
/// on from there.
/// A record found that way is intact with the probability of a CRC-32C collision on
/// bytes that are not a record, about 2^-32 per offset tried; records left over from an
/// older lap never pass, because their lap differs.
///
/// Trying an offset costs a bounded checksum however long the record it claims (see
/// ``_LogScanChecks``), so a scan is linear in the bytes it covers, damaged or not, and
/// finds every record a check of each claim in full would.
struct _LogScan {
    /// The intact records, oldest first.
    var records: [_LogWalk.Record] = []
    /// Ranges that should hold records but hold no intact one.
    var damaged: [Range<Int>] = []
    /// The torn end of the most recent append (one range, or two around the wrap point).
    var torn: [Range<Int>] = []
    /// The lap the scan used for the records from offset 64 (for a log without a
    /// wrap, all of them).
    var lap: UInt32 = 0
    /// For a scan without a header for a log that does not overwrite: how many intact
    /// records of the lap before lie past those of `lap` from offset 64, where a ring
    /// that wrapped keeps its oldest messages. They are not in `records` (a log that
    /// does not overwrite never wraps), so more than zero proves that the log was
    /// written by an instance that overwrites, and that it wrapped.
    var lapBeforeLeftOut = 0
    /// How many bytes the scan fed to CRC-32C, for tests that bound its work.
    var checksummedBytes = 0

    /// Scans the live region a valid header describes.
    static func scan(_ header: _LogHeader, image: _LogImage) -> _LogScan {
        var scan = _LogScan(lap: header.lap)
        guard header.count > 0 else { return scan }
        var checks = _LogScanChecks(image)
        let end = header.maximumBytes
        let start = _LogHeader.recordsStart
        var position = header.oldest
        var inUpper = header.wraps
        var lap = header.oldestLap
        var inLastAppend = false
        while inUpper || position != header.next {
            if position == header.lastAppendStart { inLastAppend = true }
            if inUpper && end - position < _LogRecord.prefixSize {
                (position, inUpper, lap) = (start, false, header.lap)
                continue
            }
            let segmentEnd = inUpper ? end : header.next
            switch checks.slot(at: position, segmentEnd: segmentEnd, lap: lap) {
            case .record(let length):
                scan.records.append(.init(offset: position, length: length, isInUpperSegment: inUpper))
                position += _LogRecord.prefixSize + length
            case .wrap where inUpper:
                (position, inUpper, lap) = (start, false, header.lap)
            case .skip(let size):
                position += size
            default:
                if inLastAppend {
                    scan.torn = inUpper ? [position..<end, start..<header.next] : [position..<header.next]
                    scan.checksummedBytes = checks.checksummedBytes
                    return scan
                }
                let resume = resynchronize(
                    &checks, from: position + _LogRecord.prefixSize, segmentEnd: segmentEnd, lap: lap)
                let damage = position..<(resume ?? segmentEnd)
                scan.damaged.append(damage)
                if damage.contains(header.lastAppendStart) { inLastAppend = true }
                if let resume {
                    position = resume
                } else if inUpper {
                    (position, inUpper, lap) = (start, false, header.lap)
                } else {
                    position = header.next
                }
            }
        }
        scan.checksummedBytes = checks.checksummedBytes
        return scan
    }

    /// The first offset from `start` where an intact record of `lap` begins.
    ///
    /// Only loaded bytes are tried: a header may state a budget far larger than the
    /// file (up to 256 TiB), and trying every offset up to it would never end.
    ///
    /// - Complexity: O(bytes tried): each offset costs a bounded checksum through
    ///   `checks`, whatever length it claims.
    static func resynchronize(_ checks: inout _LogScanChecks, from start: Int, segmentEnd: Int, lap: UInt32) -> Int? {
        var position = start
        let end = min(segmentEnd, checks.image.loadedEnd(at: start))
        while position + _LogRecord.prefixSize <= end {
            if case .record = checks.slot(at: position, segmentEnd: segmentEnd, lap: lap) { return position }
            position += 1
        }
        return nil
    }

    /// Scans `image` (the bytes from offset 64 to the budget) when the header is
    /// damaged, so the offsets and the lap are unknown.
    ///
    /// Tries the laps in `lapHints` (the damaged header's lap field) and the laps the
    /// first records from offset 64 imply, and keeps the one that finds the most
    /// records: those of the lap itself from offset 64 on, then those of the lap before
    /// it that lie after them (the segment before the wrap point). Records outside that
    /// order are left out. A lap implied by a record proves nothing by itself (any bytes
    /// imply some lap, and that record always passes it), so such a lap counts only if
    /// it finds at least two records. This finds every intact record when the header's
    /// lap field is intact, or when one of the first records from offset 64 is intact
    /// and so is one more record of its lap.
    ///
    /// When `overwrites` is `false` the records of the lap before are kept only when
    /// there are none of the lap itself; `lapBeforeLeftOut` counts those left out for
    /// the lap a ring would keep the most records with.
    static func scanWithoutHeader(image: _LogImage, maximumBytes: Int, overwrites: Bool, lapHints: [UInt32]) -> _LogScan
    {
        let start = _LogHeader.recordsStart
        var candidates = lapHints.map { (lap: $0, corroborate: false) }
        var position = start
        var checks = _LogScanChecks(image)
        chain: for _ in 0..<8 {
            switch image.slot(at: position, segmentEnd: maximumBytes, lap: nil) {
            case .record(let length):
                if let found = checks.impliedLap(at: position, segmentEnd: maximumBytes) {
                    candidates.append((found.lap, true))
                }
                position += _LogRecord.prefixSize + length
            case .skip(let size):
                position += size
            default:
                break chain
            }
        }
        var best = _LogScan()
        // The most records a ring would keep, and how many of them `best` leaves out
        // when this log does not overwrite.
        var ringBest = (count: 0, leftOut: 0)
        var tried: Set<UInt32> = []
        for (lap, corroborate) in candidates where tried.insert(lap).inserted {
            guard lap != 0 else { continue }  // no log with records has lap 0
            var current: [_LogWalk.Record] = []
            var previous: [_LogWalk.Record] = []
            var position = start
            // Only the loaded bytes: the budget may be far larger than the file.
            let end = min(maximumBytes, image.loadedEnd(at: start))
            while position + _LogRecord.prefixSize <= end {
                if let found = checks.impliedLap(at: position, segmentEnd: maximumBytes),
                    found.lap == lap || found.lap == _LogRecord.lap(before: lap)
                {
                    let record = _LogWalk.Record(
                        offset: position, length: found.length, isInUpperSegment: found.lap != lap)
                    if found.lap == lap { current.append(record) } else { previous.append(record) }
                    position = record.end
                } else {
                    position += 1
                }
            }
            guard !corroborate || current.count + previous.count >= 2 else { continue }
            let currentEnd = current.last?.end ?? start
            let beforeWrap = previous.filter { $0.offset >= currentEnd }
            let leftOut = !overwrites && !current.isEmpty ? beforeWrap.count : 0
            if beforeWrap.count + current.count > ringBest.count {
                ringBest = (beforeWrap.count + current.count, leftOut)
            }
            let records = (leftOut > 0 ? [] : beforeWrap) + current
            if records.count > best.records.count {
                best = _LogScan(records: records, damaged: [], torn: [], lap: lap)
            }
        }
        best.lapBeforeLeftOut = ringBest.leftOut
        best.checksummedBytes = checks.checksummedBytes
        return best
    }

    /// The header and the markers that make the intact records a valid log again.
    ///
    /// Records closer than 8 bytes to the one before them (no room for a marker
    /// between) are left out.
    func rebuilt(maximumBytes: Int, overwrites: Bool, lap: UInt32) -> (
        header: _LogHeader, markers: [(offset: Int, bytes: [UInt8])]
    ) {
        let start = _LogHeader.recordsStart
        var kept: [_LogWalk.Record] = []
        var markers: [(offset: Int, bytes: [UInt8])] = []
        for record in records {
            guard let previous = kept.last else {
                kept.append(record)
                continue
            }
            if previous.isInUpperSegment == record.isInUpperSegment {
                let gap = record.offset - previous.end
                guard gap == 0 || gap >= _LogRecord.prefixSize else { continue }
                markers += Self.skipMarkers(from: previous.end, to: record.offset)
            } else {
                let gap = record.offset - start
                guard previous.isInUpperSegment, gap == 0 || gap >= _LogRecord.prefixSize else { continue }
                if maximumBytes - previous.end >= _LogRecord.prefixSize {
                    // The bytes are copied inside the closure: the buffer is only valid there
                    // (returning it let an optimised build write whatever the stack held).
                    markers.append((previous.end, withUnsafeBytes(of: _LogRecord.wrapTag.littleEndian) { Array($0) }))
                }
                markers += Self.skipMarkers(from: start, to: record.offset)
            }
            kept.append(record)
        }
        var header = _LogHeader(maximumBytes: maximumBytes, overwritesOldMessages: overwrites)
        header.lap = lap
        if let first = kept.first, let last = kept.last {
            header.oldest = first.offset
            header.next = last.end
            header.count = kept.count
            // When only records from before the wrap point are left, they are the
            // whole log, and their lap is the log's.
            header.lap = last.isInUpperSegment ? _LogRecord.lap(before: lap) : lap
        }
        header.lastAppendStart = header.next
        return (header, markers)
    }

    /// Skip markers covering `from..<to` (nothing when they are equal).
    static func skipMarkers(from: Int, to: Int) -> [(offset: Int, bytes: [UInt8])] {
        var markers: [(offset: Int, bytes: [UInt8])] = []
        var position = from
        while position < to {
            var size = min(to - position, _LogRecord.maximumSkip)
            if (1..<_LogRecord.prefixSize).contains(to - position - size) { size -= _LogRecord.prefixSize }
            var bytes = [UInt8](repeating: 0, count: _LogRecord.prefixSize)
            bytes.withUnsafeMutableBytes {
                $0.storeBytes(of: _LogRecord.skipTag.littleEndian, toByteOffset: 0, as: UInt32.self)
                $0.storeBytes(of: UInt32(size).littleEndian, toByteOffset: 4, as: UInt32.self)
            }
            markers.append((position, bytes))
            position += size
        }
        return markers
    }
}
