import Foundation
import Synchronization

/// The serial writer of a ``Cache``: applies writes to the stores in the order they
/// were made, many per store transaction, and remembers what is still pending so
/// reads never see an older value from a store while a newer write waits.
///
/// Work runs on the writer's own serial dispatch queue, started when the first
/// write arrives and ending when the queue is empty: encoding and the local stores'
/// writes block a thread for as long as the disk takes, and that must never be one
/// of the few threads Swift concurrency shares among all tasks (on a two-core
/// machine, writes queued by a task would otherwise wait for that task to yield
/// before any of them reached the disk). Remote stores are async; the writer's
/// thread waits for them, which keeps every tier in write order. The writer holds
/// everything it needs (the stores, the codec), so queued writes complete even
/// after the cache is gone.
final class _CacheWriter<Key: CacheKey, Value: Sendable>: Sendable {
    /// One write, in the order it was made.
    struct Operation: Sendable {
        enum Kind: Sendable {
            case set(Key, Value, storedAt: Date, localExpiry: Date?, remoteExpiry: Date?, local: Bool)
            case remove(Key)
            case removeAll(local: Bool, remote: Bool)
        }

        var sequence: UInt64
        var kind: Kind
        /// Resumed when every store has applied the operation; with the first error.
        var completion: CheckedContinuation<Void, any Error>?
    }

    /// What a read must see for a key while its write is queued.
    enum Pending: Sendable {
        case value(Value, storedAt: Date, expiresAt: Date?)
        case removed
    }

    /// The newest queued write of a key, and its place in the queue. (A struct,
    /// not a tuple: unspecialised generic code pays a metadata lookup per tuple use.)
    private struct Queued {
        var sequence: UInt64
        var value: Pending
    }

