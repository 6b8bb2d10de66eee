import Foundation

/// Opening the file, taking its locks, reading its header, and repairing a torn append:
/// what every public operation goes through.
extension MessageLog {
    /// Runs `body` with the instance's mutex and the file lock held, and the header
    /// just read, validated and settled (a header left by a writer that died holding
    /// the append lease counts the records appended after it; see ``_LogLease``). The
    /// instance's own lease, if held, is let go first.
    ///
    /// - Throws: ``HoardError/Code/fileCorrupted`` (offset 0) when the file no longer
    ///   holds a valid header, ``HoardError/Code/unsupportedFormat``, I/O errors, and
    ///   what `body` throws.
    func _withFileLock<T: Sendable>(
        exclusive: Bool, _ body: (inout _LogState, _LogHeader) throws(HoardError) -> T
    ) throws(HoardError) -> T {
        try state.withLock { (state: inout _LogState) throws(HoardError) -> T in
            _endLease(&state)
            try state.file.lock(exclusive: exclusive)
            defer { state.file.unlock() }
            let header = try _readLockedHeader(&state, persistingSettlement: exclusive)
            return try body(&state, header)
        }
    }

    /// Reads and validates the header under the file lock the caller holds, updates
    /// ``isWritable`` from it, and settles it (see ``_LogLease``); with
    /// `persistingSettlement`, under the exclusive lock of an instance that may write,
    /// the settled header is written.
    func _readLockedHeader(
        _ state: inout _LogState, persistingSettlement: Bool
    ) throws(HoardError) -> _LogHeader {
        let header: _LogHeader
        do throws(HoardError) {
            header = try Self._validHeader(state.file.readHeader().parsed, path: path)
        } catch {
            state.isWritable = false
            throw error
        }
        state.isWritable =
            !readsOnly && state.file.isWritable
            && header.matches(maximumBytes: maximumBytes, overwritesOldMessages: overwritesOldMessages)
        return try Self._settle(
            header, file: state.file, persist: persistingSettlement && state.isWritable, durability: durability)
    }

    /// The header to append after, once the log is known to accept appends and its
    /// most recent append is known to be intact (a torn one is dropped first).
    ///
    /// - Throws: ``HoardError/Code/fileNotWritable`` with the reason, or what checking
    ///   the previous append throws.
    func _writableHeader(_ header: _LogHeader, state: inout _LogState) throws(HoardError) -> _LogHeader {
        guard state.isWritable else { throw _notWritable(header, file: state.file) }
        return try Self._checkLastAppend(header, state: &state, durability: durability, log: log)
    }

    /// Why appends are refused.
    func _notWritable(_ header: _LogHeader, file: _LogFile) -> HoardError {
        Self._notWritable(
            header, file: file, readsOnly: readsOnly, maximumBytes: maximumBytes,
            overwritesOldMessages: overwritesOldMessages, path: path)
    }

    /// Why appends are refused, for an instance with these settings.
    static func _notWritable(
        _ header: _LogHeader, file: _LogFile, readsOnly: Bool, maximumBytes: Int, overwritesOldMessages: Bool,
        path: String
    ) -> HoardError {
        if readsOnly {
            return HoardError(
                .fileNotWritable, "this instance was opened with init(forReadingFrom:), which never writes", path: path)
        }
        if !file.isWritable {
            return HoardError(
                .fileNotWritable, "the log file or its file system is read-only; it can be read but not appended to",
                path: path)
        }
        return HoardError(
            .fileNotWritable,
            "the log was created with maximumBytes \(header.maximumBytes) and overwritesOldMessages "
                + "\(header.overwritesOldMessages), but this instance was opened with \(maximumBytes) and "
                + "\(overwritesOldMessages); it can be read but not appended to, and was not changed. Open it with "
                + "the settings it was created with, or delete the file to start a new log",
            path: path)
    }

    // MARK: Opening

    /// Prepares a file opened for a configured instance: writes the header of a new
    /// log, or checks an existing one and drops a torn last append.
    static func _open(
        _ file: _LogFile, maximumBytes: Int, overwritesOldMessages: Bool, durability: Durability,
        log: _MessageLogLogger
    ) throws(HoardError) -> _LogState {
        let path = log.path
        try file.lock(exclusive: true)
        defer { file.unlock() }
        let size = try file.size()
        if size <= _LogHeader.size, try file.read(at: 0, count: size).allSatisfy({ $0 == 0 }) {
            // A new file, or one whose creation stopped before its header reached the disk.
            guard file.isWritable else {
                throw HoardError(.fileNotWritable, "the log file is empty and cannot be written to", path: path)
            }
            let header = _LogHeader(maximumBytes: maximumBytes, overwritesOldMessages: overwritesOldMessages)
            try file.writeHeader(header)
            if durability == .fsync { try file.synchronize() }
            return _LogState(file: file, isWritable: true, trusted: header)
        }
        let parsed = try file.readHeader().parsed
        switch parsed {
        case .notALog:
            throw _headerError(parsed, path: path)
        case .unsupportedVersion, .damaged:
            log.openedDamaged(_headerError(parsed, path: path))
            return _LogState(file: file, isWritable: false)
        case .header(let header):
            guard file.isWritable,
                header.matches(maximumBytes: maximumBytes, overwritesOldMessages: overwritesOldMessages)
            else {
                log.openedReadOnly(
                    _notWritable(
                        header, file: file, readsOnly: false, maximumBytes: maximumBytes,
                        overwritesOldMessages: overwritesOldMessages, path: path))
                return _LogState(file: file, isWritable: false)
            }
            var state = _LogState(file: file, isWritable: true)
            do throws(HoardError) {
                let settled = try _settle(header, file: file, persist: true, durability: durability)
                _ = try _checkLastAppend(settled, state: &state, durability: durability, log: log)
            } catch  where error.code == .fileCorrupted {
                // Damage before a torn last append: reads report it, recover() repairs it;
                // opening must not fail, or there would be no instance to recover with.
            }
            return state
        }
    }

