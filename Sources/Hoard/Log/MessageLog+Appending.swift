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
    ///   ``HoardError/Code/storageFull`` when the storage is full (as the disk store
    ///   reports it); ``HoardError/Code/ioFailed``.
    /// - Complexity: One `pwritev` without fsync while the instance holds its append
    ///   lease (see ``MessageLog``); plus, per 64 KiB of evicted records, a header write
    ///   and a read; and, once a millisecond at most, taking and letting go of the lease
    ///   (lock, header read and write, unlock). No allocation but the codec's.
    public func append(_ message: Message) throws(HoardError) {
        let payload = try codec.encode(message)
        try _append(payload)
    }

    /// Appends messages in order, as one write: one write per contiguous run of
    /// records, a header write when the batch evicts what the file's header counts,
    /// and with ``Durability/fsync`` one sync.
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

    /// Appends one encoded message under the append lease: one `pwritev` of the
    /// record, preceded by a checkpoint header only when the append evicts a record the
    /// file's checkpoint still counts (see ``_LogLease``).
    func _append(_ payload: Data) throws(HoardError) {
        try _checkSize(payload.count)
        try _withLease { state, lease, header throws(HoardError) in
            var placed = header
            let placement = try placed.place(
                recordSize: _LogRecord.prefixSize + payload.count, path: path, source: &state.evictions)
            // The append starts with its wrap marker when it writes one that stays live:
            // a crash between the header and the marker then leaves a torn last append
            // (dropped on open), not a gap where the marker should be.
            placed.lastAppendStart =
                placement.wrapMarker.flatMap { placed.isInUpperSegment($0) ? $0 : nil }
                ?? placement.offset
            do throws(HoardError) {
                // The wrap marker first: it lands in free space past the newest record,
                // which no header counts yet, and a checkpoint that drops ahead every
                // record before it needs it in the file, so that settling finds them again.
                if let marker = placement.wrapMarker { try Self._writeWrapMarker(at: marker, file: state.file) }
                if placement.evicted > lease.aheadCount {
                    try _writeCheckpoint(
                        placed, pending: placement, payloadLength: payload.count, state: &state, lease: &lease)
                } else {
                    lease.aheadCount -= placement.evicted
                }
                try Self._writeRecord(payload, lap: placement.lap, at: placement.offset, file: state.file)
                if durability == .fsync { try state.file.synchronize() }
            } catch {
                _abandonLease(&state)
                throw error
            }
            header = placed
        }
    }

    /// Appends encoded messages as one batch under the append lease: one write per
    /// contiguous run of records, preceded by a checkpoint header when the batch evicts
    /// a record the file's checkpoint still counts.
    func _append(contentsOf payloads: [Data]) throws(HoardError) {
        guard !payloads.isEmpty else { return }
        for payload in payloads { try _checkSize(payload.count) }
        try _withLease { state, lease, header throws(HoardError) in
            var placed = header
            var source = _BatchSlotSource(
                inner: state.evictions, payloads: payloads)
            state.window = nil
            var evicted = 0
            for index in payloads.indices {
                let placement = try placed.place(
                    recordSize: _LogRecord.prefixSize + payloads[index].count, path: path, source: &source)
                evicted += placement.evicted
                if let marker = placement.wrapMarker { source.pending.append(.init(offset: marker, record: nil)) }
                source.pending.append(.init(offset: placement.offset, record: (index, placement.lap)))
            }
            // The window may have been loaded over slots this batch is about to write:
            // it must not outlive the batch.
            state.window = nil
            let live = source.pending[source.head...]
            // As for one append: a leading wrap marker that stays live starts the batch.
            let firstRecord = live.first { $0.record != nil }?.offset ?? placed.next
            if let first = live.first, first.record == nil, placed.isInUpperSegment(first.offset) {
                placed.lastAppendStart = first.offset
            } else {
                placed.lastAppendStart = firstRecord
            }
            do throws(HoardError) {
                if evicted > lease.aheadCount {
                    // No records dropped ahead: the oldest ones may be this batch's own,
                    // which are not in the file yet.
                    var checkpoint = placed
                    checkpoint.isLeased = true
                    try state.file.writeMutableHeader(checkpoint)
                    if durability == .fsync { try state.file.synchronize() }
                    lease.aheadCount = 0
                } else {
                    lease.aheadCount -= evicted
                }
                try Self._writeRuns(live, payloads: payloads, file: state.file)
                if durability == .fsync { try state.file.synchronize() }
            } catch {
                _abandonLease(&state)
                throw error
            }
            header = placed
        }
    }

    /// Writes a new checkpoint: `placed` (the header after the append in progress,
    /// whose record is not written yet) minus the oldest records that fill
    /// ``_LogLease/aheadBytes(maximumBytes:)``, which later appends may then overwrite
    /// without a header write. With ``Durability/fsync`` it syncs before the append
    /// overwrites what the previous checkpoint counted.
    ///
    /// - Parameter pending: Where the append will write its record (of
    ///   `payloadLength` bytes) and wrap marker, which are not in the file yet and which
    ///   dropping records ahead may step onto.
    private func _writeCheckpoint(
        _ placed: _LogHeader, pending: _Placement, payloadLength: Int, state: inout _LogState,
        lease: inout _LogLease
    ) throws(HoardError) {
        var checkpoint = placed
        checkpoint.isLeased = true
        // A fresh read-ahead each time: appends since the last checkpoint have
        // overwritten the records it dropped ahead, which a kept window would still hold.
        var ahead = _WindowSlotSource(file: state.file, pending: pending, payloadLength: payloadLength)
        let dropped = try checkpoint.evictAhead(
            toFree: _LogLease.aheadBytes(maximumBytes: maximumBytes), path: path, source: &ahead)
        // Dropping ahead may take the records before the wrap point, and with them the
        // wrap marker the append starts with: the append then starts at its record.
        if !checkpoint.isLive(checkpoint.lastAppendStart) { checkpoint.lastAppendStart = pending.offset }
        try state.file.writeMutableHeader(checkpoint)
        if durability == .fsync { try state.file.synchronize() }
        lease.aheadCount = dropped
    }

    // MARK: Writing records

    /// Writes a wrap marker.
    static func _writeWrapMarker(at offset: Int, file: _LogFile) throws(HoardError) {
        try withUnsafeBytes(of: _LogRecord.wrapTag.littleEndian) { bytes throws(HoardError) in
            try file.write(bytes, at: offset)
        }
    }

    /// The largest record ``_writeRecord(_:lap:at:file:)`` copies into one buffer for
    /// one `pwrite`; larger ones go out as prefix and payload in one `pwritev`, which
    /// costs the kernel more per call than the copy costs here for small records.
    static var _singleBufferRecordLimit: Int { 4096 }

    /// Writes one record, prefix and payload, in one system call.
    static func _writeRecord(_ payload: Data, lap: UInt32, at offset: Int, file: _LogFile) throws(HoardError) {
        let size = _LogRecord.prefixSize + payload.count
        let result = payload.withUnsafeBytes { (payloadBytes) -> Result<Void, HoardError> in
            if size <= _singleBufferRecordLimit {
                return withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { record in
                    _LogRecord.writePrefix(
                        into: UnsafeMutableRawBufferPointer(rebasing: record[0..<_LogRecord.prefixSize]),
                        offset: offset, payload: payloadBytes, lap: lap)
                    if let source = payloadBytes.baseAddress, !payloadBytes.isEmpty {
                        (record.baseAddress! + _LogRecord.prefixSize).copyMemory(
                            from: source, byteCount: payloadBytes.count)
                    }
                    return Result { () throws(HoardError) in try file.write(UnsafeRawBufferPointer(record), at: offset)
                    }
                }
            }
            return withUnsafeTemporaryAllocation(byteCount: _LogRecord.prefixSize, alignment: 4) { prefix in
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

    /// Writes a batch's records and markers, in ring order, one `pwrite` per run of
    /// contiguous slots.
    static func _writeRuns(
        _ writes: ArraySlice<_BatchSlotSource.Pending>, payloads: [Data], file: _LogFile
    ) throws(HoardError) {
        func size(_ write: _BatchSlotSource.Pending) -> Int {
            write.record.map { _LogRecord.prefixSize + payloads[$0.index].count } ?? 4
        }
        var first = writes.startIndex
        while first < writes.endIndex {
            var end = first
            var bytes = 0
            while end < writes.endIndex && writes[end].offset == writes[first].offset + bytes {
                bytes += size(writes[end])
                end += 1
            }
            var run = [UInt8](repeating: 0, count: bytes)
            run.withUnsafeMutableBytes { buffer in
                var at = 0
                for write in writes[first..<end] {
                    guard let (index, lap) = write.record else {
                        buffer.storeBytes(of: _LogRecord.wrapTag.littleEndian, toByteOffset: at, as: UInt32.self)
                        at += 4
                        continue
                    }
                    let payload = payloads[index]
                    let body = UnsafeMutableRawBufferPointer(
                        rebasing: buffer[(at + _LogRecord.prefixSize)..<(at + _LogRecord.prefixSize + payload.count)])
                    payload.withUnsafeBytes { body.copyMemory(from: $0) }
                    _LogRecord.writePrefix(
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + _LogRecord.prefixSize)]),
                        offset: write.offset, payload: UnsafeRawBufferPointer(body), lap: lap)
                    at += _LogRecord.prefixSize + payload.count
                }
            }
            try file.write(run, at: writes[first].offset)
            first = end
        }
    }
}

