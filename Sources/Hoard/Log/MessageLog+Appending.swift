import Foundation

extension MessageLog {
    /// Appends a message. When this returns, the message is in the file.
    ///
    /// Without overwrite, a message that does not fit in the room left throws
    /// ``HoardError/Code/logFull`` and the file is unchanged. With overwrite, the
    /// oldest messages it needs room from are dropped first.
    ///
    /// ```swift
    /// try log.append(Event(name: "tap", at: .now))
    /// ```
    ///
    /// - Throws: ``HoardError/Code/encodingFailed`` from the codec;
    ///   ``HoardError/Code/messageLargerThanBudget`` when the encoded message plus its
    ///   8-byte prefix is larger than `maximumBytes - 64` (or 2 GiB), whatever the
    ///   overwrite setting; ``HoardError/Code/logFull``;
    ///   ``HoardError/Code/fileNotWritable`` when ``isWritable`` is `false`;
    ///   ``HoardError/Code/fileCorrupted`` when the records to evict are damaged;
    ///   ``HoardError/Code/ioFailed``.
    /// - Complexity: Five system calls without fsync (see ``MessageLog`` for why),
    ///   plus one read per 64 KiB of evicted records; no allocation but the codec's.
    public func append(_ message: Message) throws(HoardError) {
        let payload = try codec.encode(message)
        try _append(payload)
    }

    /// Appends messages in order, as one write: one lock, one header update, one
    /// write per contiguous run of records, and with ``Durability/fsync`` one sync.
    ///
    /// All or nothing for the errors it checks first: when one message is too large, or
    /// (without overwrite) they do not all fit, nothing is written. With overwrite, a
    /// batch larger than the log keeps its newest messages that fit.
    ///
    /// - Throws: As ``append(_:)``.
    public func append<Messages: Sequence>(contentsOf messages: Messages) throws(HoardError)
    where Messages.Element == Message {
        var payloads: [Data] = []
        payloads.reserveCapacity(messages.underestimatedCount)
        for message in messages { payloads.append(try codec.encode(message)) }
        try _append(contentsOf: payloads)
    }

    /// Throws when a payload of `count` bytes can never be appended.
    func _checkSize(_ count: Int) throws(HoardError) {
        let room = maximumBytes - _LogHeader.size - _LogRecord.prefixSize
        guard count <= room, count <= _LogRecord.maximumPayload else {
            throw HoardError(
                .messageLargerThanBudget,
                "the message encodes to \(count) bytes, but the largest message this log can hold is "
                    + "\(min(room, _LogRecord.maximumPayload)) bytes (maximumBytes \(maximumBytes) minus the 64-byte "
                    + "header and the 8-byte record prefix); nothing was written",
                path: path)
        }
    }

    /// Appends one encoded message.
    func _append(_ payload: Data) throws(HoardError) {
        try _checkSize(payload.count)
        try _withFileLock(exclusive: true) { state, fileHeader throws(HoardError) in
            var header = try _writableHeader(fileHeader, state: &state)
            var source = _WindowSlotSource(file: state.file, window: state.window)
            state.window = nil
            let placement = try header.place(
                recordSize: _LogRecord.prefixSize + payload.count, path: path, source: &source)
            state.window = source.window
            header.lastAppendStart = placement.offset

            // Header first: a crash before the record is written leaves a newest
            // record that fails its check (its slot holds older bytes), which the next
            // open or append drops.
            state.trusted = nil
            try state.file.writeMutableHeader(header)
            if durability == .fsync && placement.evicted > 0 { try state.file.synchronize() }
            if let marker = placement.wrapMarker { try Self._writeWrapMarker(at: marker, file: state.file) }
            try Self._writeRecord(payload, lap: placement.lap, at: placement.offset, file: state.file)
            if durability == .fsync { try state.file.synchronize() }
            state.trusted = header
        }
    }

    /// Appends encoded messages as one batch.
    func _append(contentsOf payloads: [Data]) throws(HoardError) {
        guard !payloads.isEmpty else { return }
        for payload in payloads { try _checkSize(payload.count) }
        try _withFileLock(exclusive: true) { state, fileHeader throws(HoardError) in
            var header = try _writableHeader(fileHeader, state: &state)
            var source = _BatchSlotSource(
                inner: _WindowSlotSource(file: state.file, window: state.window), lengths: payloads.map(\.count))
            state.window = nil
            var evicted = 0
            for (index, payload) in payloads.enumerated() {
                let placement = try header.place(
                    recordSize: _LogRecord.prefixSize + payload.count, path: path, source: &source)
                evicted += placement.evicted
                if let marker = placement.wrapMarker { source.pending[marker] = .wrap }
                source.pending[placement.offset] = .record(index: index, lap: placement.lap)
            }
            // The window may have been loaded over slots this batch is about to write:
            // it must not outlive the batch.
            state.window = nil
            let writes = source.pending.sorted { $0.key < $1.key }
            var firstSurvivor = (index: Int.max, offset: header.next)
            for (offset, write) in writes {
                if case .record(let index, _) = write, index < firstSurvivor.index { firstSurvivor = (index, offset) }
            }
            header.lastAppendStart = firstSurvivor.offset

            state.trusted = nil
            try state.file.writeMutableHeader(header)
            if durability == .fsync && evicted > 0 { try state.file.synchronize() }
            try Self._writeRuns(writes, payloads: payloads, file: state.file)
            if durability == .fsync { try state.file.synchronize() }
            state.trusted = header
        }
    }

