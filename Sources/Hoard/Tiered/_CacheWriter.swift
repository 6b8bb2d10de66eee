import Foundation
import Synchronization

/// The one ordered write path of a ``Cache``: every change of a key (a caller's
/// write or removal, a clear, an invalidation from another instance, a promotion
/// of a value found in a slower tier, a fetched value) gets a sequence number here,
/// under one lock, together with its change to the memory tier; the stores then
/// apply the changes in that order, many per store transaction.
///
/// - Reads below memory take a *ticket* (the next sequence number) before they
///   look, and their promotions are dropped when the key was changed (or the cache
///   cleared) at or after the ticket: a read never puts an older value back over a
///   newer one, in memory or in a store.
/// - The newest queued write of each key stays readable (``Pending``) until the
///   stores have it, so a read never sees an older store value while it waits.
///   Queued clears are kept per tier the same way: until one is applied, reads
///   treat the stores it clears as empty, while a queued write of a key that the
///   stores left alone will hold stays readable.
/// - Store work runs on the writer's own serial queue (a ``_BlockingExecutor``),
///   never on the cooperative pool, and nothing blocks a thread waiting for a
///   task: remote writes are awaited by a task on that same queue, and the next
///   batch starts when they are done. The writer needs no other thread (not the
///   shared executor's, which reads hold, nor a caller's), and holds what it needs
///   (stores, codec), so queued writes complete even after the cache is gone.
/// - The cache's callbacks for the writer's work (`timings` of store writes, its
///   log handler and `onError` for their failures) run on a serial queue of their
///   own (``callbacks``), never on ``queue`` or in the task that writes the remote
///   stores: a callback may write to the cache, even in write-through mode, which
///   waits for the writer.
@usableFromInline
final class _CacheWriter<Key: CacheKey, Value: Sendable>: Sendable {
    /// One change, in the order it was made.
    @usableFromInline
    struct Operation: Sendable {
        @usableFromInline
        enum Kind: Sendable {
            /// A caller's value, for every store, with its dates in every tier.
            case set(Key, Value, _WriteDates)
            /// Bytes found in a slower tier, for the local stores before `localStoresBefore`.
            case promote(Key, Data, storedAt: Date, expiresAt: Date?, localStoresBefore: Int)
            /// A removal; from the remote stores as well when `remote` is true.
            case remove(Key, remote: Bool)
            /// A removal from the local stores of a key known only by its string
            /// (another instance's invalidation of a key this one never saw).
            case removeLocally(String)
            /// A clear of the cache's namespace in the chosen tiers.
            case removeAll(local: Bool, remote: Bool)
        }

        @usableFromInline var sequence: UInt64
        @usableFromInline var kind: Kind
        /// Called once every store has applied the operation (only the local stores
        /// when `completesLocally`), with the first error.
        @usableFromInline var completion: (@Sendable ((any Error)?) -> Void)?
        @usableFromInline var completesLocally: Bool
        /// The bytes this operation counts against the queue's budget until it is
        /// applied (``State/queuedBytes``).
        @usableFromInline var bytes: Int

        @inlinable
        init(
            sequence: UInt64, kind: Kind, completion: (@Sendable ((any Error)?) -> Void)?,
            completesLocally: Bool = false, bytes: Int = 0
        ) {
            self.sequence = sequence
            self.kind = kind
            self.completion = completion
            self.completesLocally = completesLocally
            self.bytes = bytes
        }
    }

    /// What a read must see for a key while a change of it (or a clear) is queued.
    @usableFromInline
    enum Pending: Sendable {
        /// A value written with its own expiry: the memory tier's (the grace period
        /// included), whatever shorter lifetime a tier of stores gives it.
        case value(Value, storedAt: Date, expiresAt: Date?)
        /// Removed from the local stores when `local`, and from the remote ones when
        /// `remote`. The stores left alone answer: the remote ones after another
        /// instance's invalidation or a clear of the local stores only (they hold
        /// the newest value), the local ones while a clear of the remote stores
        /// only is queued.
        case removed(local: Bool, remote: Bool)

