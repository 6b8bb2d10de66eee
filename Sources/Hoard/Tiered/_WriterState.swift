import Foundation

/// Everything a ``_CacheWriter`` decides, as a value with no locks and no threads:
/// the order of changes, what reads must see meanwhile, the queue for the stores,
/// its byte budget and who waits for it.
///
/// Each transition is a mutating method that returns what the writer must do next
/// (an *outcome*: start applying the queue, wait for room, wake waiters); the
/// writer calls it under its lock and performs the outcome after. The state is made
/// of three parts with transitions of their own, each tested by itself:
/// ``_KeyWriteState`` (one per key with a queued change), ``_ClearState`` (the
/// queued clears and removals by string) and ``_ReadTickets`` (reads in flight).
/// `docs/ARCHITECTURE.md` has the table of states and transitions.
///
/// ``write(_:ifUnchangedSince:bytes:waitsForRoom:completesLocally:completion:)``
/// is inlinable, with the helpers it calls for a change of one key (`record`,
/// `enqueue`, `takeSequence`, `isOverBudget`), so that the caller's side of a write
/// is specialised for the cache's types: the stored properties those read and
/// change, and the cases of ``_WriteOperation/Kind``, are part of the code inlined
/// into applications, and those properties have internal setters (only this type's
/// transitions may change them). Every other transition is compiled once, in Hoard.
@usableFromInline
struct _WriterState<Key: CacheKey, Value: Sendable>: Sendable {
    @usableFromInline typealias Operation = _WriteOperation<Key, Value>

    /// What the writer does after ``write(_:ifUnchangedSince:bytes:waitsForRoom:completesLocally:completion:)``.
    @usableFromInline
    enum WriteOutcome: Equatable, Sendable {
        /// The key changed since the ticket: nothing was written; the caller's
        /// completion is called with no error.
        case dropped
        /// The cache has no stores: the change is made in memory and complete.
        case madeInMemory
        /// The queue is over its byte budget: the caller registers with
        /// ``waitForRoom(_:)``, waits, and tries again.
        case waitsForRoom
        /// The change is queued for the stores; when `startsApplying`, the writer
        /// starts applying the queue (it was idle).
        case queued(startsApplying: Bool)

        /// Whether the change was made (memory is written with it).
        @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
        var isMade: Bool {
            switch self {
            case .madeInMemory, .queued: true
            case .dropped, .waitsForRoom: false
            }
        }
    }

    /// What the writer does after ``promote(_:ifUnchangedSince:stores:bytes:)``.
    enum PromoteOutcome: Equatable, Sendable {
        /// The key changed since the read's ticket: nothing is copied.
        case dropped
        /// Memory takes the copy; the stores do not (none asked for, or the queue is
        /// over its budget: a promotion never waits).
        case madeInMemory
        /// Memory takes the copy and it is queued for the stores; when
        /// `startsApplying`, the writer starts applying the queue.
        case queued(startsApplying: Bool)
    }

    /// What the writer does after ``flush(hasSuspectKeys:_:)``.
    enum FlushOutcome: Equatable, Sendable {
        /// Nothing to wait for: the caller resumes the flush.
        case done
        /// The flush's `resume` is returned by a later ``complete(_:hasSuspectKeys:)``;
        /// when `startsApplying`, the writer starts applying (it was idle, and a
        /// repair pass is due).
        case waits(startsApplying: Bool)
    }

    /// The waiters a completed batch releases.
    struct Completion: Sendable {
        /// Writers waiting for room in the queue's budget, now under it.
        var roomWaiters: [@Sendable () -> Void] = []
        /// Flushes every change of which is now applied.
        var flushes: [@Sendable () -> Void] = []
    }

    // The properties the inlinable write path changes have internal setters; only
    // this type's transitions change them.

