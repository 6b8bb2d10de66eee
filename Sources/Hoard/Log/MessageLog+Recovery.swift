import Foundation

extension MessageLog {
    /// Checks every record of the log and reports what is intact, damaged or torn.
    /// Changes nothing.
    ///
    /// ```swift
    /// let report = try log.verify()
    /// if !report.isIntact { print(report); try log.recover() }
    /// ```
    ///
    /// A damaged header is reported too (``MessageLogReport/isHeaderIntact`` is
    /// `false`), with the messages a scan of the file finds.
    ///
    /// - Throws: ``HoardError/Code/fileCorrupted`` when the file is not a message log,
    ///   ``HoardError/Code/unsupportedFormat``, ``HoardError/Code/ioFailed``.
    /// - Complexity: O(n) in the log's size, damaged or not: each offset tried after
    ///   damage costs a bounded checksum, whatever record length its bytes claim.
    public func verify() throws(HoardError) -> MessageLogReport {
        try state.withLock { (state: inout _LogState) throws(HoardError) -> MessageLogReport in
            _endLease(&state)
            try state.file.lock(exclusive: false)
            defer { state.file.unlock() }
            return try _inspect(state.file).report
        }
    }

    /// Repairs a damaged log so that it holds every intact message, oldest first, and
    /// accepts appends again.
    ///
    /// Damaged records are covered by skip markers in place (nothing intact moves), a
    /// torn last append is zeroed, and the header is rewritten to count what is left.
    /// A damaged header is rebuilt from this instance's `maximumBytes` and
    /// `overwritesOldMessages` and a scan of the file, which relies on the lap stored
    /// in the damaged header or implied by the record at offset 64; when both are
    /// lost, no message can be verified and the log is emptied. Rebuilding never drops
    /// an intact message because this instance is configured otherwise than the log
    /// was: it is refused, changing nothing, when the file is larger than this
    /// `maximumBytes` (the log was created with a larger one), or when this instance
    /// does not overwrite and the scan finds records of two laps, the newest from
    /// offset 64 and older ones past them (the log is a ring that wrapped). Recover
    /// such a log with an instance opened with the settings it was created with.
    ///
    /// Recovery runs under the exclusive file lock. It writes markers only over damaged
    /// bytes and the header last, so a crash during it leaves a log that `recover()` can
    /// repair again; with ``Durability/fsync`` it ends with a sync.
    ///
    /// - Returns: What was found before repairing; ``MessageLogReport/intactMessageCount``
    ///   messages remain.
    /// - Throws: ``HoardError/Code/fileNotWritable`` for a log created with other
    ///   settings (with a damaged header: a file larger than this instance's
    ///   `maximumBytes`, or a ring that wrapped when this instance does not overwrite)
    ///   or opened with ``init(forReadingFrom:codec:logger:)`` (never rewritten);
    ///   ``HoardError/Code/fileCorrupted`` when the file is not a message log;
    ///   ``HoardError/Code/unsupportedFormat``; ``HoardError/Code/ioFailed``.
    /// - Complexity: O(n) in the log's size, as ``verify()``.
    @discardableResult
    public func recover() throws(HoardError) -> MessageLogReport {
        try state.withLock { (state: inout _LogState) throws(HoardError) -> MessageLogReport in
            _endLease(&state)
            try state.file.lock(exclusive: true)
            defer { state.file.unlock() }
            let inspection = try _inspect(state.file)
            if let header = inspection.header {
                guard !readsOnly, state.file.isWritable,
                    header.matches(maximumBytes: maximumBytes, overwritesOldMessages: overwritesOldMessages)
                else { throw _notWritable(header, file: state.file) }
                if let settlement = inspection.settlement {
                    // A writer died holding the lease: clear what it left past its records.
                    for range in settlement.stale { try state.file.zero(range) }
                }
                if inspection.report.isIntact {
                    if inspection.settlement != nil {
                        try state.file.writeHeader(header)
                        if durability == .fsync { try state.file.synchronize() }
                    }
                    state.isWritable = true
                    return inspection.report
                }
            } else if readsOnly || !state.file.isWritable {
                throw HoardError(
                    .fileNotWritable, "the log's header is damaged, and this instance cannot write to rebuild it",
                    path: path)
            } else if case let size = try state.file.size(), size > maximumBytes {
                // A log never grows past its budget: this one was created with a larger
                // one, and a header rebuilt with this instance's would drop every message
                // past it.
                throw HoardError(
                    .fileNotWritable,
                    "the log's header is damaged, and the file (\(size) bytes) is larger than this instance's "
                        + "maximumBytes \(maximumBytes), so the log was created with a larger budget; rebuilding it "
                        + "with this one would drop the messages past it. Nothing was changed: recover it with an "
                        + "instance opened with the budget it was created with",
                    path: path)
            } else if inspection.scan.lapBeforeLeftOut > 0 {
                // A log that does not overwrite never wraps: records of the lap before
                // past the newest lap's records are the oldest messages of a ring, and a
                // header rebuilt for a log that does not overwrite would drop them.
                throw HoardError(
                    .fileNotWritable,
                    "the log's header is damaged, and its records show a log that overwrites old messages and "
                        + "has wrapped (\(inspection.scan.lapBeforeLeftOut) messages lie before the wrap point), "
                        + "but this instance does not overwrite; rebuilding it with this instance's settings "
                        + "would drop those messages. Nothing was changed: recover it with an instance opened "
                        + "with overwritesOldMessages true and the budget the log was created with",
                    path: path)
            }
            let (header, markers) = inspection.scan.rebuilt(
                maximumBytes: maximumBytes, overwrites: overwritesOldMessages, lap: inspection.scan.lap)
            let size = try state.file.size()
            for range in inspection.scan.torn {
                try state.file.zero(range.lowerBound..<max(range.lowerBound, min(range.upperBound, size)))
            }
            for marker in markers {
                try state.file.write(marker.bytes, at: marker.offset)
            }
            try state.file.writeHeader(header)
            if durability == .fsync { try state.file.synchronize() }
            state.trusted = header
            state.window = nil
            state.isWritable = true
            log.recovered(inspection.report)
            return inspection.report
        }
    }