        /// Whether this is a change the remote stores are yet to apply (a value, or
        /// a removal from them).
        @inlinable
        var changesRemoteStores: Bool {
            switch self {
            case .value: true
            case .removed(_, let remote): remote
            }
        }

        /// Whether a read answers from this alone, without looking in the local
        /// stores.
        @inlinable
        var hidesLocalStores: Bool {
            if case .removed(local: false, _) = self { return false }
            return true
        }
    }

    /// The newest queued write of a key, and its place in the queue.
    @usableFromInline
    struct Queued {
        @usableFromInline var sequence: UInt64
        @usableFromInline var value: Pending

        @inlinable
        init(sequence: UInt64, value: Pending) {
            self.sequence = sequence
            self.value = value
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var queue: [Operation] = []
        @usableFromInline var pending: [Key: Queued] = [:]
        /// The queued removals from the local stores of keys known only by their
        /// strings (``Operation/Kind/removeLocally(_:)``), with the newest's sequence.
        @usableFromInline var removedLocally: [String: UInt64] = [:]
        /// The newest queued clear of the local stores, if any.
        @usableFromInline var localClear: UInt64?
        /// The newest queued clear of the remote stores, if any (never set without
        /// remote stores).
        @usableFromInline var remoteClear: UInt64?
        @usableFromInline let hasRemoteStores: Bool
        @usableFromInline var nextSequence: UInt64 = 1
        @usableFromInline var completed: UInt64 = 0
        @usableFromInline var running = false
        @usableFromInline var flushWaiters: [(UInt64, CheckedContinuation<Void, Never>)] = []
        /// The bytes of the values queued for the stores and not yet applied (values
        /// of unknown size counted at ``meanEncodedBytes``).
        @usableFromInline var queuedBytes = 0
        /// The threads waiting for ``queuedBytes`` to fall under the budget.
        @usableFromInline var roomWaiters: [DispatchSemaphore] = []
        /// The mean encoded size of the values written so far (a moving average):
        /// what a queued value of unknown size counts as.
        @usableFromInline var meanEncodedBytes = 1_024
        /// The tickets of the reads in flight, with how many reads hold each.
        @usableFromInline var reads: [UInt64: Int] = [:]
        /// The last sequence that changed each key, kept only while reads are in
        /// flight (and pruned to what the oldest of them needs).
        @usableFromInline var changed: [Key: UInt64] = [:]
        /// The last sequence that changed each key known only by its string (another
        /// instance's invalidation of a key this one cannot name), kept like
        /// ``changed``.
        @usableFromInline var changedStrings: [String: UInt64] = [:]
        @usableFromInline var pruneAt = 1_024
        /// The last sequence that changed every key at once (a clear).
        @usableFromInline var barrier: UInt64 = 0

        @inlinable
        init(hasRemoteStores: Bool) {
            self.hasRemoteStores = hasRemoteStores
        }

        /// Notes what `kind`, at `sequence`, changes: the pending value reads must see
        /// (when it is `queued` for the stores) and, while reads are in flight, the
        /// change that drops their promotions.
        @inlinable
        mutating func record(_ kind: Operation.Kind, sequence: UInt64, queued: Bool) {
            switch kind {
            case .set(let key, let value, let dates):
                if queued {
                    pending[key] = .init(
                        sequence: sequence,
                        value: .value(value, storedAt: dates.storedAt, expiresAt: dates.memoryExpiry))
                }
                noteChange(of: key, at: sequence)
            case .remove(let key, let remote):
                // A removal from the local stores only (another instance's
                // invalidation) does not hide a change queued before it that
                // the remote stores are yet to apply: they will hold it.
                if queued, remote || pending[key]?.value.changesRemoteStores != true {
                    pending[key] = .init(sequence: sequence, value: .removed(local: true, remote: remote))
                }
                noteChange(of: key, at: sequence)
            case .removeLocally(let keyString):
                if queued { removedLocally[keyString] = sequence }
                if !reads.isEmpty {
                    changedStrings[keyString] = sequence
                    pruneChanges()
                }
            case .removeAll(let local, let remote):
                barrier = sequence
                guard queued else { break }
                if local {
                    localClear = sequence
                    // It hides the local stores as those removals did.
                    removedLocally.removeAll()
                }
                if remote && hasRemoteStores { remoteClear = sequence }
                dropWritesClearedEverywhere(clearedAt: sequence)
            case .promote:
                break
            }
        }

        /// Forgets the queued writes that queued clears of every tier undo (a clear
        /// of the local stores, and one of the remote stores, both made after the
        /// write). A write that one of the tiers keeps stays readable until it is
        /// applied: after a clear of the local stores only, the remote stores will
        /// hold it. `sequence` is the clear just recorded.
        @inlinable
        mutating func dropWritesClearedEverywhere(clearedAt sequence: UInt64) {
            guard let localClear else { return }
            var before = localClear
            if hasRemoteStores {
                guard let remoteClear else { return }
                before = min(localClear, remoteClear)
            }
            if before == sequence {
                // This clear empties every tier, after every queued write.
                pending = [:]
            } else {
                pending = pending.filter { $0.value.sequence > before }
            }
        }

        /// What a read of `key` must see: its newest queued change, or what the
        /// queued removals by string and clears leave (`nil` when nothing queued
        /// concerns it).
        @inlinable
        func pending(for key: Key) -> Pending? {
            var queued = pending[key]
            // Like a removal of the key from the local stores only, it hides no
            // write queued before it.
            if queued == nil, !removedLocally.isEmpty, let sequence = removedLocally[key.cacheKeyString] {
                queued = .init(sequence: sequence, value: .removed(local: true, remote: false))
            }
            if let queued {
                // The remote stores that would answer are being cleared.
                if case .removed(local: true, remote: false) = queued.value, remoteClear != nil {
                    return .removed(local: true, remote: true)
                }
                return queued.value
            }
            if localClear == nil && remoteClear == nil { return nil }
            return .removed(local: localClear != nil, remote: remoteClear != nil)
        }

        /// Whether `key` was changed (or every key, by a clear) at or after `ticket`.
        @inlinable
        func hasChanged(_ key: Key, since ticket: UInt64) -> Bool {
            if barrier >= ticket { return true }
            if let changed = changed[key], changed >= ticket { return true }
            if !changedStrings.isEmpty, let changed = changedStrings[key.cacheKeyString], changed >= ticket {
                return true
            }
            return false
        }

        /// Whether the key `kind` writes changed at or after `ticket`.
        @inlinable
        func hasChanged(_ kind: Operation.Kind, since ticket: UInt64) -> Bool {
            switch kind {
            case .set(let key, _, _), .promote(let key, _, _, _, _), .remove(let key, _):
                hasChanged(key, since: ticket)
            case .removeLocally, .removeAll:
                barrier >= ticket
            }
        }

        @inlinable
        mutating func noteChange(of key: Key, at sequence: UInt64) {
            guard !reads.isEmpty else { return }
            changed[key] = sequence
            pruneChanges()
        }

        /// Forgets the changes made before the oldest read in flight (they can drop
        /// no promotion) once there are many.
        @inlinable
        mutating func pruneChanges() {
            guard changed.count + changedStrings.count > pruneAt, let oldest = reads.keys.min() else { return }
            changed = changed.filter { $0.value >= oldest }
            changedStrings = changedStrings.filter { $0.value >= oldest }
            pruneAt = max(1_024, (changed.count + changedStrings.count) * 2)
        }
    }