    /// Whether the cache has any store; without, every change is memory only.
    @usableFromInline let hasStores: Bool
    /// The most bytes of values queued for the stores before a write that waits
    /// for room waits, and a promotion skips the stores; `nil` for no budget.
    @usableFromInline let queueByteLimit: Int?
    /// The state of each key with a queued change.
    @usableFromInline var keys: [Key: _KeyWriteState<Value>] = [:]
    /// The queued clears and removals by string.
    @usableFromInline private(set) var clears: _ClearState
    /// The reads in flight.
    @usableFromInline var tickets = _ReadTickets<Key>()
    /// The changes queued for the stores, in order, not yet taken by the writer.
    @usableFromInline var queue: [Operation] = []
    /// The sequence the next change gets (and a read that starts now takes as its ticket).
    @usableFromInline var nextSequence: UInt64 = 1
    /// The sequence of the newest change every store has applied.
    private(set) var completed: UInt64 = 0
    /// Whether the writer is applying the queue (so a new change needs no start).
    @usableFromInline var isApplying = false
    /// The bytes of the queued values not yet applied (values of unknown size
    /// counted at ``meanEncodedBytes``).
    @usableFromInline var queuedBytes = 0
    /// The mean encoded size of the values written so far (a moving average): what
    /// a queued value of unknown size counts as.
    @usableFromInline private(set) var meanEncodedBytes = 1_024
    private var roomWaiters: [@Sendable () -> Void] = []
    private var flushWaiters: [(target: UInt64, resume: @Sendable () -> Void)] = []
    /// Flushes whose changes are applied and that wait for one attempt at the
    /// stores' repairs: released by the next batch to complete (every store's
    /// share of a batch starts with its repairs), or by a repair pass, an empty
    /// batch the writer applies when nothing else is queued.
    private var repairWaiters: [@Sendable () -> Void] = []
    /// Flushes that found their changes applied while the writer was applying:
    /// the batch in flight may have been planned before them, so they wait for
    /// its completion, then join ``repairWaiters``.
    private var laterRepairWaiters: [@Sendable () -> Void] = []

    init(hasStores: Bool, hasRemoteStores: Bool, queueByteLimit: Int?) {
        self.hasStores = hasStores
        self.queueByteLimit = queueByteLimit
        clears = _ClearState(hasRemoteStores: hasRemoteStores)
    }

    // MARK: Changes

    /// Gives `kind` the next sequence and queues it for the stores, unless the key
    /// changed since `ticket` (a fetched value) or a write that `waitsForRoom` finds
    /// the queue over its budget. `bytes` is what the change counts against the
    /// budget (`nil`: a value of unknown size, counted at ``meanEncodedBytes``).
    /// The caller writes memory under the same lock when the outcome ``WriteOutcome/isMade``.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    mutating func write(
        _ kind: Operation.Kind, ifUnchangedSince ticket: UInt64? = nil, bytes: Int?, waitsForRoom: Bool,
        completesLocally: Bool = false, completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> WriteOutcome {
        if let ticket, hasChanged(kind, since: ticket) { return .dropped }
        guard hasStores else {
            record(kind, at: takeSequence(), queued: false)
            return .madeInMemory
        }
        let bytes = bytes ?? meanEncodedBytes
        if waitsForRoom, isOverBudget(adding: bytes) { return .waitsForRoom }
        let sequence = takeSequence()
        record(kind, at: sequence, queued: true)
        let startsApplying = enqueue(
            Operation(
                sequence: sequence, kind: kind, completion: completion, completesLocally: completesLocally,
                bytes: bytes))
        return .queued(startsApplying: startsApplying)
    }

    /// Registers a writer that got ``WriteOutcome/waitsForRoom``: `wake` is
    /// returned by the ``complete(_:hasSuspectKeys:)`` that brings the queue under its budget.
    @usableFromInline
    mutating func waitForRoom(_ wake: @escaping @Sendable () -> Void) {
        roomWaiters.append(wake)
    }

    /// Copies what a read found into faster tiers, unless the key changed since
    /// the read's `ticket`: memory (the caller writes it under the same lock unless
    /// the outcome is ``PromoteOutcome/dropped``) and, when `stores` (a
    /// ``_WriteOperation/Kind/promote(_:_:_:storedAt:expiresAt:localStoresBefore:)``)
    /// is given and the queue has room for its `bytes`, the local stores.
    ///
    /// A copy queued for the local stores is not a change (no read's ticket sees
    /// it), but reads answer its value until the stores have applied it: a change
    /// queued after it (a clear of the remote stores, say) leaves the local stores
    /// holding the copy, and a read in between must already answer what they will
    /// hold.
    mutating func promote(
        _ key: Key, ifUnchangedSince ticket: UInt64, stores: Operation.Kind?, bytes: Int
    ) -> PromoteOutcome {
        if hasChanged(key, since: ticket) { return .dropped }
        guard let stores, hasStores, !isOverBudget(adding: bytes) else { return .madeInMemory }
        let sequence = takeSequence()
        if case .promote(_, let value, _, let storedAt, let expiresAt, _) = stores {
            keys[key] = .promoting(value, storedAt: storedAt, expiresAt: expiresAt, at: sequence, after: keys[key])
        }
        let startsApplying = enqueue(Operation(sequence: sequence, kind: stores, completion: nil, bytes: bytes))
        return .queued(startsApplying: startsApplying)
    }

    // MARK: Reads

