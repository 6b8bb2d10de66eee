/// Where a record is in the log's history: the lap it was written in and its offset.
///
/// Positions order records oldest first: a later lap is newer, and within a lap a
/// larger offset is newer. Laps compare by wrapping difference, so the order holds
/// across the lap counter's overflow.
struct _LogPosition: Comparable, Sendable {
    var lap: UInt32
    var offset: Int

    static func < (a: _LogPosition, b: _LogPosition) -> Bool {
        if a.lap != b.lap { return Int32(bitPattern: a.lap &- b.lap) < 0 }
        return a.offset < b.offset
    }
}

extension _LogHeader {
    /// The position of the oldest record.
    var oldestPosition: _LogPosition { _LogPosition(lap: oldestLap, offset: oldest) }

    /// The position just past the newest record.
    var endPosition: _LogPosition { _LogPosition(lap: lap, offset: next) }

    /// The position of the most recent append's first record.
    var lastAppendPosition: _LogPosition {
        _LogPosition(
            lap: isInUpperSegment(lastAppendStart) ? _LogRecord.lap(before: lap) : lap, offset: lastAppendStart)
    }
}
