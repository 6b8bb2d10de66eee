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
/// - A change a store did not apply (the store failed as a whole, or refused the
///   change and then the removal of its key) leaves the key *suspect* in that
///   store (``_SuspectKeys``): reads skip the key there, and the store's next
///   share of a batch starts with its removal, until the store applies a change
///   of the key: a read never takes from a store a value this cache replaced
///   or removed. A flush sends those removals once after the changes it waits
///   for, in a repair pass (an empty batch) when nothing else is queued, so a
///   program that flushes and exits leaves no such value in a store that is
///   reachable again. While a store has suspect keys, the writer also flushes
///   after a delay (``_RepairRetry``), so a cache that writes nothing more still
///   repairs a store that recovered.
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
    @usableFromInline typealias Operation = _WriteOperation<Key, Value>
    @usableFromInline typealias Pending = _PendingRead<Value>

    /// Every decision of the writer: the order, what reads see, the queue and its
    /// waiters. The writer calls its transitions under this lock and performs their
    /// outcomes after.
    @usableFromInline let state: Mutex<_WriterState<Key, Value>>
    /// How many reads hold a ticket: lets memory-only writes skip the lock when
    /// nobody reads below memory.
    @usableFromInline let readsInFlight = Atomic<Int>(0)
    /// The keys each store may hold an older value of; changed only on ``queue``.
    let suspects = Mutex(_SuspectKeys())
    /// How many stores have suspect keys: a read of a store asks ``suspects`` only
    /// when some do. Stored under that lock, before the batch that changed it
    /// completes (so a read that begins after sees it).
    @usableFromInline let suspectStores = Atomic<Int>(0)
    let namespace: String
    let localStores: [any CacheStore]
    let remoteStores: [any RemoteCacheStore]
    let codec: ValueCodec<Value>?
    /// Reports a failure of the writer's work: counted and published at once,
    /// logged and handed to `onError` on ``callbacks``.
    let report: @Sendable (CacheFailure) -> Void
    /// The cache's `timings`, called on ``callbacks``.
    let timings: (@Sendable (CacheTiming) -> Void)?
    /// The serial queue batches are applied on, one at a time, and the executor of
    /// the task that awaits a batch's remote writes.
    let queue = _BlockingExecutor(label: "Hoard.Cache.writer", width: 1)
    /// The serial queue the cache's callbacks for the writer's work run on, in
    /// order; ``flush()`` resumes on it, after the callbacks of what it waited for.
    let callbacks: DispatchQueue
    /// Flushes after a delay while a store has suspect keys; `nil` when the cache
    /// has no stores or its configuration turned the retry off.
    let repairRetry: _RepairRetry?
    /// The most operations applied in one store transaction: large enough that the
    /// commit is a small part of a batch, small enough that readers of the store
    /// are not held off for long.
    static var batchLimit: Int { 4_096 }

    /// - Parameters:
    ///   - timings: The cache's `timings`, for the store writes.
    ///   - onError: The cache's logger and `onError`, for the failures of the
    ///     writer's work.
    ///   - report: Counts and publishes those failures (on the writer's own threads:
    ///     it must not call the cache's callbacks or its log handler).
    ///   - repairRetry: Flushes after a delay while a store has suspect keys; `nil`
    ///     for no timed retry. Ignored when there are no stores.
    init(
        namespace: String, localStores: [any CacheStore], remoteStores: [any RemoteCacheStore],
        codec: ValueCodec<Value>?,
        queueByteLimit: Int? = nil,
        size: (@Sendable (Value) -> Int)? = nil,
        timings: (@Sendable (CacheTiming) -> Void)? = nil,
        onError: (@Sendable (CacheFailure) -> Void)? = nil,
        repairRetry: _RepairRetry? = nil,
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
        self.repairRetry = hasStores ? repairRetry : nil
        state = Mutex(
            _WriterState(hasStores: hasStores, hasRemoteStores: !remoteStores.isEmpty, queueByteLimit: queueByteLimit))
        self.codec = codec
        self.size = size
        self.report = { failure in
            report(failure)
            if let onError { callbacks.async { onError(failure) } }
        }
    }

    /// Whether the cache has any store (else every write is memory only).
    @usableFromInline let hasStores: Bool
    /// The size of a value before it is encoded, when it is known (``CacheValue``'s
    /// cost); otherwise a queued value counts as the mean encoded size so far.
    @usableFromInline let size: (@Sendable (Value) -> Int)?

    /// The bytes of values queued for the stores and not yet applied.
    var queuedBytes: Int { state.withLock { $0.queuedBytes } }

    /// What `kind` counts against the queue's budget: `nil` when it is a value of
    /// unknown size. A value's stated size counts as a memory tier counts a cost:
    /// below zero as nothing, past ``largestValueSize`` as that.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    func queuedSize(of kind: Operation.Kind) -> Int? {
        switch kind {
        case .set(_, let value, _): size.map { min(max(0, $0(value)), Self.largestValueSize) }
        case .promote(_, _, let data, _, _, _): data.count
        case .remove, .removeLocally, .removeAll: 0
        }
    }

    /// The most one value's stated size counts against the queue's budget, 2^32 − 1
    /// (the most a cost counts in a memory tier): a value type that states more (or
    /// less than zero) neither overflows the queue's count nor runs it backwards.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    static var largestValueSize: Int { Int(UInt32.max) }

    /// Whether no read holds a ticket, so a memory-only write needs no sequence
    /// number (no promotion or fetch in flight could be overtaken by it).
    ///
    /// A write that skips the lock on this answer must ask again after writing
    /// memory: a read that took its ticket in between may have missed the value
    /// (it looks at memory again after taking its ticket, so a read that took it
    /// after the second answer sees the value). The load is sequentially
    /// consistent, as the readers' increment is, so that it is not reordered
    /// before the memory write.
    @inlinable  // CacheBenchmarks "memory set: Cache (no stores)"
    var isQuiet: Bool { readsInFlight.load(ordering: .sequentiallyConsistent) == 0 }

    // MARK: Writing

    /// Gives `kind` its place in the order, applies its change to memory (`memory`,
    /// run under the writer's lock so no promotion can come between the two), and
    /// queues it for the stores. `completion`, when given, is called once every
    /// store has applied it, or only the local stores when `completesLocally` (at
    /// once when there are no stores, or when the write is dropped).
    ///
    /// - Parameters:
    ///   - ticket: When given, the write is made only if the key has not changed
    ///     since this read ticket (a fetched value).
    ///   - waitsForRoom: Whether the calling thread waits, before the write is made,
    ///     while the values queued for the stores are over the queue's byte budget
    ///     (the subscript setter: a producer faster than the stores is slowed to
    ///     their pace instead of growing the queue). Other writes are bounded by
    ///     their callers, which wait for them.
    /// - Returns: Whether the write was made.
    ///
    /// Inlinable, with the state's transition it calls, so that the caller's side
    /// of a write is specialised for the cache's types.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    @discardableResult
    func write(
        _ kind: Operation.Kind,
        ifUnchangedSince ticket: UInt64? = nil,
        waitsForRoom: Bool = false,
        memory: () -> Void,
        completesLocally: Bool = false,
        completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> Bool {
        let bytes = hasStores ? queuedSize(of: kind) : 0
        while true {
            // A semaphore only for a writer that waits for room (most never do).
            var room: DispatchSemaphore?
            let outcome = state.withLock { state in
                let outcome = state.write(
                    kind, ifUnchangedSince: ticket, bytes: bytes, waitsForRoom: waitsForRoom,
                    completesLocally: completesLocally, completion: completion)
                switch outcome {
                case .madeInMemory, .queued: memory()
                case .waitsForRoom:
                    let semaphore = DispatchSemaphore(value: 0)
                    state.waitForRoom { semaphore.signal() }
                    room = semaphore
                case .dropped: break
                }
                return outcome
            }
            switch outcome {
            case .waitsForRoom:
                // Over the budget: wait until the writer has applied enough.
                room?.wait()
            case .dropped, .madeInMemory:
                completion?(nil)
                return outcome.isMade
            case .queued(let startsApplying):
                if startsApplying { startApplying() }
                return true
            }
        }
    }

    /// Like ``write(_:ifUnchangedSince:waitsForRoom:memory:completesLocally:completion:)``,
    /// and returns once every store has applied the write, with the first error a
    /// store threw.
    func apply(_ kind: Operation.Kind, memory: () -> Void) async throws {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<(any Error)?, Never>) in
            write(kind, memory: memory) { continuation.resume(returning: $0) }
        }
        if let result { throw result }
    }

    /// Like ``write(_:ifUnchangedSince:waitsForRoom:memory:completesLocally:completion:)``,
    /// and blocks the calling thread until the local stores have applied the write
    /// (the subscript setter in write-through mode; the remote stores follow in the
    /// background). The writer never needs the calling thread or the cooperative
    /// pool to get there.
    @usableFromInline
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
    @usableFromInline
    func beginRead(_ key: Key) -> (ticket: UInt64, pending: Pending?) {
        readsInFlight.add(1, ordering: .sequentiallyConsistent)
        return state.withLock { $0.beginRead(key) }
    }

    /// Whether `key` was changed (or every key, by a clear) at or after `ticket`,
    /// a ticket of a read still in flight.
    @usableFromInline
    func hasChanged(_ key: Key, since ticket: UInt64) -> Bool {
        state.withLock { $0.hasChanged(key, since: ticket) }
    }

    /// Holds `ticket` for one more read (a fetch that outlives the caller that
    /// started it); give it back with ``endRead(_:)``.
    func retainRead(_ ticket: UInt64) {
        readsInFlight.add(1, ordering: .sequentiallyConsistent)
        state.withLock { $0.retainRead(ticket) }
    }

    /// Ends a read started with ``beginRead(_:)``.
    @usableFromInline
    func endRead(_ ticket: UInt64) {
        state.withLock { $0.endRead(ticket) }
        readsInFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Copies what a read found into faster tiers unless `key` changed since the
    /// read's `ticket`: runs `memory` and queues `stores` in one step (the stores
    /// are skipped, and memory still promoted, when the queue is over its byte
    /// budget). A promotion into memory alone is ``promoteToMemory(_:ticket:memory:)``.
    ///
    /// - Returns: Whether the promotion was made; `false` when it was dropped
    ///   because a newer write, removal, clear or invalidation came first.
    @usableFromInline
    func promote(_ key: Key, ticket: UInt64, memory: () -> Void, stores: Operation.Kind) -> Bool {
        let bytes = queuedSize(of: stores) ?? 0
        let outcome = state.withLock { state in
            let outcome = state.promote(key, ifUnchangedSince: ticket, stores: stores, bytes: bytes)
            if outcome != .dropped { memory() }
            return outcome
        }
        switch outcome {
        case .dropped: return false
        case .madeInMemory: return true
        case .queued(let startsApplying):
            if startsApplying { startApplying() }
            return true
        }
    }

    /// ``promote(_:ticket:memory:stores:)`` with nothing for the stores: runs
    /// `memory` unless `key` changed since `ticket`, in one step.
    ///
    /// - Returns: Whether the promotion was made; `false` when it was dropped
    ///   because a newer write, removal, clear or invalidation came first.
    ///
    /// A method of its own, so that a promotion into memory alone (every disk hit
    /// of a cache with one local store) never names the generic operation and
    /// outcome types: this code is not specialised for the cache's key and value,
    /// and each type it names built from them is a lookup in the runtime's
    /// metadata tables (`Benchmarks/README.md`).
    @usableFromInline
    func promoteToMemory(_ key: Key, ticket: UInt64, memory: () -> Void) -> Bool {
        state.withLock { state in
            guard !state.hasChanged(key, since: ticket) else { return false }
            memory()
            return true
        }
    }

    /// Waits until every operation queued before this call has been applied, then
    /// until every store with suspect keys (``_SuspectKeys``) has been sent their
    /// repairs once (with the next batch, or in a repair pass of their own when
    /// nothing else is queued), and the callbacks of that work have returned. A
    /// repair that fails keeps its key suspect and is not reported.
    func flush() async {
        await withCheckedContinuation { continuation in
            let outcome = state.withLock { state in
                state.flush(hasSuspectKeys: suspectStores.load(ordering: .acquiring) != 0) {
                    continuation.resume()
                }
            }
            switch outcome {
            case .done where hasStores:
                callbacks.async { continuation.resume() }
            case .done:
                continuation.resume()
            case .waits(let startsApplying):
                if startsApplying { startApplying() }
            }
        }
    }

    /// Whether the store of `tier` may hold an older value of the key whose store
    /// string is `keyString`, so that a read must not take its answer
    /// (``_SuspectKeys``). One atomic load while no store has a suspect key.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache"
    func isSuspect(_ keyString: String, in tier: CacheTier) -> Bool {
        suspectStores.load(ordering: .acquiring) != 0 && isSuspectInStore(keyString, in: tier)
    }

    /// ``isSuspect(_:in:)`` once some store has suspect keys: asks under the lock.
    @usableFromInline
    func isSuspectInStore(_ keyString: String, in tier: CacheTier) -> Bool {
        suspects.withLock { $0.isSuspect(keyString, in: tier) }
    }

    // MARK: Applying

    /// Starts applying the queue on ``queue`` (the state said the writer was idle).
    @usableFromInline
    func startApplying() {
        queue.async { self.drain(ArraySlice()) }
    }

    /// Applies what is queued, batch after batch, on ``queue``: `carried` is what
    /// an earlier pass took but has not applied yet. Returns when the queue is
    /// empty, or hands over to a task while remote stores write a batch (that task
    /// calls `drain` again on ``queue`` once they have answered). When the queue is
    /// empty and a flush waits for the stores' repairs, applies an empty batch
    /// first: a repair pass, every store's share of which is its repairs.
    func drain(_ carried: ArraySlice<Operation>) {
        var taken = carried
        while true {
            if taken.isEmpty {
                let queued = state.withLock { state -> [Operation]? in
                    let queued = state.takeQueued()
                    return queued.isEmpty && !state.isApplying ? nil : queued
                }
                guard let queued else { return }
                taken = queued[...]
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

    /// Marks a batch applied, then resumes its waiters and the flushes it satisfies,
    /// and schedules a timed retry of the repairs when a store is left with suspect
    /// keys.
    func complete(_ batch: ArraySlice<Operation>, failures: [(any Error)?]) {
        // The batch's shares are settled: a store left with suspect keys is seen.
        let hasSuspectKeys = suspectStores.load(ordering: .acquiring) != 0
        let released = state.withLock { $0.complete(batch, hasSuspectKeys: hasSuspectKeys) }
        repairRetry?.batchSettled(hasSuspectKeys: hasSuspectKeys) { [weak self] in await self?.flush() }
        for wake in released.roomWaiters { wake() }
        for (position, operation) in zip(batch.indices, batch) where !operation.completesLocally {
            operation.completion?(failures[position - batch.startIndex])
        }
        // After the batch's callbacks, already queued on `callbacks`.
        if !released.flushes.isEmpty {
            callbacks.async { for resume in released.flushes { resume() } }
        }
    }

    /// Encodes the batch's values and writes the local stores, in one transaction
    /// each when every change is accepted (``_StoreBatch`` says what happens when
    /// one is refused).
    ///
    /// - Returns: The first error per operation and the encoded values, by position
    ///   in the batch.
    func encodeAndWriteLocally(_ batch: ArraySlice<Operation>) -> ([(any Error)?], [Data?]) {
        var failures = [(any Error)?](repeating: nil, count: batch.count)
        var encoded = [Data?](repeating: nil, count: batch.count)
        var encodedBytes = 0
        var encodedCount = 0
        defer {
            if encodedCount > 0 {
                let mean = encodedBytes / encodedCount
                state.withLock { $0.noteEncoded(meanBytes: mean) }
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
            let (writes, positions) = shareWithRepairs(of: batch, encoded: encoded, tier: .local(index))
            var share = _StoreBatch(count: writes.count)
            while let range = share.next {
                do {
                    try _timed(timings, .write, .local(index)) { try store.write(Self.changes(writes, range)) }
                    share.finish(range, error: nil)
                } catch {
                    share.finish(range, error: error)
                }
            }
            noteFailures(
                of: share, batch: batch, writes: writes, positions: positions, tier: .local(index),
                into: &failures)
            let stale = share.staleKeys(of: writes)
            var staleRemoved = true
            if !stale.isEmpty {
                do {
                    try _timed(timings, .write, .local(index)) { try store.write(Self.removals(of: stale, in: writes)) }
                } catch {
                    staleRemoved = false
                    noteStaleKeysLeft(stale, batch: batch, positions: positions, tier: .local(index), error: error)
                }
            }
            settleSuspects(writes, share: share, stale: staleRemoved ? stale : [], tier: .local(index))
        }
        return (failures, encoded)
    }

    /// Hands the batch to every remote store in one ``RemoteCacheStore/write(_:)``
    /// when every change is accepted (``_StoreBatch`` says what happens when one is
    /// refused).
    func writeRemotely(
        _ batch: ArraySlice<Operation>, encoded: [Data?], failures: [(any Error)?]
    ) async -> [(any Error)?] {
        var failures = failures
        for (index, store) in remoteStores.enumerated() {
            let (writes, positions) = shareWithRepairs(of: batch, encoded: encoded, tier: .remote(index))
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
            noteFailures(
                of: share, batch: batch, writes: writes, positions: positions, tier: .remote(index),
                into: &failures)
            let stale = share.staleKeys(of: writes)
            var staleRemoved = true
            if !stale.isEmpty {
                do {
                    try await _timed(timings, .write, .remote(index)) {
                        try await store.write(Self.removals(of: stale, in: writes))
                    }
                } catch {
                    staleRemoved = false
                    noteStaleKeysLeft(stale, batch: batch, positions: positions, tier: .remote(index), error: error)
                }
            }
            settleSuspects(writes, share: share, stale: staleRemoved ? stale : [], tier: .remote(index))
        }
        return failures
    }

    /// The changes of `writes` in `range`: the array itself, uncopied, for the whole
    /// share (every batch that no store refuses).
    static func changes(_ writes: [CacheStoreWrite], _ range: Range<Int>) -> [CacheStoreWrite] {
        range.count == writes.count ? writes : Array(writes[range])
    }

    /// Reports each change of a store's share that failed, with its key, and keeps
    /// the first error of each operation for its completion. A repair of a suspect
    /// key (batch position -1) that failed is not reported: the change it repairs
    /// was, when it failed, and the key stays suspect until a later share repairs
    /// it.
    func noteFailures(
        of share: _StoreBatch, batch: ArraySlice<Operation>, writes: [CacheStoreWrite], positions: [Int],
        tier: CacheTier, into failures: inout [(any Error)?]
    ) {
        for (position, error) in share.failures where positions[position] >= 0 {
            let operation = positions[position]
            if failures[operation] == nil { failures[operation] = error }
            report(
                CacheFailure(
                    key: Self.keyString(of: batch[batch.startIndex + operation].kind), tier: tier,
                    operation: Self.isRemoval(writes[position]) ? .remove : .write, error: error))
        }
    }

    /// The removals of the keys of `writes` at the share positions `stale`
    /// (``_StoreBatch/staleKeys(of:)``).
    static func removals(of stale: [Int], in writes: [CacheStoreWrite]) -> [CacheStoreWrite] {
        stale.compactMap { position in
            _StoreBatch.Key(writes[position]).map { .removeValue(for: $0.key, in: $0.namespace) }
        }
    }

    /// Reports each key a store could neither change nor remove after a failed
    /// change (the key is then suspect in that store: ``settleSuspects(_:share:stale:tier:)``),
    /// as a failed removal. A repair of a suspect key (batch position -1) is not
    /// reported again.
    func noteStaleKeysLeft(
        _ stale: [Int], batch: ArraySlice<Operation>, positions: [Int], tier: CacheTier, error: any Error
    ) {
        for position in stale where positions[position] >= 0 {
            report(
                CacheFailure(
                    key: Self.keyString(of: batch[batch.startIndex + positions[position]].kind), tier: tier,
                    operation: .remove, error: error))
        }
    }

    /// The key a failed change is reported under: the caller's key
    /// (``CacheKey/cacheKeyString``), as every failure of the cache is.
    static func keyString(of kind: Operation.Kind) -> String? {
        switch kind {
        case .set(let key, _, _), .promote(let key, _, _, _, _, _), .remove(let key, _): key.cacheKeyString
        case .removeLocally(let keyString): keyString
        case .removeAll: nil
        }
    }

    /// The writes one store applies for a batch, and the batch position each came
    /// from: first the repairs of the store's suspect keys (``_SuspectKeys/repairs(for:namespace:)``,
    /// position -1; a key the batch changes too is removed, then changed), then
    /// ``storeWrites(_:encoded:tier:)``.
    func shareWithRepairs(
        of batch: ArraySlice<Operation>, encoded: [Data?], tier: CacheTier
    ) -> (writes: [CacheStoreWrite], positions: [Int]) {
        let (writes, positions) = storeWrites(batch, encoded: encoded, tier: tier)
        guard suspectStores.load(ordering: .relaxed) != 0 else { return (writes, positions) }
        let repairs = suspects.withLock { $0.repairs(for: tier, namespace: namespace) }
        guard !repairs.isEmpty else { return (writes, positions) }
        return (repairs + writes, [Int](repeating: -1, count: repairs.count) + positions)
    }

    /// Notes which changes of a store's share the store did not apply, so that
    /// their keys are suspect there (``_SuspectKeys``), and which it applied, so
    /// that theirs are not: a change failed unless the store refused its key
    /// (`invalidName`: it holds nothing for it) or it is in `stale`, the changes
    /// refused for a reason of their own whose keys were then removed.
    func settleSuspects(_ writes: [CacheStoreWrite], share: _StoreBatch, stale: [Int], tier: CacheTier) {
        guard !share.failures.isEmpty || suspectStores.load(ordering: .relaxed) != 0 else { return }
        var applied = [Bool](repeating: true, count: writes.count)
        for (position, error) in share.failures where (error as? HoardError)?.code != .invalidName {
            applied[position] = false
        }
        for position in stale { applied[position] = true }
        suspects.withLock { suspects in
            suspects.settle(writes, applied: applied, in: tier)
            suspectStores.store(suspects.stores.count, ordering: .releasing)
        }
    }

    /// The writes one store applies for a batch, and the batch position each came
    /// from.
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
            case .promote(let key, _, let data, let storedAt, let expiresAt, let before):
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

    /// Whether a failed change removed entries (reported as a removal).
    static func isRemoval(_ write: CacheStoreWrite) -> Bool {
        if case .set = write { false } else { true }
    }
}