    @usableFromInline let state: Mutex<State>
    /// How many reads hold a ticket: lets memory-only writes skip the lock when
    /// nobody reads below memory.
    @usableFromInline let readsInFlight = Atomic<Int>(0)
    @usableFromInline let namespace: String
    @usableFromInline let localStores: [any CacheStore]
    @usableFromInline let remoteStores: [any RemoteCacheStore]
    @usableFromInline let codec: ValueCodec<Value>?
    /// Reports a failure of the writer's work: counted and published at once,
    /// logged and handed to `onError` on ``callbacks``.
    @usableFromInline let report: @Sendable (CacheFailure) -> Void
    /// The cache's `timings`, called on ``callbacks``.
    @usableFromInline let timings: (@Sendable (CacheTiming) -> Void)?
    /// The serial queue batches are applied on, one at a time, and the executor of
    /// the task that awaits a batch's remote writes.
    @usableFromInline let queue = _BlockingExecutor(label: "Hoard.Cache.writer", width: 1)
    /// The serial queue the cache's callbacks for the writer's work run on, in
    /// order; ``flush()`` resumes on it, after the callbacks of what it waited for.
    @usableFromInline let callbacks: DispatchQueue
    /// The most operations applied in one store transaction: large enough that the
    /// commit is a small part of a batch, small enough that readers of the store
    /// are not held off for long.
    @inlinable
    static var batchLimit: Int { 4_096 }