    /// Scans the file under a lock the caller holds.
    ///
    /// A header left by a writer that died holding the append lease is settled in
    /// memory first; `settlement` says what settling found, for `recover()` to write.
    private func _inspect(_ file: _LogFile) throws(HoardError) -> (
        header: _LogHeader?, settlement: _LogHeader.Settlement?, scan: _LogScan, report: MessageLogReport
    ) {
        let parsed = try file.readHeader().parsed
        switch parsed {
        case .header(let leased) where leased.isLeased:
            let settlement = try leased.settled(file: file)
            let header = settlement.header
            let image = try _LogImage.loadLive(header, from: header.oldest, file: file)
            let scan = _LogScan.scan(header, image: image)
            return (header, settlement, scan, Self._report(scan, header: header))
        case .header(let header):
            let image = try _LogImage.loadLive(header, from: header.oldest, file: file)
            let scan = _LogScan.scan(header, image: image)
            return (header, nil, scan, Self._report(scan, header: header))
        case .damaged(_, let lap, _):
            let image = try _LogImage.load([(_LogHeader.recordsStart, maximumBytes)], from: file)
            let scan = _LogScan.scanWithoutHeader(
                image: image, maximumBytes: maximumBytes, overwrites: overwritesOldMessages, lapHints: [lap])
            var report = Self._report(scan, header: nil)
            report.maximumBytes = maximumBytes
            report.overwritesOldMessages = overwritesOldMessages
            return (nil, nil, scan, report)
        case .notALog, .unsupportedVersion:
            throw Self._headerError(parsed, path: path)
        }
    }

    private static func _report(_ scan: _LogScan, header: _LogHeader?) -> MessageLogReport {
        MessageLogReport(
            isHeaderIntact: header != nil,
            maximumBytes: header?.maximumBytes ?? 0,
            overwritesOldMessages: header?.overwritesOldMessages ?? false,
            headerMessageCount: header?.count,
            intactMessageCount: scan.records.count,
            intactBytes: scan.records.reduce(0) { $0 + _LogRecord.prefixSize + $1.length },
            damagedRanges: scan.damaged,
            tornAppendRanges: scan.torn)
    }
}
