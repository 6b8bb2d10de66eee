import Dispatch

/// The append lease: an instance that appends holds the file's exclusive lock across
/// appends for up to ``duration``, so that an append is one `pwritev` and no header
/// write, instead of taking the lock, reading the header and writing it every time.
///
/// How the file stays readable after a crash at any point:
/// - Taking the lease writes the header with its lease flag set. From then on the
///   file's header is a *checkpoint*: the records it counts are intact, and records
///   appended since follow its `next` in ring order. A reader that finds the flag set
///   knows the writer died holding the lease, and counts those records by walking on
///   from `next` (``_LogHeader/settled(file:)``).
/// - An append that would evict a record the checkpoint still counts first writes a
///   new checkpoint: the header as it is after the append (the record it is about to
///   write included, as its last append), minus the oldest records that fill
///   ``aheadBytes(maximumBytes:)`` more bytes, as far as settling finds them again (see
///   ``_LogHeader/evictAhead(toFree:path:source:)``). The instance's own header (the
///   mutex's `trusted`) still counts those; after a crash, settling finds again those
///   not overwritten yet (see ``_LogHeader/settled(file:)``), so a crash loses none.
///   The appends that follow overwrite them without a header write until the next
///   checkpoint: with the default budget, one header write per 64 KiB of messages.
/// - Letting the lease go writes the exact header with the flag cleared, then unlocks:
///   other instances and processes read an exact header. Every other operation of the
///   instance lets the lease go first, and so does a timer ``duration`` after it was
///   taken, so a lease never keeps another instance or process waiting longer than
///   that.
/// - An append whose write fails abandons the lease: it unlocks without touching the
///   header, which stays a valid checkpoint that the next holder settles.
struct _LogLease {
    /// How long an instance keeps the lock after taking it for an append.
    static let duration: DispatchTimeInterval = .milliseconds(1)

    /// How many of the oldest records the instance's header counts that the
    /// checkpoint no longer does: evicting up to that many needs no new checkpoint.
    var aheadCount = 0
    /// Which lease this is, so that a timer set for an earlier one does nothing.
    var generation: UInt64

    /// How many bytes a checkpoint frees ahead of the appends: 64 KiB, or a sixteenth of
    /// a smaller log's record space, so that a crash costs at most that much of the
    /// oldest messages.
    static func aheadBytes(maximumBytes: Int) -> Int {
        min(64 << 10, (maximumBytes - _LogHeader.recordsStart) / 16)
    }
}
