import Synchronization

/// The access times a ``DiskStore``'s reads record, kept in memory until a flush
/// writes them to the index.
///
/// Readers record here under a lock of its own, never the store's writer lock, so a
/// read never writes and never waits for a write. The writer takes the pending times
/// (in row id order) when it flushes them: in a transaction of their own on the
/// store's flush queue, when ``DiskStore/Configuration/accessFlushCount`` of them wait
/// or the oldest is ``DiskStore/Configuration/accessFlushInterval`` old, and before
/// every trim or eviction, so least-recently-accessed order holds to the resolution
/// within one process.
///
/// Each access keeps the stored date its read found and the ``epoch`` at which
/// the read began. The epoch advances after every transaction of the store's
/// write connection that may have changed `entries`, and when a flush finds that
/// another connection committed (`PRAGMA data_version`); so an access whose epoch
/// is still current at a flush read a row that has not changed since, and the
/// flush need not read it again (see ``_DiskIndex/touch(id:at:storedAt:)``).
final class _DiskAccessLog: Sendable {
    /// One access not yet written.
    struct Access: Equatable {
        var id: Int64
        /// When it was read.
        var time: Double
        /// The entry's stored date, as the read found it.
        var storedAt: Double
        /// The ``_DiskAccessLog/epoch`` loaded before the read began.
        var epoch: Int
    }
    /// What a recording asks of its caller, once the lock is released.
    enum Flush: Equatable {
        case none
        /// Schedule a flush now (enough times wait, or the oldest is old enough).
        case now
        /// Schedule a flush after this many seconds (the first time to wait).
        case after(Double)
    }

    private struct State {
        /// The accesses recorded by reads and not yet taken, in the order they
        /// were recorded; a row may appear more than once (a read the resolution
        /// or more after the last one recorded), and a take keeps its newest.
        var pending: [Access] = []
        /// Row id → when an access to it was last recorded (pending, taken or
        /// written) and in which take's ``generation``, kept while younger than
        /// the resolution (pruned by a take when it grows): a read of an entry found here within the
        /// resolution is not recorded again. One map for the two questions a read
        /// asks, so that a read probes one hash table, not one for the pending
        /// accesses and another for the written ones (`Benchmarks/README.md`,
        /// "what recording an access costs a get").
        var recorded: [Int64: Recorded] = [:]
        /// The size of ``recorded`` at which a take next prunes it.
        var recordedPruneCount = 4_096
        /// How many rows have a pending access (``pending`` less repeats).
        var pendingRows = 0
        /// Advanced by every take: a row recorded in an earlier one is not pending.
        var generation: UInt32 = 0
        /// When the oldest pending access was recorded.
        var pendingSince = Double.infinity
        /// Whether a flush is queued to run at once.
        var immediateQueued = false
        /// Whether a flush is queued to run after the interval.
        var timerQueued = false
    }

    /// When a row's access was last recorded, and in which generation.
    private struct Recorded {
        var time: Double
        var generation: UInt32
    }

    private let state = Mutex(State())
    private let epochCounter = Atomic<Int>(0)
    let resolution: Double
    let flushCount: Int
    let flushInterval: Double

    init(resolution: Double, flushCount: Int, flushInterval: Double) {
        self.resolution = resolution
        self.flushCount = flushCount
        self.flushInterval = flushInterval
    }

    /// The current epoch: load it before a read begins, and pass it to
    /// ``record(id:now:storedAt:epoch:)``.
    var epoch: Int { epochCounter.load(ordering: .acquiring) }

    /// Notes that `entries` may have changed: called after a transaction of the
    /// write connection commits or rolls back (never before it ends, so a read
    /// that loads the new epoch sees what it committed), and when another
    /// connection is found to have committed.
    func entriesMayHaveChanged() {
        epochCounter.wrappingAdd(1, ordering: .releasing)
    }

    /// Records a read of row `id` at `now`, which found the entry stored at
    /// `storedAt` and began at `epoch`, unless one was recorded for it within the
    /// resolution. A read the resolution or more after the last one recorded is
    /// recorded again: the newest time is the one written.
    ///
    /// - Returns: Whether the caller is to queue a flush.
    @inline(__always)
    func record(id: Int64, now: Double, storedAt: Double, epoch: Int) -> Flush {
        state.withLock { state -> Flush in
            if let last = state.recorded[id] {
                if now - last.time < resolution { return .none }
                if last.generation != state.generation { state.pendingRows += 1 }
            } else {
                state.pendingRows += 1
            }
            state.recorded[id] = Recorded(time: now, generation: state.generation)
            if state.pending.isEmpty { state.pending.reserveCapacity(min(flushCount, 1 << 16)) }
            state.pending.append(Access(id: id, time: now, storedAt: storedAt, epoch: epoch))
            state.pendingSince = min(state.pendingSince, now)
            if !state.immediateQueued,
                state.pendingRows >= flushCount || now - state.pendingSince >= flushInterval
            {
                state.immediateQueued = true
                return .now
            }
            if !state.timerQueued {
                state.timerQueued = true
                return .after(flushInterval)
            }
            return .none
        }
    }

    /// Notes that a queued flush started (so that later reads queue the next one).
    func flushStarted(immediate: Bool) {
        state.withLock { state in
            if immediate { state.immediateQueued = false } else { state.timerQueued = false }
        }
    }

    /// How many rows the log remembers as recorded within the resolution (for
    /// tests: a take prunes the older ones once the map has doubled).
    var recordedCount: Int { state.withLock { $0.recorded.count } }

    /// Whether no access waits to be written.
    var isEmpty: Bool { state.withLock { $0.pending.isEmpty } }

    /// Takes the pending access times, in row id order (neighbouring rows share
    /// pages: about half the page writes of random order), one per row, its
    /// newest. The caller writes them, or reports why it could not: they only
    /// refine eviction order. Reads go on finding them in ``State/recorded``, so a
    /// read of a taken row within the resolution is not recorded again.
    ///
    /// Readers take the same lock to record, so the lock is held only to move the
    /// pending accesses out and, when ``State/recorded`` has grown, to copy it and
    /// to install it pruned: the sort, and the pruning, run without it.
    func take() -> [Access] {
        let (pending, toPrune) = state.withLock { state -> ([Access], [Int64: Recorded]?) in
            let pending = state.pending
            state.pending = []
            state.pendingRows = 0
            state.pendingSince = .infinity
            state.generation &+= 1
            let toPrune = state.recorded.count > state.recordedPruneCount ? state.recorded : nil
            return (pending, toPrune)
        }
        if let toPrune, let newest = pending.lazy.map(\.time).max() {
            // Rows recorded longer ago than the resolution suppress nothing, and none
            // in the copy is pending: dropping them is always safe. A read recorded
            // meanwhile is lost from the map only, which at worst records (and
            // counts) its row once more.
            let pruned = toPrune.filter { newest - $0.value.time < resolution }
            state.withLock { state in
                state.recorded = pruned
                // Pruned again only once it has doubled: O(1) amortised per access.
                state.recordedPruneCount = max(2 * pruned.count, 4_096)
            }
        }
        // Row id order, and the newest access last of each row's.
        let sorted = pending.sorted { ($0.id, $0.time) < ($1.id, $1.time) }
        var taken: [Access] = []
        taken.reserveCapacity(sorted.count)
        for access in sorted {
            if let last = taken.last, last.id == access.id {
                taken[taken.count - 1] = access
            } else {
                taken.append(access)
            }
        }
        return taken
    }
}
