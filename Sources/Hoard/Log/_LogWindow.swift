/// Bytes read ahead from the oldest records, so that an append that evicts one
/// record at a time reads the file once per 64 KiB of evicted records instead of
/// once per record (a record larger than that is read whole, on its own).
///
/// Valid only while nothing but this instance writes the file (the owner drops it when
/// the header is not the one it last wrote) and until the oldest record wraps to
/// offset 64 (after which the bytes it holds get rewritten). Every lookup is at or
/// after the oldest record, which no append touches before evicting it.
struct _LogWindow {
    static let size = 64 << 10

    var start: Int
    var bytes: [UInt8]

    /// What starts at `position`, or `nil` when the window does not hold enough bytes.
    func slot(at position: Int, segmentEnd: Int) -> _LogRecord.Slot? {
        guard position >= start, position < start + bytes.count else { return nil }
        let slot = bytes.withUnsafeBytes {
            _LogRecord.slot(in: $0, base: start, at: position, segmentEnd: segmentEnd, lap: nil)
        }
        if case .unavailable = slot { return nil }
        return slot
    }
}

/// The slots an append evicts, read through a ``_LogWindow``.
struct _WindowSlotSource: _SlotSource {
    let file: _LogFile
    var window: _LogWindow?
    /// What the append in progress will write and has not written yet: the slots there
    /// are its record and wrap marker, whatever the file holds now.
    var pending: _Placement?
    /// The payload length of the pending record.
    var pendingLength = 0

    init(file: _LogFile, window: _LogWindow?) {
        self.file = file
        self.window = window
    }

    /// A source for the header after an append that is not written yet.
    init(file: _LogFile, pending: _Placement, payloadLength: Int) {
        self.file = file
        self.pending = pending
        self.pendingLength = payloadLength
    }

    mutating func slot(at position: Int, segmentEnd: Int) throws(HoardError) -> _LogRecord.Slot {
        if let pending {
            if position == pending.offset { return .record(length: pendingLength) }
            if position == pending.wrapMarker { return .wrap }
        }
        if let slot = window?.slot(at: position, segmentEnd: segmentEnd) { return slot }
        let count = max(_LogRecord.prefixSize, min(_LogWindow.size, segmentEnd - position))
        var loaded = _LogWindow(start: position, bytes: try file.read(at: position, count: count))
        func parse() -> _LogRecord.Slot {
            loaded.bytes.withUnsafeBytes {
                _LogRecord.slot(in: $0, base: position, at: position, segmentEnd: segmentEnd, lap: nil)
            }
        }
        var slot = parse()
        // A record larger than the read-ahead: the parse needs all of its payload.
        if case .unavailable(let needed) = slot, needed > loaded.bytes.count, needed <= segmentEnd - position {
            loaded = _LogWindow(start: position, bytes: try file.read(at: position, count: needed))
            slot = parse()
        }
        window = loaded
        if case .unavailable = slot { return .invalid(reason: "the file ends before the record does") }
        return slot
    }

    mutating func passed(_ position: Int) {}

    mutating func oldestWrapped() {
        window = nil
    }

    mutating func evictedAll() {
        window = nil
    }
}
