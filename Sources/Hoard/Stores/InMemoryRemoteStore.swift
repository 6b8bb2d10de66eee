import Foundation
import Synchronization

/// A ``RemoteCacheStore`` that keeps its entries in memory, for tests and
/// prototypes.
///
/// Each object is one instance of an in-memory server, as one process's
/// `RedisStore` is one instance of a Redis server: ``invalidations(in:)`` reports
/// the changes other instances make, never this one's own, so a cache over it keeps
/// the values it writes. ``anotherInstance()`` connects a second instance to the
/// same server, to simulate two processes that share it:
///
/// ```swift
/// let server = InMemoryRemoteStore()
/// var configuration = Cache<String, Int>.Configuration(name: "scores")
/// configuration.localStores = .none  // memory over the server, no disk
/// configuration.remoteStores = [server]
/// let first = try Cache<String, Int>(configuration: configuration)
/// configuration.remoteStores = [server.anotherInstance()]
/// let second = try Cache<String, Int>(configuration: configuration)
/// // A change through `first` drops the key from `second`'s memory.
/// ```
///
/// An instance can be told to fail (``failsWith``), as a connection to an
/// unreachable server would, to test how a cache copes with an unavailable remote
/// tier; and it counts the calls it receives.
public final class InMemoryRemoteStore: RemoteCacheStore {
    /// What the instances of one server share: the entries and who listens.
    private final class Server: Sendable {
        struct State {
            var entries: [String: [String: StoredEntry]] = [:]
            var subscribers:
                [Int: (namespace: String, instance: Int, continuation: AsyncStream<RemoteInvalidation>.Continuation)] =
                    [:]
            var nextID = 0
            var instances = 0
        }
        let state = Mutex(State())
        let clock: any CacheClock

        init(clock: any CacheClock) {
            self.clock = clock
        }
    }

    /// This instance's own: its injected failure and its call counts.
    private struct Calls {
        var failure: (any Error)?
        var reads = 0
        var writes = 0
    }

    private let server: Server
    /// This instance's number on its server (never reused), which its writes carry.
    private let instance: Int
    private let calls = Mutex(Calls())

    /// Creates an empty server and returns its first instance.
    ///
    /// - Parameter clock: Decides when entries have expired, for every instance of
    ///   the server. Defaults to ``SystemClock``.
    public convenience init(clock: any CacheClock = SystemClock()) {
        self.init(server: Server(clock: clock))
    }

    private init(server: Server) {
        self.server = server
        instance = server.state.withLock { state in
            defer { state.instances += 1 }
            return state.instances
        }
    }

    /// A new instance of the same server: it reads and writes the same entries, and
    /// each instance's ``invalidations(in:)`` reports the other's changes. Its
    /// ``failsWith`` and call counts start afresh.
    public func anotherInstance() -> InMemoryRemoteStore {
        InMemoryRemoteStore(server: server)
    }

    /// When set, every call to this instance throws this error, as a connection to an
    /// unreachable server would. Other instances of the server are not affected.
    public var failsWith: (any Error)? {
        get { calls.withLock { $0.failure } }
        set { calls.withLock { $0.failure = newValue } }
    }

    /// How many read calls (`entry`, `entries`) this instance has answered.
    public var readCount: Int { calls.withLock { $0.reads } }

    /// How many write calls (`set`, `removeValue`, `removeAll`) this instance has
    /// answered.
    public var writeCount: Int { calls.withLock { $0.writes } }

    /// The entry the server holds for `key`, or `nil` when it holds none or the
    /// entry has expired by the server's clock. Throws ``failsWith`` when it is set.
    public func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        try answerRead()
        let now = server.clock.now()
        return server.state.withLock { state in
            guard let entry = state.entries[namespace]?[key] else { return nil }
            if let expiresAt = entry.expiresAt, expiresAt <= now { return nil }
            return entry
        }
    }

    /// The unexpired entries the server holds among `keys`, in one call (counted as
    /// one read). Throws ``failsWith`` when it is set.
    public func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry] {
        try answerRead()
        let now = server.clock.now()
        return server.state.withLock { state in
            var found: [String: StoredEntry] = [:]
            for key in keys {
                if let entry = state.entries[namespace]?[key], entry.expiresAt.map({ $0 > now }) ?? true {
                    found[key] = entry
                }
            }
            return found
        }
    }

    /// Stores `data` for `key` on the server (an entry already expired by the
    /// server's clock removes the key instead) and tells the server's other
    /// instances that `key` changed. Throws ``failsWith`` when it is set, and
    /// ``HoardError/Code/invalidArgument`` when `storedAt` is not a finite date or
    /// `expiresAt` is NaN, changing nothing.
    public func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws
    {
        try HoardError.checkWriteDates(storedAt: storedAt, expiresAt: expiresAt, key: key)
        let now = server.clock.now()
        try mutate(namespace: namespace, invalidation: .key(key)) { entries in
            if let expiresAt, expiresAt <= now {
                entries[key] = nil
            } else {
                entries[key] = StoredEntry(data: data, storedAt: storedAt, expiresAt: expiresAt)
            }
        }
    }

    /// Removes `key` from the server and tells its other instances. Throws
    /// ``failsWith`` when it is set, changing nothing.
    public func removeValue(for key: String, in namespace: String) async throws {
        try mutate(namespace: namespace, invalidation: .key(key)) { $0[key] = nil }
    }

    /// Removes every entry of `namespace` from the server and tells its other
    /// instances that everything changed. Throws ``failsWith`` when it is set,
    /// changing nothing.
    public func removeAll(in namespace: String) async throws {
        try mutate(namespace: namespace, invalidation: .all) { $0 = [:] }
    }

    /// Every change other instances of the server make in `namespace`, never this
    /// instance's own.
    public func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        let (stream, continuation) = AsyncStream<RemoteInvalidation>.makeStream()
        let instance = instance
        let id = server.state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = (namespace, instance, continuation)
            return id
        }
        continuation.onTermination = { [server] _ in
            _ = server.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Throws the injected failure, or counts a read.
    private func answerRead() throws {
        try calls.withLock { calls in
            if let failure = calls.failure { throw failure }
            calls.reads += 1
        }
    }

    private func mutate(
        namespace: String, invalidation: RemoteInvalidation, _ change: (inout [String: StoredEntry]) -> Void
    ) throws {
        try calls.withLock { calls in
            if let failure = calls.failure { throw failure }
            calls.writes += 1
        }
        let instance = instance
        let subscribers = server.state.withLock { state in
            change(&state.entries[namespace, default: [:]])
            return state.subscribers.values.filter { $0.namespace == namespace && $0.instance != instance }
                .map(\.continuation)
        }
        // Outside the lock: a stream whose consuming task is being cancelled runs its
        // onTermination (which takes the lock) under that task's status lock, and a
        // yield to it takes that status lock.
        for continuation in subscribers { continuation.yield(invalidation) }
    }
}