    /// Starts a read below memory: its ticket, and what it must answer for `key`
    /// instead of the stores (`nil` when nothing queued concerns the key). Every
    /// ticket is given back with ``endRead(_:)``.
    mutating func beginRead(_ key: Key) -> (ticket: UInt64, pending: _PendingRead<Value>?) {
        let ticket = nextSequence
        tickets.begin(ticket)
        return (ticket, pending(for: key))
    }

    /// Holds `ticket` for one more read.
    mutating func retainRead(_ ticket: UInt64) {
        tickets.begin(ticket)
    }

    /// Gives back one hold of `ticket`.
    mutating func endRead(_ ticket: UInt64) {
        tickets.end(ticket)
    }

    /// What a read of `key` answers instead of the stores: its newest queued
    /// change, or what the queued clears and removals by string leave (`nil` when
    /// nothing queued concerns it).
    func pending(for key: Key) -> _PendingRead<Value>? {
        // Nothing queued at all, as on most reads: answered before anything that
        // names a type built from `Value`, whose metadata this unspecialised code
        // would otherwise look up in the runtime's tables on every read
        // (CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)").
        if keys.isEmpty && clears.isEmpty { return nil }
        return clears.read(keys[key], keyString: { key.cacheKeyString })
    }

    /// Whether `key` was changed (or every key, by a clear) at or after `ticket`.
    func hasChanged(_ key: Key, since ticket: UInt64) -> Bool {
        tickets.hasChanged(key, keyString: { key.cacheKeyString }, since: ticket)
    }

    // MARK: Applying

    /// Takes every queued operation for the writer to apply. When there are none,
    /// the writer stops (the next queued change starts it again) unless a flush
    /// waits for a repair pass: then ``isApplying`` stays `true`, and the writer
    /// applies the empty batch, whose shares are the stores' repairs.
    mutating func takeQueued() -> [Operation] {
        if queue.isEmpty {
            if repairWaiters.isEmpty && laterRepairWaiters.isEmpty { isApplying = false }
            return []
        }
        var taken: [Operation] = []
        swap(&taken, &queue)
        return taken
    }

    /// Marks `batch` applied by every store (an empty batch: a repair pass): its
    /// keys settle unless changed again, its bytes leave the budget.
    /// `hasSuspectKeys` says whether a store has suspect keys after it
    /// (``_SuspectKeys``).
    ///
    /// - Returns: The waiters to release: writers waiting for room when the queue
    ///   is now under its budget, and the flushes it satisfies. A flush waiting
    ///   for a repair attempt is satisfied by any batch planned after it began
    ///   waiting (its shares started with the repairs). A flush whose last change
    ///   is in `batch`, or that began waiting for a repair attempt while `batch`
    ///   was in flight, is satisfied at once when no store has suspect keys, else
    ///   it waits for the next batch or repair pass.
    mutating func complete(_ batch: ArraySlice<Operation>, hasSuspectKeys: Bool) -> Completion {
        var released = Completion()
        swap(&released.flushes, &repairWaiters)
        var waiting: [@Sendable () -> Void] = []
        swap(&waiting, &laterRepairWaiters)
        if let last = batch.last { completeOperations(of: batch, last: last, waiting: &waiting, into: &released) }
        if hasSuspectKeys {
            repairWaiters = waiting
        } else {
            released.flushes += waiting
        }
        return released
    }

    /// ``complete(_:hasSuspectKeys:)`` for the operations of a batch that has
    /// some: the flushes of `last`'s sequence or earlier join `waiting`.
    private mutating func completeOperations(
        of batch: ArraySlice<Operation>, last: Operation, waiting: inout [@Sendable () -> Void],
        into released: inout Completion
    ) {
        completed = last.sequence
        for operation in batch {
            queuedBytes -= operation.bytes
            switch operation.kind {
            case .set(let key, _, _), .remove(let key, _), .promote(let key, _, _, _, _, _):
                if let state = keys[key] { keys[key] = state.afterApplying(operation.sequence) }
            case .removeAll:
                clears.appliedClear(at: operation.sequence)
            case .removeLocally(let keyString):
                clears.appliedRemoval(of: keyString, at: operation.sequence)
            }
        }
        if !roomWaiters.isEmpty, queuedBytes < queueByteLimit ?? .max {
            swap(&released.roomWaiters, &roomWaiters)
        }
        if !flushWaiters.isEmpty {
            waiting += flushWaiters.filter { $0.target <= last.sequence }.map(\.resume)
            flushWaiters.removeAll { $0.target <= last.sequence }
        }
    }

