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
    ///   when the codec cannot decode a stored message; ``HoardError/Code/ioFailed``.
    /// - Complexity: O(n) in the log's size; reads the live bytes with one or two reads
    ///   and holds them in memory. ``asyncMessages`` reads in chunks instead.
    public func messages() throws(HoardError) -> [Message] {
        try _readPayloads(newest: nil).map { payload throws(HoardError) in try codec.decode(payload) }
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
        return try _readPayloads(newest: count).map { payload throws(HoardError) in try codec.decode(payload) }
    }

    /// The payloads of every record, or of the newest `newest`, oldest first.
    func _readPayloads(newest: Int?) throws(HoardError) -> [Data] {
        try _withFileLock(exclusive: false) { state, header throws(HoardError) in
            let image = try _LogImage.loadLive(header, from: header.oldest, file: state.file)
            let walk = try _LogWalk.run(header, image: image, from: header.oldest, path: path)
            if walk.tornAt == nil && state.trusted != header {
                state.trusted = header
                state.window = nil
            }
            let records = newest.map { walk.records.suffix($0) } ?? walk.records[...]
            return records.map { image.payload(at: $0.offset, length: $0.length) }
        }
    }
}
