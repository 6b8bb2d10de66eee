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
        /// Row id → access, recorded by reads and not yet written.
        var pending: [Int64: Access] = [:]
        /// Row id → the access time last written for it, kept while younger than
        /// the resolution (pruned when it grows): a read of an entry found here is
        /// not recorded again.
        var written: [Int64: Double] = [:]
        /// The accesses a ``take()`` in progress took from ``pending``, by row id:
        /// they count as written (a read of one within the resolution is not
        /// recorded again) until the take adds them to ``written``.
        var taking: [Int64: Access] = [:]
        /// The size of ``written`` at which it is next pruned.
        var writtenPruneCount = 4_096
        /// When the oldest pending access was recorded.
        var pendingSince = Double.infinity
        /// Whether a flush is queued to run at once.
        var immediateQueued = false
        /// Whether a flush is queued to run after the interval.
        var timerQueued = false
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
    /// resolution. A read the resolution or more after a pending one replaces it:
    /// the newest time is the one written.
    ///
    /// - Returns: Whether the caller is to queue a flush.
    @inline(__always)
    func record(id: Int64, now: Double, storedAt: Double, epoch: Int) -> Flush {
        state.withLock { state -> Flush in
            if let pending = state.pending[id] {
                if now - pending.time >= resolution {
                    state.pending[id] = Access(id: id, time: now, storedAt: storedAt, epoch: epoch)
                }
            } else {
                if !state.taking.isEmpty, let taken = state.taking[id], now - taken.time < resolution { return .none }
                if let written = state.written[id], now - written < resolution { return .none }
                state.pending[id] = Access(id: id, time: now, storedAt: storedAt, epoch: epoch)
                state.pendingSince = min(state.pendingSince, now)
            }
            if !state.immediateQueued,
                state.pending.count >= flushCount || now - state.pendingSince >= flushInterval
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

    /// Whether no access waits to be written.
    var isEmpty: Bool { state.withLock { $0.pending.isEmpty } }

    /// Takes the pending access times, in row id order (neighbouring rows share
    /// pages: about half the page writes of random order), and remembers them as
    /// written while they are younger than the resolution. The caller writes them,
    /// or reports why it could not: they only refine eviction order.
    ///
    /// Readers take the same lock to record, so the lock is held only to move the
    /// pending map out and, later, to install the new ``State/written``: the sort
    /// and the merge (up to ``DiskStore/Configuration/accessFlushCount`` accesses)
    /// run without it. One take runs at a time (the store's writer calls it under
    /// its own lock), so nothing else changes `written` in between.
    func take() -> [Access] {
        guard let batch = detachPending() else { return [] }
        let taken = batch.taken.values.sorted { $0.id < $1.id }
        settle(batch)
        return taken
    }

    /// The first half of ``take()``: what a take works on.
    struct Batch {
        /// The accesses taken, by row id.
        var taken: [Int64: Access]
        /// ``State/written`` and ``State/writtenPruneCount`` when they were taken.
        var written: [Int64: Double]
        var writtenPruneCount: Int
    }

    /// Moves the pending accesses to ``State/taking`` (where reads still find
    /// them) and returns them; `nil` when none are pending.
    func detachPending() -> Batch? {
        state.withLock { state -> Batch? in
            guard !state.pending.isEmpty else {
                state.pendingSince = .infinity
                return nil
            }
            let taken = state.pending
            state.pending = Dictionary(minimumCapacity: taken.count)
            state.taking = taken
            state.pendingSince = .infinity
            return Batch(taken: taken, written: state.written, writtenPruneCount: state.writtenPruneCount)
        }
    }

    /// The second half of ``take()``: adds the taken accesses to what was written
    /// (pruning it when it has grown), outside the lock, then installs it and
    /// forgets ``State/taking``.
    ///
    /// The state keeps its `written` for reads meanwhile, so the merge works on a
    /// copy: one bulk copy of the map's table per take (keys and values are plain
    /// numbers), O(`written`), in exchange for no sort and no merge under the lock.
    func settle(_ batch: Batch) {
        guard resolution > 0 else {
            state.withLock { $0.taking = [:] }
            return
        }
        var written = batch.written
        var pruneCount = batch.writtenPruneCount
        if written.count + batch.taken.count > pruneCount {
            let newest = batch.taken.values.lazy.map(\.time).max() ?? 0
            written = written.filter { newest - $0.value < resolution }
            // Pruned again only once it has doubled: O(1) amortised per access.
            pruneCount = max(2 * written.count, 4_096)
        }
        for access in batch.taken.values {
            written[access.id] = max(written[access.id] ?? -.infinity, access.time)
        }
        state.withLock { state in
            state.written = written
            state.writtenPruneCount = pruneCount
            state.taking = [:]
        }
    }
}
