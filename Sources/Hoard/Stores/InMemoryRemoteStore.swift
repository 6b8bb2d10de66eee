import Foundation
import Synchronization

/// A ``RemoteCacheStore`` that keeps its entries in memory, for tests and
/// prototypes: several caches given the same instance behave as if they shared a
/// server.
///
/// It can be told to fail (``failsWith``) to test how a cache copes with an
/// unavailable remote tier, and counts the calls it receives.
public final class InMemoryRemoteStore: RemoteCacheStore {
    private struct State {
        var entries: [String: [String: StoredEntry]] = [:]
        var failure: (any Error)?
        var reads = 0
        var writes = 0
        var subscribers: [Int: (namespace: String, continuation: AsyncStream<RemoteInvalidation>.Continuation)] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    private let clock: any CacheClock

    /// Creates an empty store.
    ///
    /// - Parameter clock: Decides when entries have expired. Defaults to ``SystemClock``.
    public init(clock: any CacheClock = SystemClock()) {
        self.clock = clock
    }

    /// When set, every call throws this error, as an unreachable server would.
    public var failsWith: (any Error)? {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    /// How many read calls (`entry`, `entries`) the store has answered.
    public var readCount: Int { state.withLock { $0.reads } }

    /// How many write calls (`set`, `removeValue`, `removeAll`) the store has answered.
    public var writeCount: Int { state.withLock { $0.writes } }

    public func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        let now = clock.now()
        return try state.withLock { state in
            if let failure = state.failure { throw failure }
            state.reads += 1
            guard let entry = state.entries[namespace]?[key] else { return nil }
            if let expiresAt = entry.expiresAt, expiresAt <= now { return nil }
            return entry
        }
    }

    public func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry] {
        let now = clock.now()
        return try state.withLock { state in
            if let failure = state.failure { throw failure }
            state.reads += 1
            var found: [String: StoredEntry] = [:]
            for key in keys {
                if let entry = state.entries[namespace]?[key], entry.expiresAt.map({ $0 > now }) ?? true {
                    found[key] = entry
                }
            }
            return found
        }
    }

    public func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws
    {
        let now = clock.now()
        try mutate(namespace: namespace, invalidation: .key(key)) { entries in
            if let expiresAt, expiresAt <= now {
                entries[key] = nil
            } else {
                entries[key] = StoredEntry(data: data, storedAt: storedAt, expiresAt: expiresAt)
            }
        }
    }

    public func removeValue(for key: String, in namespace: String) async throws {
        try mutate(namespace: namespace, invalidation: .key(key)) { $0[key] = nil }
    }

    public func removeAll(in namespace: String) async throws {
        try mutate(namespace: namespace, invalidation: .all) { $0 = [:] }
    }

    /// Every invalidation of `namespace`. An in-memory store has no other instances,
    /// so a cache sees the changes made through this same object: pass one store
    /// to two caches to simulate two instances sharing a server.
    public func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        let (stream, continuation) = AsyncStream<RemoteInvalidation>.makeStream()
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = (namespace, continuation)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    private func mutate(
        namespace: String, invalidation: RemoteInvalidation, _ change: (inout [String: StoredEntry]) -> Void
    ) throws {
        let subscribers = try state.withLock { state in
            if let failure = state.failure { throw failure }
            state.writes += 1
            change(&state.entries[namespace, default: [:]])
            return state.subscribers.values.filter { $0.namespace == namespace }.map(\.continuation)
        }
        // Outside the lock: a stream whose consuming task is being cancelled runs its
        // onTermination (which takes the lock) under that task's status lock, and a
        // yield to it takes that status lock.
        for continuation in subscribers { continuation.yield(invalidation) }
    }
}
