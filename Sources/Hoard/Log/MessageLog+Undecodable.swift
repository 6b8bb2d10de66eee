import Foundation

extension MessageLog {
    /// A stored message the codec could not decode: what a read that skips such
    /// messages (``messages(skippingUndecodable:)``) reports instead of throwing.
    ///
    /// Its bytes are intact (their checksum matched); they are just not a `Message`
    /// as this codec reads it: a message appended before its type changed, or by a
    /// program with another type.
    public struct UndecodableMessage: Sendable {
        /// Its position among the messages the read covered, oldest first (0 is the
        /// oldest message of ``messages(skippingUndecodable:)``, or the oldest of
        /// the newest `count` of ``newestMessages(_:skippingUndecodable:)``).
        public var position: Int
        /// The bytes the codec wrote, as stored: a copy the caller may keep, decode
        /// with an older type, or append again in the new form.
        public var data: Data
        /// Why the codec refused them (``HoardError/Code/decodingFailed``).
        public var error: HoardError
    }

    /// Every message in the log the codec decodes, oldest first, skipping those it
    /// cannot decode: each of those is handed to `undecodable` instead of failing
    /// the whole read.
    ///
    /// Use it when a message type has changed in a way old messages do not decode
    /// (a field renamed or made required), to read everything that does and to
    /// report, count, or convert the rest. Only decoding is forgiven: a damaged
    /// record still throws, as for ``messages()``.
    ///
    /// ```swift
    /// var skipped = 0
    /// let events = try log.messages { undecodable in
    ///     skipped += 1
    ///     logger.warning("skipped message \(undecodable.position): \(undecodable.error)")
    /// }
    /// ```
    ///
    /// - Parameter undecodable: Called once per message that does not decode, in
    ///   order, after the file lock is let go.
    /// - Throws: ``HoardError/Code/fileCorrupted`` with the offset of the first
    ///   damaged record; ``HoardError/Code/ioFailed``. Never
    ///   ``HoardError/Code/decodingFailed``.
    /// - Complexity: As ``messages()``; each undecodable message costs one copy of
    ///   its bytes.
    public func messages(
        skippingUndecodable undecodable: (UndecodableMessage) -> Void
    ) throws(HoardError) -> [Message] {
        _decode(try _readRecords(newest: nil), skippingUndecodable: undecodable)
    }

    /// The newest `count` messages (fewer if the log holds fewer), oldest of them
    /// first, skipping those the codec cannot decode: each of those is handed to
    /// `undecodable`, and the result has one message fewer for it.
    ///
    /// - Throws: As ``messages(skippingUndecodable:)``.
    public func newestMessages(
        _ count: Int, skippingUndecodable undecodable: (UndecodableMessage) -> Void
    ) throws(HoardError) -> [Message] {
        guard count > 0 else { return [] }
        return _decode(try _readRecords(newest: count), skippingUndecodable: undecodable)
    }

    /// Decodes what it can of the records read, reporting the rest.
    func _decode(
        _ read: (image: _LogImage, records: ArraySlice<_LogWalk.Record>),
        skippingUndecodable undecodable: (UndecodableMessage) -> Void
    ) -> [Message] {
        var messages: [Message] = []
        messages.reserveCapacity(read.records.count)
        for (position, record) in read.records.enumerated() {
            let payload = read.image.payload(at: record.offset, length: record.length)
            do {
                messages.append(try codec.decode(payload))
            } catch {
                undecodable(UndecodableMessage(position: position, data: payload, error: error))
            }
        }
        return messages
    }
}
