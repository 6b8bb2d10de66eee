import Foundation

extension MessageLog {
    /// Every message in the log, oldest first.
    ///
    /// Reads the file under a shared lock, so appends by other instances wait for it and
    /// it sees every append that returned before it started. Every record's checksum is
    /// checked; a torn last append (left by a crash) is skipped.
    ///
    /// ```swift
    /// for event in try log.messages() { print(event.name) }
    /// ```
    ///
    /// - Throws: ``HoardError/Code/fileCorrupted`` with the offset of the first damaged
    ///   record (``recover()`` keeps every intact one); ``HoardError/Code/decodingFailed``
    ///   when the codec cannot decode a stored message (``messages(skippingUndecodable:)``
    ///   reads the others and reports those instead); ``HoardError/Code/ioFailed``.
    /// - Complexity: O(n) in the log's size; reads the live bytes with one or two reads
    ///   and holds them in memory. ``asyncMessages`` reads in chunks instead. Each
    ///   message is a new `Data` (two allocations) before it is decoded, which is most of
    ///   the cost of small messages; ``forEachEncodedMessage(_:)`` makes none.
    public func messages() throws(HoardError) -> [Message] {
        try _decode(_readRecords(newest: nil))
    }

    /// Calls `body` with the encoded bytes of each message in the log, oldest first,
    /// without copying them or decoding them: the fastest way to scan a log.
    ///
    /// The log is read and every record checked under a shared file lock, as by
    /// ``messages()``; `body` is called after the lock is let go, so it may take its
    /// time without holding up appends. The bytes are what the codec wrote (with
    /// ``ValueCodec/cacheValue`` and `Data` messages, the messages themselves) and are
    /// valid only during the call: copy what you keep.
    ///
    /// ```swift
    /// var bytes = 0
    /// try log.forEachEncodedMessage { bytes += $0.count }
    /// ```
    ///
    /// - Throws: As ``messages()`` (except ``HoardError/Code/decodingFailed``: nothing
    ///   is decoded), and whatever `body` throws, which ends the scan.
    /// - Complexity: O(n) in the log's size, with one read of the live bytes and no
    ///   allocation per message.
    public func forEachEncodedMessage(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let read = try _readRecords(newest: nil)
        try read.image.forEachPayload(of: read.records, body)
    }

    /// The newest `count` messages (fewer if the log holds fewer), oldest of them first.
    ///
    /// ```swift
    /// let recent = try log.newestMessages(20)
    /// ```
    ///
    /// - Throws: As ``messages()``.
    /// - Complexity: O(n) in the log's size to find the records (they are found by
    ///   walking from the oldest); only the newest `count` are decoded.
    public func newestMessages(_ count: Int) throws(HoardError) -> [Message] {
        guard count > 0 else { return [] }
        return try _decode(_readRecords(newest: count))
    }

    /// The loaded bytes and the records of the log, all or the newest `newest`, oldest
    /// first: read and checked under the file lock, decoded after it by ``_decode(_:)``.
    func _readRecords(newest: Int?) throws(HoardError) -> (image: _LogImage, records: ArraySlice<_LogWalk.Record>) {
        try _withFileLock(exclusive: false) { state, header throws(HoardError) in
            let image = try _LogImage.loadLive(header, from: header.oldest, file: state.file)
            let walk = try _LogWalk.run(header, image: image, from: header.oldest, path: path)
            if walk.tornAt == nil && state.trusted != header {
                state.trusted = header
                state.window = nil
            }
            return (image, newest.map { walk.records.suffix($0) } ?? walk.records[...])
        }
    }

    /// Decodes records straight from the loaded bytes, one payload at a time, with no
    /// array of payloads in between.
    func _decode(_ read: (image: _LogImage, records: ArraySlice<_LogWalk.Record>)) throws(HoardError) -> [Message] {
        var messages: [Message] = []
        messages.reserveCapacity(read.records.count)
        for record in read.records {
            messages.append(try codec.decode(read.image.payload(at: record.offset, length: record.length)))
        }
        return messages
    }
}