    private struct State {
        var queue: [Operation] = []
        var pending: [Key: Queued] = [:]
        /// The sequence of the newest queued `removeAll` of the local stores, if any.
        var pendingClear: UInt64?
        var nextSequence: UInt64 = 1
        var completed: UInt64 = 0
        var running = false
        var flushWaiters: [(UInt64, CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())
    private let namespace: String
    private let localStores: [any CacheStore]
    private let remoteStores: [any RemoteCacheStore]
    private let codec: ValueCodec<Value>?
    private let report: @Sendable (CacheFailure) -> Void
    /// Where batches are applied, one at a time.
    private let queue = DispatchQueue(label: "Hoard.Cache.writer", qos: .utility)
    /// The most operations applied in one store transaction: large enough that the
    /// commit is a small part of a batch, small enough that readers of the store
    /// are not held off for long.
    static var batchLimit: Int { 4_096 }

    init(
        namespace: String, localStores: [any CacheStore], remoteStores: [any RemoteCacheStore],
        codec: ValueCodec<Value>?, report: @escaping @Sendable (CacheFailure) -> Void
    ) {
        self.namespace = namespace
        self.localStores = localStores
        self.remoteStores = remoteStores
        self.codec = codec
        self.report = report
    }

    var hasStores: Bool { !localStores.isEmpty || !remoteStores.isEmpty }

    /// Queues an operation; `completion`, when given, is resumed once it is applied.
    func enqueue(_ kind: Operation.Kind, completion: CheckedContinuation<Void, any Error>? = nil) {
        guard hasStores else {
            completion?.resume()
            return
        }
        let start = state.withLock { state -> Bool in
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.queue.append(Operation(sequence: sequence, kind: kind, completion: completion))
            switch kind {
            case .set(let key, let value, let storedAt, let localExpiry, _, let local) where local:
                state.pending[key] = Queued(sequence: sequence, value: .value(value, storedAt: storedAt, expiresAt: localExpiry))
            case .set:
                break
            case .remove(let key):
                state.pending[key] = Queued(sequence: sequence, value: .removed)
            case .removeAll(let local, _):
                if local {
                    state.pending = [:]
                    state.pendingClear = sequence
                }
            }
            if state.running { return false }
            state.running = true
            return true
        }
        if start {
            queue.async { self.drain() }
        }
    }

    /// Queues an operation and waits until every store has applied it.
    ///
    /// - Throws: The first error a store threw for it.
    func apply(_ kind: Operation.Kind) async throws {
        try await withCheckedThrowingContinuation { continuation in
            enqueue(kind, completion: continuation)
        }
    }

    /// The queued state of `key`: `nil` when nothing is queued for it. When a
    /// clear of the local stores is queued, keys with no newer write read as removed.
    func pending(_ key: Key) -> Pending? {
        state.withLock { state in
            if let entry = state.pending[key] { return entry.value }
            return state.pendingClear == nil ? nil : .removed
        }
    }

    /// Waits until every operation queued before this call has been applied.
    func flush() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                let target = state.nextSequence - 1
                if state.completed >= target { return true }
                state.flushWaiters.append((target, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Takes everything queued at once (one lock, no shifting of a long queue) and
    /// applies it in store transactions of at most ``batchLimit`` operations. Runs
    /// on ``queue``.
    private func drain() {
        while true {
            let taken = state.withLock { state -> [Operation] in
                if state.queue.isEmpty {
                    state.running = false
                    return []
                }
                var taken: [Operation] = []
                swap(&taken, &state.queue)
                return taken
            }
            if taken.isEmpty { return }
            var start = taken.startIndex
            while start < taken.endIndex {
                let end = min(start + Self.batchLimit, taken.endIndex)
                complete(taken[start..<end])
                start = end
            }
        }
    }

    /// Applies one batch, then resumes its waiters and the flushes it satisfies.
    private func complete(_ batch: ArraySlice<Operation>) {
        guard let last = batch.last else { return }
        let (localFailures, encoded) = encodeAndWriteLocally(batch)
        let failures = remoteStores.isEmpty
            ? localFailures : waitForRemoteWrites(batch, encoded: encoded, failures: localFailures)
        let (completions, waiters) = state.withLock { state in
            state.completed = last.sequence
            for operation in batch {
                switch operation.kind {
                case .set(let key, _, _, _, _, _), .remove(let key):
                    if state.pending[key]?.sequence == operation.sequence { state.pending[key] = nil }
                case .removeAll:
                    if state.pendingClear == operation.sequence { state.pendingClear = nil }
                }
            }
            var ready: [CheckedContinuation<Void, Never>] = []
            if !state.flushWaiters.isEmpty {
                ready = state.flushWaiters.filter { $0.0 <= last.sequence }.map(\.1)
                state.flushWaiters.removeAll { $0.0 <= last.sequence }
            }
            return (batch.indices.compactMap { i in batch[i].completion.map { (i, $0) } }, ready)
        }
        for (position, completion) in completions {
            if let error = failures[position - batch.startIndex] {
                completion.resume(throwing: error)
            } else {
                completion.resume()
            }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Encodes the batch's values and writes the local stores, in one transaction
    /// each.
    ///
    /// - Returns: The first error per operation and the encoded values, by position
    ///   in the batch.
    private func encodeAndWriteLocally(_ batch: ArraySlice<Operation>) -> ([(any Error)?], [Data?]) {
        var failures = [(any Error)?](repeating: nil, count: batch.count)
        var encoded = [Data?](repeating: nil, count: batch.count)
        for position in 0..<batch.count {
            guard case .set(let key, let value, _, _, _, let local) = batch[batch.startIndex + position].kind else { continue }
            // A write-through set already reached the local stores from the caller;
            // it needs bytes here only for the remote stores.
            guard local || !remoteStores.isEmpty else { continue }
            guard let codec else {
                failures[position] = HoardError(.noCodec, "the cache has stores but no codec for \(Value.self)")
                continue
            }
            do {
                encoded[position] = try codec.encode(value)
            } catch {
                failures[position] = error
                report(CacheFailure(key: key.cacheKeyString, tier: .memory, operation: .encode, error: error))
            }
        }
        guard !localStores.isEmpty else { return (failures, encoded) }

        let (writes, positions) = storeWrites(batch, encoded: encoded, remote: false)
        guard !writes.isEmpty else { return (failures, encoded) }
        for (index, store) in localStores.enumerated() {
            do {
                try store.write(writes)
            } catch {
                for position in positions where failures[position] == nil { failures[position] = error }
                report(CacheFailure(key: writes.count == 1 ? Self.key(of: writes[0]) : nil,
                                    tier: .local(index), operation: .write, error: error))
            }
        }
        return (failures, encoded)
    }

    /// Writes the batch to the remote stores from a task, and blocks the writer's
    /// thread (never a Swift concurrency thread) until they have answered, so the
    /// next batch cannot overtake this one.
    ///
    /// - Returns: `failures` with the remote stores' first error added for each
    ///   operation that had none.
    private func waitForRemoteWrites(
        _ batch: ArraySlice<Operation>, encoded: [Data?], failures: [(any Error)?]
    ) -> [(any Error)?] {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex(failures)
        Task {
            let updated = await self.writeRemotely(batch, encoded: encoded, failures: failures)
            result.withLock { $0 = updated }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    /// Hands the batch to every remote store in one ``RemoteCacheStore/write(_:)``.
    private func writeRemotely(
        _ batch: ArraySlice<Operation>, encoded: [Data?], failures: [(any Error)?]
    ) async -> [(any Error)?] {
        var failures = failures
        let (writes, positions) = storeWrites(batch, encoded: encoded, remote: true)
        guard !writes.isEmpty else { return failures }
        for (index, store) in remoteStores.enumerated() {
            do {
                try await store.write(writes)
            } catch {
                for position in positions where failures[position] == nil { failures[position] = error }
                report(CacheFailure(key: writes.count == 1 ? Self.key(of: writes[0]) : nil,
                                    tier: .remote(index), operation: Self.isRemoval(writes) ? .remove : .write,
                                    error: error))
            }
        }
        return failures
    }

    /// The store writes of one tier for a batch, and the batch position each came
    /// from: sets that have bytes (and, for the local tier, were not already written
    /// through by the caller), with the tier's expiry; removals; and clears of the
    /// namespace the tier takes part in.
    private func storeWrites(
        _ batch: ArraySlice<Operation>, encoded: [Data?], remote: Bool
    ) -> (writes: [CacheStoreWrite], positions: [Int]) {
        var writes: [CacheStoreWrite] = []
        writes.reserveCapacity(batch.count)
        var positions: [Int] = []
        positions.reserveCapacity(batch.count)
        for position in 0..<batch.count {
            switch batch[batch.startIndex + position].kind {
            case .set(let key, _, let storedAt, let localExpiry, let remoteExpiry, let local):
                guard remote || local, let data = encoded[position] else { continue }
                writes.append(.set(
                    data, for: key.cacheKeyString, in: namespace, storedAt: storedAt,
                    expiresAt: remote ? remoteExpiry : localExpiry))
            case .remove(let key):
                writes.append(.removeValue(for: key.cacheKeyString, in: namespace))
            case .removeAll(let local, let clearsRemote):
                guard remote ? clearsRemote : local else { continue }
                writes.append(.removeAll(in: namespace))
            }
            positions.append(position)
        }
        return (writes, positions)
    }

    private static func key(of write: CacheStoreWrite) -> String? {
        switch write {
        case .set(_, let key, _, _, _), .removeValue(let key, _): key
        case .removeAll: nil
        }
    }

    /// Whether a failed batch only removed entries (reported as a removal).
    private static func isRemoval(_ writes: [CacheStoreWrite]) -> Bool {
        writes.allSatisfy { if case .set = $0 { false } else { true } }
    }
}