    /// - Parameters:
    ///   - timings: The cache's `timings`, for the store writes.
    ///   - onError: The cache's logger and `onError`, for the failures of the
    ///     writer's work.
    ///   - report: Counts and publishes those failures (on the writer's own threads:
    ///     it must not call the cache's callbacks or its log handler).
    init(
        namespace: String, localStores: [any CacheStore], remoteStores: [any RemoteCacheStore],
        codec: ValueCodec<Value>?,
        queueByteLimit: Int? = nil,
        size: (@Sendable (Value) -> Int)? = nil,
        timings: (@Sendable (CacheTiming) -> Void)? = nil,
        onError: (@Sendable (CacheFailure) -> Void)? = nil,
        report: @escaping @Sendable (CacheFailure) -> Void
    ) {
        let callbacks = DispatchQueue(label: "Hoard.Cache.callbacks", qos: .userInitiated)
        self.callbacks = callbacks
        self.timings = timings.map { timings -> @Sendable (CacheTiming) -> Void in
            { timing in callbacks.async { timings(timing) } }
        }
        self.namespace = namespace
        self.localStores = localStores
        self.remoteStores = remoteStores
        hasStores = !localStores.isEmpty || !remoteStores.isEmpty
        state = Mutex(State(hasRemoteStores: !remoteStores.isEmpty))
        self.codec = codec
        self.queueByteLimit = queueByteLimit
        self.size = size
        self.report = { failure in
            report(failure)
            if let onError { callbacks.async { onError(failure) } }
        }
    }

    /// Whether the cache has any store (else every write is memory only).
    @usableFromInline let hasStores: Bool
    /// The most bytes of values queued for the stores before a write that waits for
    /// room (`cache[key] = value`) waits, and a promotion skips the stores; `nil`
    /// for no budget.
    @usableFromInline let queueByteLimit: Int?
    /// The size of a value before it is encoded, when it is known (``CacheValue``'s
    /// cost); otherwise a queued value counts as ``State/meanEncodedBytes``.
    @usableFromInline let size: (@Sendable (Value) -> Int)?

    /// The bytes of values queued for the stores and not yet applied.
    var queuedBytes: Int { state.withLock { $0.queuedBytes } }

    /// What `kind` counts against the queue's budget: `nil` when it is a value of
    /// unknown size.
    @inlinable
    func queuedSize(of kind: Operation.Kind) -> Int? {
        switch kind {
        case .set(_, let value, _): size?(value)
        case .promote(_, let data, _, _, _): data.count
        case .remove, .removeLocally, .removeAll: 0
        }
    }

    /// Whether no read holds a ticket, so a memory-only write needs no sequence
    /// number (no promotion or fetch in flight could be overtaken by it).
    ///
    /// A write that skips the lock on this answer must ask again after writing
    /// memory: a read that took its ticket in between may have missed the value
    /// (it looks at memory again after taking its ticket, so a read that took it
    /// after the second answer sees the value). The load is sequentially
    /// consistent, as the readers' increment is, so that it is not reordered
    /// before the memory write.
    @inlinable
    var isQuiet: Bool { readsInFlight.load(ordering: .sequentiallyConsistent) == 0 }

    // MARK: Writing

