import Logging

/// What a ``MessageLog`` tells its `Logger`: the things that happen to the file without
/// an error reaching the caller (a torn append dropped on open, a log opened read-only,
/// a lease released without its header, what `recover()` repaired). Errors that a call
/// throws are the caller's to log; nothing here runs per message at `info` or above.
struct _MessageLogLogger: Sendable {
    let logger: Logger?
    /// The log file, as `hoard.store` names it.
    let path: String

    private func metadata(_ operation: String) -> Logger.Metadata {
        ["hoard.store": "\(path)", "hoard.tier": "log", "hoard.operation": "\(operation)"]
    }

    /// A torn last append (left by a crash) was dropped: `dropped` messages of it.
    func droppedTornAppend(keeping kept: Int, dropped: Int) {
        logger?.notice(
            "dropped a torn last append (\(dropped) messages) left by a crash; \(kept) messages remain",
            metadata: metadata("open"))
    }

    /// The log opened, but appends are refused; `reason` says why.
    func openedReadOnly(_ reason: HoardError) {
        var metadata = metadata("open")
        metadata["hoard.error"] = "\(reason)"
        logger?.notice("the log opened for reading only: appends will throw", metadata: metadata)
    }

    /// The header is damaged or in an unknown format: reads throw until `recover()`.
    func openedDamaged(_ reason: HoardError) {
        var metadata = metadata("open")
        metadata["hoard.error"] = "\(reason)"
        logger?.warning("the log's header is unusable: reads and appends will throw", metadata: metadata)
    }

    /// The append lease was let go (by its timer, in the background) but its header
    /// could not be written; the checkpoint in the file stays, so nothing is lost.
    func leaseHeaderNotWritten(_ error: HoardError) {
        var metadata = metadata("releaseLease")
        metadata["hoard.error"] = "\(error)"
        logger?.warning(
            """
            could not write the header when letting the append lease go; the file keeps its checkpoint and the \
            next writer settles it
            """,
            metadata: metadata)
    }

    /// `recover()` rebuilt the file; `report` is what it found before repairing.
    func recovered(_ report: MessageLogReport) {
        guard !report.isIntact else { return }
        var metadata = metadata("recover")
        metadata["hoard.damagedBytes"] = "\(report.damagedRanges.reduce(0) { $0 + $1.count })"
        let counted = report.headerMessageCount.map { " of \($0) the header counted" } ?? " (the header was damaged)"
        logger?.warning(
            "recovered a damaged log: kept \(report.intactMessageCount) intact messages\(counted)", metadata: metadata)
    }
}