    /// The header, or the error that says why the file has none.
    static func _validHeader(_ parsed: _LogHeader.Parsed, path: String) throws(HoardError) -> _LogHeader {
        if case .header(let header) = parsed { return header }
        throw _headerError(parsed, path: path)
    }

    /// Why `parsed` is not a usable header.
    static func _headerError(_ parsed: _LogHeader.Parsed, path: String) -> HoardError {
        switch parsed {
        case .header:
            return HoardError(.fileCorrupted, "internal error: a valid header reported as invalid", path: path)
        case .notALog:
            return HoardError(
                .fileCorrupted,
                "the file is not a message log: it does not start with a 64-byte \"HOARDLOG\" header (or its first "
                    + "bytes are damaged); it was not changed",
                path: path, offset: 0)
        case .unsupportedVersion(let version):
            return HoardError(
                .unsupportedFormat,
                "the log is in format version \(version), which this version of Hoard cannot read or write (it knows "
                    + "version \(_LogHeader.currentVersion)); it was not changed. Open it with a newer Hoard",
                path: path)
        case .damaged(let reason, _, _):
            return HoardError(
                .fileCorrupted,
                "the log's header is damaged (\(reason)); no message can be read until recover() rebuilds it",
                path: path, offset: 0)
        }
    }

    // MARK: Torn appends

    /// Checks that the most recent append's records are all intact, unless this
    /// instance already knows they are, and drops them from the first torn one if not.
    ///
    /// - Returns: The header to go on with: `header`, or the repaired one.
    /// - Throws: ``HoardError/Code/fileCorrupted`` when the log is damaged before the
    ///   most recent append (so the torn part cannot be told apart from damage).
    static func _checkLastAppend(
        _ header: _LogHeader, state: inout _LogState, durability: Durability, log: _MessageLogLogger
    ) throws(HoardError) -> _LogHeader {
        let path = log.path
        if state.trusted == header { return header }
        state.window = nil
        let hasLastAppend =
            header.count > 0
            && (header.lastAppendStart != header.next || header.isInUpperSegment(header.lastAppendStart))
        if hasLastAppend {
            let image = try _LogImage.loadLive(header, from: header.lastAppendStart, file: state.file)
            let walk = try _LogWalk.run(header, image: image, from: header.lastAppendStart, path: path)
            if walk.tornAt != nil {
                let repaired = try _dropTornAppend(header, state: &state, durability: durability, path: path)
                log.droppedTornAppend(keeping: repaired.count, dropped: header.count - repaired.count)
                return repaired
            }
        }
        state.trusted = header
        return header
    }

    /// Drops the torn records of the most recent append: zeroes their bytes, then
    /// writes a header that ends the log at the last intact record.
    static func _dropTornAppend(
        _ header: _LogHeader, state: inout _LogState, durability: Durability, path: String
    ) throws(HoardError) -> _LogHeader {
        let image = try _LogImage.loadLive(header, from: header.oldest, file: state.file)
        let walk = try _LogWalk.run(header, image: image, from: header.oldest, path: path)
        guard let tornAt = walk.tornAt else {
            state.trusted = header
            return header
        }
        var repaired = header
        if let last = walk.records.last {
            repaired.count = walk.records.count
            repaired.next = last.end
            if last.isInUpperSegment { repaired.lap = _LogRecord.lap(before: header.lap) }
        } else {
            repaired.count = 0
            repaired.oldest = _LogHeader.recordsStart
            repaired.next = _LogHeader.recordsStart
        }
        repaired.lastAppendStart = repaired.next
        // Zero the dropped bytes first, so that nothing of them can pass a check later
        // should a new append of the same lap stop at the same place.
        let size = try state.file.size()
        if header.isInUpperSegment(tornAt) {
            try state.file.zero(tornAt..<max(tornAt, min(header.maximumBytes, size)))
            try state.file.zero(_LogHeader.recordsStart..<max(_LogHeader.recordsStart, min(header.next, size)))
        } else {
            try state.file.zero(tornAt..<max(tornAt, min(header.next, size)))
        }
        try state.file.writeMutableHeader(repaired)
        if durability == .fsync { try state.file.synchronize() }
        state.trusted = repaired
        state.window = nil
        return repaired
    }
}