    /// Gives `kind` its place in the order, applies its change to memory (`memory`,
    /// run under the writer's lock so no promotion can come between the two), and
    /// queues it for the stores. `completion`, when given, is called once every
    /// store has applied it (at once when there are no stores).
    ///
    /// - Parameters:
    ///   - ticket: When given, the write is made only if the key has not changed
    ///     since this read ticket (a fetched value).
    ///   - waitsForRoom: Whether the calling thread waits, before the write is made,
    ///     while the values queued for the stores are over ``queueByteLimit`` (the
    ///     subscript setter: a producer faster than the stores is slowed to their
    ///     pace instead of growing the queue). Other writes are bounded by their
    ///     callers, which wait for them.
    /// - Returns: Whether the write was made.
    @inlinable
    @discardableResult
    func write(
        _ kind: Operation.Kind,
        ifUnchangedSince ticket: UInt64? = nil,
        waitsForRoom: Bool = false,
        memory: () -> Void,
        completesLocally: Bool = false,
        completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> Bool {
        guard hasStores else {
            // Always under the lock, with a sequence number: a read that begins
            // while this write runs either sees it in memory or has its fetched
            // value dropped (`Cache.assign` has the one unlocked path).
            let made = state.withLock { state -> Bool in
                if let ticket, state.hasChanged(kind, since: ticket) { return false }
                let sequence = state.nextSequence
                state.nextSequence += 1
                state.record(kind, sequence: sequence, queued: false)
                memory()
                return true
            }
            completion?(nil)
            return made
        }
        let known = queuedSize(of: kind)
        var made = false
        var start = false
        while true {
            let room = state.withLock { state -> DispatchSemaphore? in
                if let ticket, state.hasChanged(kind, since: ticket) { return nil }
                let bytes = known ?? state.meanEncodedBytes
                if waitsForRoom, let limit = queueByteLimit, state.queuedBytes > 0,
                    state.queuedBytes + bytes > limit
                {
                    let room = DispatchSemaphore(value: 0)
                    state.roomWaiters.append(room)
                    return room
                }
                let sequence = state.nextSequence
                state.nextSequence += 1
                state.record(kind, sequence: sequence, queued: true)
                memory()
                state.queuedBytes += bytes
                state.queue.append(
                    Operation(
                        sequence: sequence, kind: kind, completion: completion, completesLocally: completesLocally,
                        bytes: bytes))
                made = true
                if !state.running {
                    state.running = true
                    start = true
                }
                return nil
            }
            guard let room else { break }
            // Over the budget: wait until the writer has applied enough.
            room.wait()
        }
        if !made { completion?(nil) }
        if start {
            queue.async { self.drain(ArraySlice()) }
        }
        return made
    }

    /// Like ``write(_:memory:completion:)``, and returns once every store has
    /// applied the write, with the first error a store threw.
    @inlinable
    func apply(_ kind: Operation.Kind, memory: () -> Void) async throws {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<(any Error)?, Never>) in
            write(kind, memory: memory) { continuation.resume(returning: $0) }
        }
        if let result { throw result }
    }

    /// Like ``write(_:memory:completion:)``, and blocks the calling thread until
    /// the local stores have applied the write (the subscript setter in
    /// write-through mode; the remote stores follow in the background). The writer
    /// never needs the calling thread or the cooperative pool to get there.
    @inlinable
    func applyBlocking(_ kind: Operation.Kind, memory: () -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<(any Error)?>(nil)
        write(kind, memory: memory, completesLocally: true) { error in
            result.withLock { $0 = error }
            done.signal()
        }
        done.wait()
        if let error = result.withLock({ $0 }) { throw error }
    }

    // MARK: Reading

    /// Starts a read below memory: returns its ticket and the queued state of `key`
    /// (`nil` when nothing queued concerns it; `.removed` from the tiers a queued
    /// clear empties, for keys with no newer write). Every ticket must be given
    /// back with ``endRead(_:)``.
    @inlinable
    func beginRead(_ key: Key) -> (ticket: UInt64, pending: Pending?) {
        readsInFlight.add(1, ordering: .sequentiallyConsistent)
        return state.withLock { state in
            let ticket = state.nextSequence
            state.reads[ticket, default: 0] += 1
            return (ticket, state.pending(for: key))
        }
    }

