import Foundation

extension MessageLog {
    /// The log's messages as an asynchronous sequence, oldest first, read from the file
    /// in chunks of about 256 KiB.
    ///
    /// ```swift
    /// for try await event in log.asyncMessages {
    ///     try await upload(event)
    /// }
    /// ```
    ///
    /// Iteration covers the messages that were in the log when it began, and ends at
    /// what was then the newest. Each chunk is read under a shared file lock, with
    /// every record checked, so appends can go on between chunks. In a log that
    /// overwrites, messages evicted by such appends before iteration reached them are
    /// skipped; no message is ever returned twice or out of order.
    ///
    /// - Note: Each chunk is read with blocking file I/O on the iterating task.
    public var asyncMessages: AsyncMessages { AsyncMessages(log: self) }

    /// An asynchronous sequence of a log's messages; see ``MessageLog/asyncMessages``.
    public struct AsyncMessages: AsyncSequence, Sendable {
        public typealias Element = Message
        public typealias Failure = HoardError

        let log: MessageLog

        /// Creates the iterator.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(log: log)
        }

        /// Reads the log chunk by chunk.
        public struct AsyncIterator: AsyncIteratorProtocol {
            public typealias Element = Message
            public typealias Failure = HoardError

            let log: MessageLog
            var chunk: [Data] = []
            var index = 0
            var cursor: _LogPosition?
            var end: _LogPosition?
            var finished = false

            init(log: MessageLog) {
                self.log = log
            }

            /// The next message, or `nil` after the last one.
            ///
            /// - Throws: As ``MessageLog/messages()``.
            public mutating func next() async throws(HoardError) -> Message? {
                try nextMessage()
            }

            /// The next message, or `nil` after the last one.
            ///
            /// - Throws: As ``MessageLog/messages()``.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(HoardError) -> Message? {
                try nextMessage()
            }

            private mutating func nextMessage() throws(HoardError) -> Message? {
                while index == chunk.count {
                    if finished { return nil }
                    let read = try log._readChunk(after: cursor, end: end)
                    (chunk, index, cursor, end, finished) = (read.payloads, 0, read.cursor, read.end, read.finished)
                }
                let payload = chunk[index]
                index += 1
                return try log.codec.decode(payload)
            }
        }
    }

    /// The size of the chunks ``asyncMessages`` reads.
    static var _chunkSize: Int { 256 << 10 }

    /// Reads the payloads of the records from `cursor` (the oldest when `nil`) up to
    /// about one chunk, and not past `end` (the newest record when iteration began).
    func _readChunk(
        after cursor: _LogPosition?, end: _LogPosition?
    ) throws(HoardError) -> (payloads: [Data], cursor: _LogPosition?, end: _LogPosition, finished: Bool) {
        try _withFileLock(exclusive: false) { state, header throws(HoardError) in
            let end = end ?? header.endPosition
            var position = max(cursor ?? header.oldestPosition, header.oldestPosition)
            let stop = min(end, header.endPosition)
            guard header.count > 0, position < stop else { return ([], nil, end, true) }
            // The live segment holding `position`: before the wrap point, or from 64.
            let inUpper = header.wraps && position.lap == _LogRecord.lap(before: header.lap)
            let segmentEnd = inUpper ? header.maximumBytes : header.next
            let lastAppend = header.lastAppendPosition
            let image = try _LogImage.load(
                [(position.offset, min(segmentEnd, position.offset + Self._chunkSize))], from: state.file)
            var payloads: [Data] = []
            var bytes = 0
            while position < stop && bytes < Self._chunkSize {
                if inUpper && header.maximumBytes - position.offset < _LogRecord.prefixSize {
                    return (payloads, _LogPosition(lap: header.lap, offset: _LogHeader.recordsStart), end, false)
                }
                var slot = image.slot(at: position.offset, segmentEnd: segmentEnd, lap: position.lap)
                if case .unavailable(let count) = slot {
                    if !payloads.isEmpty || position.offset + count > segmentEnd { break }
                    // One record larger than the chunk: read it alone.
                    let record = try _LogImage.load([(position.offset, position.offset + count)], from: state.file)
                    slot = record.slot(at: position.offset, segmentEnd: segmentEnd, lap: position.lap)
                    if case .record(let length) = slot {
                        payloads.append(record.payload(at: position.offset, length: length))
                        position.offset += count
                        bytes += count
                        continue
                    }
                    if case .unavailable = slot { slot = .invalid(reason: "the file ends before the record does") }
                }
                switch slot {
                case .record(let length):
                    payloads.append(image.payload(at: position.offset, length: length))
                    position.offset += _LogRecord.prefixSize + length
                    bytes += _LogRecord.prefixSize + length
                case .wrap where inUpper:
                    return (payloads, _LogPosition(lap: header.lap, offset: _LogHeader.recordsStart), end, false)
                case .skip(let size):
                    position.offset += size
                default:
                    if lastAppend <= position {
                        return (payloads, nil, end, true)  // a torn last append: the log ends before it
                    }
                    throw _LogHeader.corrupted(slot, at: position.offset, path: path, doing: "reading it")
                }
            }
            return (payloads, position, end, !(position < stop))
        }
    }
}