    /// Registers a flush of every change made so far, followed by one attempt at
    /// the repairs the stores are due then. `hasSuspectKeys` says whether a store
    /// has suspect keys now (``_SuspectKeys``).
    ///
    /// - Returns: ``FlushOutcome/done`` when there is nothing to wait for (the
    ///   caller resumes at once); otherwise `resume` is returned by a later
    ///   ``complete(_:hasSuspectKeys:)``: the one that applies the last of those
    ///   changes, when no store has suspect keys after it, else the next batch or
    ///   repair pass planned after that. When the changes are applied already but
    ///   a store has suspect keys: a repair pass the writer starts, or, while it
    ///   applies a batch (planned before the flush, perhaps), the batch or repair
    ///   pass after that one.
    mutating func flush(hasSuspectKeys: Bool, _ resume: @escaping @Sendable () -> Void) -> FlushOutcome {
        guard hasStores else { return .done }
        if completed < nextSequence - 1 {
            flushWaiters.append((nextSequence - 1, resume))
            return .waits(startsApplying: false)
        }
        guard hasSuspectKeys else { return .done }
        if isApplying {
            laterRepairWaiters.append(resume)
            return .waits(startsApplying: false)
        }
        repairWaiters.append(resume)
        isApplying = true
        return .waits(startsApplying: true)
    }

    /// Folds the mean encoded size of a batch's values into ``meanEncodedBytes``.
    mutating func noteEncoded(meanBytes: Int) {
        meanEncodedBytes = (meanEncodedBytes * 3 + meanBytes) / 4
    }

    // MARK: Private (inlinable with the write path)

    /// The next change's sequence, taken.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    mutating func takeSequence() -> UInt64 {
        defer { nextSequence += 1 }
        return nextSequence
    }

    /// Whether the queue would be over its budget with `bytes` more (never for the
    /// first queued change, however large).
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    func isOverBudget(adding bytes: Int) -> Bool {
        guard let queueByteLimit else { return false }
        return queuedBytes > 0 && queuedBytes + bytes > queueByteLimit
    }

    /// Appends `operation` to the queue; whether the caller must start the applier
    /// (none is running).
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    mutating func enqueue(_ operation: Operation) -> Bool {
        queuedBytes += operation.bytes
        queue.append(operation)
        if isApplying { return false }
        isApplying = true
        return true
    }

    /// Whether the key `kind` writes changed at or after `ticket`.
    @usableFromInline
    func hasChanged(_ kind: Operation.Kind, since ticket: UInt64) -> Bool {
        guard let key = kind.key else { return tickets.hasClearedAll(since: ticket) }
        return hasChanged(key, since: ticket)
    }

    /// Notes what `kind`, at `sequence`, changes: what reads must see (when it is
    /// `queued` for the stores) and, while reads are in flight, the change that
    /// drops their promotions.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    mutating func record(_ kind: Operation.Kind, at sequence: UInt64, queued: Bool) {
        switch kind {
        case .set(let key, let value, let dates):
            if queued {
                keys[key] = .setting(
                    value, storedAt: dates.storedAt, expiresAt: dates.memoryExpiry, at: sequence,
                    hasRemoteStores: clears.hasRemoteStores)
            }
            tickets.noteChange(of: key, at: sequence)
        case .remove(let key, let remote):
            if queued {
                keys[key] = .removing(
                    remote: remote, at: sequence, after: keys[key], hasRemoteStores: clears.hasRemoteStores)
            }
            tickets.noteChange(of: key, at: sequence)
        case .removeLocally(let keyString):
            recordRemoval(ofString: keyString, at: sequence, queued: queued)
        case .removeAll(let local, let remote):
            recordClear(local: local, remote: remote, at: sequence, queued: queued)
        case .promote:
            break
        }
    }

    /// ``record(_:at:queued:)`` for a removal from the local stores of a key known
    /// only by its string (compiled once, in Hoard).
    @usableFromInline
    mutating func recordRemoval(ofString keyString: String, at sequence: UInt64, queued: Bool) {
        if queued { clears.removeLocally(keyString, at: sequence) }
        tickets.noteChange(ofString: keyString, at: sequence)
    }

    /// ``record(_:at:queued:)`` for a clear of the chosen tiers (compiled once, in
    /// Hoard).
    @usableFromInline
    mutating func recordClear(local: Bool, remote: Bool, at sequence: UInt64, queued: Bool) {
        tickets.noteClear(at: sequence)
        guard queued else { return }
        if clears.clear(local: local, remote: remote, at: sequence) {
            // Every queued change of every key came before it.
            keys.removeAll()
        } else {
            keys = keys.compactMapValues { $0.afterClearing(local: clears.local, remote: clears.remote) }
        }
    }
}