    /// Whether `key` was changed (or every key, by a clear) at or after `ticket`,
    /// a ticket of a read still in flight.
    func hasChanged(_ key: Key, since ticket: UInt64) -> Bool {
        state.withLock { $0.hasChanged(key, since: ticket) }
    }

    /// Holds `ticket` for one more read (a fetch that outlives the caller that
    /// started it); give it back with ``endRead(_:)``.
    @inlinable
    func retainRead(_ ticket: UInt64) {
        readsInFlight.add(1, ordering: .sequentiallyConsistent)
        state.withLock { $0.reads[ticket, default: 0] += 1 }
    }

    /// Ends a read started with ``beginRead(_:)``.
    @inlinable
    func endRead(_ ticket: UInt64) {
        state.withLock { state in
            if let count = state.reads[ticket], count > 1 {
                state.reads[ticket] = count - 1
            } else {
                state.reads[ticket] = nil
                if state.reads.isEmpty {
                    state.changed.removeAll(keepingCapacity: true)
                    state.changedStrings.removeAll()
                }
            }
        }
        readsInFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Copies what a read found into faster tiers unless `key` changed since the
    /// read's `ticket`: runs `memory` and queues `stores` (when given) in one step.
    ///
    /// - Returns: Whether the promotion was made; `false` when it was dropped
    ///   because a newer write, removal, clear or invalidation came first.
    @inlinable
    func promote(_ key: Key, ticket: UInt64, memory: () -> Void, stores: Operation.Kind?) -> Bool {
        let bytes = stores.flatMap(queuedSize(of:)) ?? 0
        let (made, start) = state.withLock { state -> (Bool, Bool) in
            if state.hasChanged(key, since: ticket) { return (false, false) }
            memory()
            guard let stores, hasStores else { return (true, false) }
            // Over the budget, the faster stores do without the copy: a promotion
            // never waits.
            if let limit = queueByteLimit, state.queuedBytes > 0, state.queuedBytes + bytes > limit {
                return (true, false)
            }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.queuedBytes += bytes
            state.queue.append(Operation(sequence: sequence, kind: stores, completion: nil, bytes: bytes))
            if state.running { return (true, false) }
            state.running = true
            return (true, true)
        }
        if start {
            queue.async { self.drain(ArraySlice()) }
        }
        return made
    }

    /// Waits until every operation queued before this call has been applied, and
    /// the callbacks of that work have returned.
    @inlinable
    func flush() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                let target = state.nextSequence - 1
                if state.completed >= target || !hasStores { return true }
                state.flushWaiters.append((target, continuation))
                return false
            }
            guard done else { return }
            if hasStores {
                callbacks.async { continuation.resume() }
            } else {
                continuation.resume()
            }
        }
    }

    // MARK: Applying

    /// Applies what is queued, batch after batch, on ``queue``: `carried` is what
    /// an earlier pass took but has not applied yet. Returns when the queue is
    /// empty, or hands over to a task while remote stores write a batch (that task
    /// calls `drain` again on ``queue`` once they have answered).
    @inlinable
    func drain(_ carried: ArraySlice<Operation>) {
        var taken = carried
        while true {
            if taken.isEmpty {
                taken = state.withLock { state -> ArraySlice<Operation> in
                    if state.queue.isEmpty {
                        state.running = false
                        return []
                    }
                    var taken: [Operation] = []
                    swap(&taken, &state.queue)
                    return taken[...]
                }
                if taken.isEmpty { return }
            }
            let end = taken.index(taken.startIndex, offsetBy: min(Self.batchLimit, taken.count))
            let batch = taken[taken.startIndex..<end]
            let rest = taken[end...]
            let (localFailures, encoded) = encodeAndWriteLocally(batch)
            for (position, operation) in zip(batch.indices, batch) where operation.completesLocally {
                operation.completion?(localFailures[position - batch.startIndex])
            }
            if remoteStores.isEmpty {
                complete(batch, failures: localFailures)
                taken = rest
                continue
            }
            // The next batch must not overtake this one: it starts from the task
            // once the remote stores have answered.
            Task(executorPreference: queue) {
                let failures = await self.writeRemotely(batch, encoded: encoded, failures: localFailures)
                self.complete(batch, failures: failures)
                self.queue.async { self.drain(rest) }
            }
            return
        }
    }

    /// Marks a batch applied, then resumes its waiters and the flushes it satisfies.
    @inlinable
    func complete(_ batch: ArraySlice<Operation>, failures: [(any Error)?]) {
        guard let last = batch.last else { return }
        let (waiters, rooms) = state.withLock { state in
            state.completed = last.sequence
            var rooms: [DispatchSemaphore] = []
            for operation in batch { state.queuedBytes -= operation.bytes }
            if !state.roomWaiters.isEmpty, state.queuedBytes < queueByteLimit ?? .max {
                swap(&rooms, &state.roomWaiters)
            }
            for operation in batch {
                switch operation.kind {
                case .set(let key, _, _), .remove(let key, _):
                    if state.pending[key]?.sequence == operation.sequence { state.pending[key] = nil }
                case .removeAll:
                    if state.localClear == operation.sequence { state.localClear = nil }
                    if state.remoteClear == operation.sequence { state.remoteClear = nil }
                case .removeLocally(let keyString):
                    if state.removedLocally[keyString] == operation.sequence { state.removedLocally[keyString] = nil }
                case .promote:
                    break
                }
            }
            var ready: [CheckedContinuation<Void, Never>] = []
            if !state.flushWaiters.isEmpty {
                ready = state.flushWaiters.filter { $0.0 <= last.sequence }.map(\.1)
                state.flushWaiters.removeAll { $0.0 <= last.sequence }
            }
            return (ready, rooms)
        }
        for room in rooms { room.signal() }
        for (position, operation) in zip(batch.indices, batch) where !operation.completesLocally {
            operation.completion?(failures[position - batch.startIndex])
        }
        // After the batch's callbacks, already queued on `callbacks`.
        if !waiters.isEmpty {
            callbacks.async { for waiter in waiters { waiter.resume() } }
        }
    }

    /// Encodes the batch's values and writes the local stores, in one transaction
    /// each when every change is accepted (``_StoreBatch`` says what happens when
    /// one is refused).
    ///
    /// - Returns: The first error per operation and the encoded values, by position
    ///   in the batch.
    @inlinable
    func encodeAndWriteLocally(_ batch: ArraySlice<Operation>) -> ([(any Error)?], [Data?]) {
        var failures = [(any Error)?](repeating: nil, count: batch.count)
        var encoded = [Data?](repeating: nil, count: batch.count)
        var encodedBytes = 0
        var encodedCount = 0
        defer {
            if encodedCount > 0 {
                let mean = encodedBytes / encodedCount
                state.withLock { $0.meanEncodedBytes = ($0.meanEncodedBytes * 3 + mean) / 4 }
            }
        }
        for position in 0..<batch.count {
            guard case .set(let key, let value, _) = batch[batch.startIndex + position].kind else { continue }
            guard let codec else {
                failures[position] = HoardError(.noCodec, "the cache has stores but no codec for \(Value.self)")
                continue
            }
            do {
                let data = try codec.encode(value)
                encoded[position] = data
                encodedBytes += data.count
                encodedCount += 1
            } catch {
                failures[position] = error
                report(CacheFailure(key: key.cacheKeyString, tier: .memory, operation: .encode, error: error))
            }
        }
        for (index, store) in localStores.enumerated() {
            let (writes, positions) = storeWrites(batch, encoded: encoded, tier: .local(index))
            var share = _StoreBatch(count: writes.count)
            while let range = share.next {
                do {
                    try _timed(timings, .write, .local(index)) { try store.write(Self.changes(writes, range)) }
                    share.finish(range, error: nil)
                } catch {
                    share.finish(range, error: error)
                }
            }
            noteFailures(of: share, writes: writes, positions: positions, tier: .local(index), into: &failures)
        }
        return (failures, encoded)
    }

    /// Hands the batch to every remote store in one ``RemoteCacheStore/write(_:)``
    /// when every change is accepted (``_StoreBatch`` says what happens when one is
    /// refused).
    @inlinable
    func writeRemotely(
        _ batch: ArraySlice<Operation>, encoded: [Data?], failures: [(any Error)?]
    ) async -> [(any Error)?] {
        var failures = failures
        for (index, store) in remoteStores.enumerated() {
            let (writes, positions) = storeWrites(batch, encoded: encoded, tier: .remote(index))
            var share = _StoreBatch(count: writes.count)
            while let range = share.next {
                do {
                    try await _timed(timings, .write, .remote(index)) {
                        try await store.write(Self.changes(writes, range))
                    }
                    share.finish(range, error: nil)
                } catch {
                    share.finish(range, error: error)
                }
            }
            noteFailures(of: share, writes: writes, positions: positions, tier: .remote(index), into: &failures)
        }
        return failures
    }

    /// The changes of `writes` in `range`: the array itself, uncopied, for the whole
    /// share (every batch that no store refuses).
    @inlinable
    static func changes(_ writes: [CacheStoreWrite], _ range: Range<Int>) -> [CacheStoreWrite] {
        range.count == writes.count ? writes : Array(writes[range])
    }

    /// Reports each change of a store's share that failed, with its key, and keeps
    /// the first error of each operation for its completion.
    @inlinable
    func noteFailures(
        of share: _StoreBatch, writes: [CacheStoreWrite], positions: [Int], tier: CacheTier,
        into failures: inout [(any Error)?]
    ) {
        for (position, error) in share.failures {
            if failures[positions[position]] == nil { failures[positions[position]] = error }
            let write = writes[position]
            report(
                CacheFailure(
                    key: Self.key(of: write), tier: tier, operation: Self.isRemoval(write) ? .remove : .write,
                    error: error))
        }
    }

    /// The writes one store applies for a batch, and the batch position each came
    /// from.
    @inlinable
    func storeWrites(
        _ batch: ArraySlice<Operation>, encoded: [Data?], tier: CacheTier
    ) -> (writes: [CacheStoreWrite], positions: [Int]) {
        var writes: [CacheStoreWrite] = []
        writes.reserveCapacity(batch.count)
        var positions: [Int] = []
        positions.reserveCapacity(batch.count)
        let remote: Bool
        let localIndex: Int
        switch tier {
        case .local(let index): (remote, localIndex) = (false, index)
        default: (remote, localIndex) = (true, -1)
        }
        for position in 0..<batch.count {
            switch batch[batch.startIndex + position].kind {
            case .set(let key, _, let dates):
                guard let data = encoded[position] else {
                    // The value could not be encoded: no store may keep serving the
                    // value it replaces, so the key is removed from every store
                    // (and the remote stores announce it to other instances).
                    writes.append(.removeValue(for: key._storeKeyString, in: namespace))
                    positions.append(position)
                    continue
                }
                writes.append(
                    .set(
                        data, for: key._storeKeyString, in: namespace, storedAt: dates.storedAt,
                        expiresAt: remote ? dates.remoteExpiry : dates.localExpiry))
            case .promote(let key, let data, let storedAt, let expiresAt, let before):
                guard !remote, localIndex < before else { continue }
                writes.append(
                    .set(data, for: key._storeKeyString, in: namespace, storedAt: storedAt, expiresAt: expiresAt))
            case .remove(let key, let fromRemote):
                guard !remote || fromRemote else { continue }
                writes.append(.removeValue(for: key._storeKeyString, in: namespace))
            case .removeLocally(let keyString):
                guard !remote else { continue }
                writes.append(.removeValue(for: keyString, in: namespace))
            case .removeAll(let local, let clearsRemote):
                guard remote ? clearsRemote : local else { continue }
                writes.append(.removeAll(in: namespace))
            }
            positions.append(position)
        }
        return (writes, positions)
    }

    @inlinable
    static func key(of write: CacheStoreWrite) -> String? {
        switch write {
        case .set(_, let key, _, _, _), .removeValue(let key, _): key
        case .removeAll: nil
        }
    }

    /// Whether a failed change removed entries (reported as a removal).
    @inlinable
    static func isRemoval(_ write: CacheStoreWrite) -> Bool {
        if case .set = write { false } else { true }
    }
}
