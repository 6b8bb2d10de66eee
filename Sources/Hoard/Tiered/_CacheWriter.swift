import Foundation
import Synchronization

/// The serial writer of a ``Cache``: applies writes to the stores in the order they
/// were made, many per store transaction, and remembers what is still pending so
/// reads never see an older value from a store while a newer write waits.
///
/// Work runs in one unstructured task at a time, started when the first write
/// arrives and ending when the queue is empty. It holds everything it needs (the
/// stores, the codec), so queued writes complete even after the cache is gone.
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
            Task { await self.drain() }
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
    /// applies it in store transactions of at most ``batchLimit`` operations.
    private func drain() async {
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
                await complete(taken[start..<end])
                start = end
            }
        }
    }

    /// Applies one batch, then resumes its waiters and the flushes it satisfies.
    private func complete(_ batch: ArraySlice<Operation>) async {
        guard let last = batch.last else { return }
        let failures = await apply(batch)
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

    /// Applies a batch to every store; returns the first error per operation, by
    /// position in the batch.
    private func apply(_ batch: ArraySlice<Operation>) async -> [(any Error)?] {
        var failures = [(any Error)?](repeating: nil, count: batch.count)
        var encoded = [Data?](repeating: nil, count: batch.count)
        for (position, operation) in zip(0..., batch) {
            guard case .set(let key, let value, _, _, _, _) = operation.kind else { continue }
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

        if !localStores.isEmpty {
            var writes: [CacheStoreWrite] = []
            writes.reserveCapacity(batch.count)
            var positions: [Int] = []
            positions.reserveCapacity(batch.count)
            for (position, operation) in zip(0..., batch) {
                switch operation.kind {
                case .set(let key, _, let storedAt, let localExpiry, _, let local):
                    guard local, let data = encoded[position] else { continue }
                    writes.append(.set(data, for: key.cacheKeyString, in: namespace, storedAt: storedAt, expiresAt: localExpiry))
                case .remove(let key):
                    writes.append(.removeValue(for: key.cacheKeyString, in: namespace))
                case .removeAll(let local, _):
                    guard local else { continue }
                    writes.append(.removeAll(in: namespace))
                }
                positions.append(position)
            }
            if !writes.isEmpty {
                for (index, store) in localStores.enumerated() {
                    do {
                        try store.write(writes)
                    } catch {
                        for position in positions where failures[position] == nil { failures[position] = error }
                        report(CacheFailure(key: writes.count == 1 ? Self.key(of: writes[0]) : nil,
                                            tier: .local(index), operation: .write, error: error))
                    }
                }
            }
        }

        if !remoteStores.isEmpty {
            var writes: [CacheStoreWrite] = []
            writes.reserveCapacity(batch.count)
            var positions: [Int] = []
            positions.reserveCapacity(batch.count)
            for (position, operation) in zip(0..., batch) {
                switch operation.kind {
                case .set(let key, _, let storedAt, _, let remoteExpiry, _):
                    guard let data = encoded[position] else { continue }
                    writes.append(.set(data, for: key.cacheKeyString, in: namespace, storedAt: storedAt, expiresAt: remoteExpiry))
                case .remove(let key):
                    writes.append(.removeValue(for: key.cacheKeyString, in: namespace))
                case .removeAll(_, let remote):
                    guard remote else { continue }
                    writes.append(.removeAll(in: namespace))
                }
                positions.append(position)
            }
            if !writes.isEmpty {
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
            }
        }
        return failures
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
