internal import CHoardPrefetch
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

    private struct State: ~Copyable {
        /// The accesses recorded by reads and not yet taken, in the order they
        /// were recorded; a row may appear more than once (a read the resolution
        /// or more after the last one recorded), and a take keeps its newest.
        var pending: [Access] = []
        /// Row id → when an access to it was last recorded (pending, taken or
        /// written) and in which take's ``generation``, kept while younger than
        /// the resolution (pruned by a take when it grows): a read of an entry
        /// found here within the resolution is not recorded again. One table for
        /// the two questions a read asks, so that a read probes one slot
        /// (`Benchmarks/README.md`, "what recording an access costs a get").
        var recorded = _AccessTimeTable()
        /// The size of ``recorded`` at which a take next prunes it.
        var recordedPruneCount = 4_096
        /// How many rows have a pending access (``pending`` less repeats).
        var pendingRows = 0
        /// Advanced by every take: a row recorded in an earlier one is not pending.
        var generation: UInt32 = 0
        /// When the oldest pending access was recorded.
        var pendingSince = Double.infinity
        /// When the newest pending access was recorded.
        var pendingNewest = -Double.infinity
        /// Whether a flush is queued to run at once.
        var immediateQueued = false
        /// Whether a flush is queued to run after the interval.
        var timerQueued = false
    }

    private let state: Mutex<State>
    private let epochCounter = Atomic<Int>(0)
    /// ``State/recorded``'s ``_AccessTimeTable/baseAddress`` and
    /// ``_AccessTimeTable/shift``, published under the lock whenever the table is
    /// reallocated, for ``prefetch(id:)`` to read without it.
    private let recordedBase: Atomic<UInt>
    private let recordedShift: Atomic<UInt64>
    let resolution: Double
    let flushCount: Int
    let flushInterval: Double

    init(resolution: Double, flushCount: Int, flushInterval: Double) {
        self.resolution = resolution
        self.flushCount = flushCount
        self.flushInterval = flushInterval
        let table = _AccessTimeTable()
        recordedBase = Atomic(table.baseAddress)
        recordedShift = Atomic(table.shift)
        state = Mutex(State(recorded: table))
    }

    /// Starts loading the slot of the access table where ``record(id:now:storedAt:epoch:)``
    /// will look for row `id` into the processor's cache, without the lock and
    /// without waiting: a reader calls it as soon as it knows the row's id, so that
    /// the memory access overlaps the rest of its read (the checksum, the copy of
    /// the value).
    ///
    /// A hint only: if the table is reallocated meanwhile, or the two values are
    /// read from different tables, the address may be stale or out of the
    /// table's bounds, which a prefetch tolerates (it never faults and never
    /// changes memory).
    @inline(__always)
    func prefetch(id: Int64) {
        let base = recordedBase.load(ordering: .relaxed)
        let slot = _AccessTimeTable.home(of: id, shift: recordedShift.load(ordering: .relaxed))
        let address = base &+ UInt(truncatingIfNeeded: slot) &* UInt(MemoryLayout<_AccessTimeTable.Slot>.stride)
        hoard_prefetch_for_write(UnsafeRawPointer(bitPattern: address))
    }

    /// Publishes the table's address and shift for ``prefetch(id:)``; called under
    /// the lock whenever the table is reallocated.
    private func publish(_ table: borrowing _AccessTimeTable) {
        recordedBase.store(table.baseAddress, ordering: .relaxed)
        recordedShift.store(table.shift, ordering: .relaxed)
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
            let generation = state.generation
            let slot = state.recorded.slot(for: id)
            var last = state.recorded[slot]
            if last.isOccupied {
                if now - last.time < resolution { return .none }
                if last.generation != generation { state.pendingRows += 1 }
                last.time = now
                last.generation = generation
                state.recorded[slot] = last
            } else {
                state.pendingRows += 1
                let recorded = _AccessTimeTable.Slot(id: id, time: now, generation: generation, isOccupied: true)
                if state.recorded.insert(recorded, at: slot) { publish(state.recorded) }
            }
            if state.pending.isEmpty { state.pending.reserveCapacity(min(flushCount, 1 << 16)) }
            state.pending.append(Access(id: id, time: now, storedAt: storedAt, epoch: epoch))
            state.pendingSince = min(state.pendingSince, now)
            state.pendingNewest = max(state.pendingNewest, now)
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

    /// Makes accesses a ``take()`` returned pending again, when the transaction
    /// that was to write them failed: the next take returns them (with any later
    /// access to the same rows, the newest kept), so that a trim tried again after
    /// making room on a full disk still orders by them. They are written by the
    /// next flush, trim or eviction, or when the store closes; this queues no flush.
    func giveBack(_ taken: [Access]) {
        guard !taken.isEmpty else { return }
        state.withLock { state in
            let generation = state.generation
            for access in taken {
                let slot = state.recorded.slot(for: access.id)
                var last = state.recorded[slot]
                if last.isOccupied {
                    // A row recorded again since the take is pending already.
                    if last.generation != generation {
                        state.pendingRows += 1
                        last.generation = generation
                        state.recorded[slot] = last
                    }
                } else {
                    // Pruned by the take.
                    state.pendingRows += 1
                    let recorded = _AccessTimeTable.Slot(
                        id: access.id, time: access.time, generation: generation, isOccupied: true)
                    if state.recorded.insert(recorded, at: slot) { publish(state.recorded) }
                }
                state.pending.append(access)
                state.pendingSince = min(state.pendingSince, access.time)
                state.pendingNewest = max(state.pendingNewest, access.time)
            }
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
    /// pending accesses out and, when ``State/recorded`` has doubled since it was
    /// last pruned, to prune it (O(rows recorded); amortised O(1) per access): the
    /// sort runs without it. Pruning in the same hold as the take drops only rows
    /// recorded before it, none of them pending.
    func take() -> [Access] {
        let pending = state.withLock { state -> [Access] in
            let pending = state.pending
            state.pending = []
            state.pendingRows = 0
            state.pendingSince = .infinity
            let newest = state.pendingNewest
            state.pendingNewest = -.infinity
            state.generation &+= 1
            if state.recorded.count > state.recordedPruneCount, newest > -.infinity {
                // Rows recorded the resolution or longer before the newest access
                // suppress no later read; none is pending after this take.
                let resolution = resolution
                state.recorded = state.recorded.pruned(
                    keeping: { newest - $0.time < resolution }, minimumCapacity: 1_024)
                publish(state.recorded)
                // Pruned again only once it has doubled: O(1) amortised per access.
                state.recordedPruneCount = max(2 * state.recorded.count, 4_096)
            }
            return pending
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