    // MARK: Writing records

    /// Writes a wrap marker.
    static func _writeWrapMarker(at offset: Int, file: _LogFile) throws(HoardError) {
        try withUnsafeBytes(of: _LogRecord.wrapTag.littleEndian) { bytes throws(HoardError) in
            try file.write(bytes, at: offset)
        }
    }

    /// Writes one record, prefix and payload in one `pwritev`.
    static func _writeRecord(_ payload: Data, lap: UInt32, at offset: Int, file: _LogFile) throws(HoardError) {
        let result = payload.withUnsafeBytes { (payloadBytes) -> Result<Void, HoardError> in
            withUnsafeTemporaryAllocation(byteCount: _LogRecord.prefixSize, alignment: 4) { prefix in
                _LogRecord.writePrefix(into: prefix, offset: offset, payload: payloadBytes, lap: lap)
                return withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: 2) { buffers in
                    buffers[0] = UnsafeRawBufferPointer(prefix)
                    buffers[1] = payloadBytes
                    return Result { () throws(HoardError) in try file.write(UnsafeBufferPointer(buffers), at: offset) }
                }
            }
        }
        try result.get()
    }

    /// Writes a batch's records and markers, one `pwrite` per contiguous run.
    static func _writeRuns(
        _ writes: [(key: Int, value: _BatchSlotSource.Pending)], payloads: [Data], file: _LogFile
    ) throws(HoardError) {
        var run: [UInt8] = []
        var runStart = 0
        func flush() throws(HoardError) {
            guard !run.isEmpty else { return }
            try file.write(run, at: runStart)
            run.removeAll(keepingCapacity: true)
        }
        for (offset, write) in writes {
            if offset != runStart + run.count {
                try flush()
                runStart = offset
            }
            switch write {
            case .wrap:
                withUnsafeBytes(of: _LogRecord.wrapTag.littleEndian) { run.append(contentsOf: $0) }
            case .record(let index, let lap):
                let payload = payloads[index]
                let prefixStart = run.count
                run.append(contentsOf: repeatElement(0, count: _LogRecord.prefixSize))
                run.append(contentsOf: payload)
                run.withUnsafeMutableBytes { bytes in
                    let bodyStart = prefixStart + _LogRecord.prefixSize
                    let body = UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<(bodyStart + payload.count)])
                    _LogRecord.writePrefix(
                        into: UnsafeMutableRawBufferPointer(rebasing: bytes[prefixStart..<(prefixStart + _LogRecord.prefixSize)]),
                        offset: offset, payload: body, lap: lap)
                }
            }
        }
        try flush()
    }
}

/// The slots a batch evicts: its own records not yet written, then the file's.
struct _BatchSlotSource: _SlotSource {
    /// A record or marker the batch will write.
    enum Pending {
        case record(index: Int, lap: UInt32)
        case wrap
    }

    var inner: _WindowSlotSource
    /// The payload lengths of the batch's records, by index.
    let lengths: [Int]
    /// What the batch will write, by offset; evicted entries are removed.
    var pending: [Int: Pending] = [:]

    init(inner: _WindowSlotSource, lengths: [Int]) {
        self.inner = inner
        self.lengths = lengths
    }

    mutating func slot(at position: Int, segmentEnd: Int) throws(HoardError) -> _LogRecord.Slot {
        switch pending[position] {
        case .record(let index, _)?: return .record(length: lengths[index])
        case .wrap?: return .wrap
        case nil: return try inner.slot(at: position, segmentEnd: segmentEnd)
        }
    }

    mutating func passed(_ position: Int) {
        pending.removeValue(forKey: position)
    }

    mutating func oldestWrapped() {
        inner.oldestWrapped()
    }

    mutating func evictedAll() {
        // Every record is gone; a wrap marker the batch placed marks nothing now, and
        // records may be placed over it.
        pending = pending.filter { if case .wrap = $0.value { false } else { true } }
    }
}