/// The slots a batch evicts: the file's, then its own records not yet written.
///
/// A batch evicts in ring order, so once the records that were in the file are gone it
/// evicts its own in the order it placed them: a queue with a head index is enough.
struct _BatchSlotSource: _SlotSource {
    /// A record (its payload's index and lap) or, when `record` is `nil`, a wrap marker
    /// that the batch will write.
    struct Pending {
        var offset: Int
        var record: (index: Int, lap: UInt32)?
    }

    var inner: _WindowSlotSource
    let payloads: [Data]
    /// What the batch placed, in ring order; those before `head` have been evicted.
    var pending: [Pending] = []
    var head = 0

    init(inner: _WindowSlotSource, payloads: [Data]) {
        self.inner = inner
        self.payloads = payloads
        pending.reserveCapacity(payloads.count)
    }

    mutating func slot(at position: Int, segmentEnd: Int) throws(HoardError) -> _LogRecord.Slot {
        if head < pending.count && pending[head].offset == position {
            guard let record = pending[head].record else { return .wrap }
            return .record(length: payloads[record.index].count)
        }
        return try inner.slot(at: position, segmentEnd: segmentEnd)
    }

    mutating func passed(_ position: Int) {
        if head < pending.count && pending[head].offset == position { head += 1 }
    }

    mutating func oldestWrapped() {
        inner.oldestWrapped()
    }

    mutating func evictedAll() {
        // Every record is gone; a wrap marker the batch placed marks nothing now.
        head = pending.count
        inner.evictedAll()
    }
}
