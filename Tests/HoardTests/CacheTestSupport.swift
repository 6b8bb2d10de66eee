import Foundation
import Hoard
import Synchronization

/// Helpers for the tiered cache's tests.
enum CacheTest {
    /// A cache configuration with a disk store in `directory` (and the given clock).
    static func configuration<Key: CacheKey, Value: Codable & Sendable>(
        _ name: String = "test", disk: DiskStore? = nil, memoryLimit: Int = 1_000
    ) -> Cache<Key, Value>.Configuration {
        var configuration = Cache<Key, Value>.Configuration(name: name)
        configuration.memory = .init(countLimit: memoryLimit, lowWaterMark: 1.0)
        configuration.localStores = disk.map { .stores([$0]) } ?? .none
        // A store's repairs go with the next write or flush only, as each test
        // says: no timed retry adds a write the test did not make.
        configuration.repairRetryInterval = nil
        return configuration
    }

    /// Waits (without sleeping) until `condition` holds, yielding to other tasks.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<200_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }
}

/// Counts how often a fetch ran and can hold every fetch until released.
final class FetchProbe: Sendable {
    private let state = Mutex<(calls: Int, open: Bool, waiters: [CheckedContinuation<Void, Never>])>((0, true, []))

    init(open: Bool = true) {
        state.withLock { $0.open = open }
    }

    var calls: Int { state.withLock { $0.calls } }

    /// Records a call, then waits until the probe is open.
    func enter() async {
        await withCheckedContinuation { continuation in
            let proceed = state.withLock { state -> Bool in
                state.calls += 1
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if proceed { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A local store that forwards every call to `inner`; a conforming test store
/// writes only the calls it changes.
protocol ForwardingStore: CacheStore {
    var inner: any CacheStore { get }
}

extension ForwardingStore {
    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        try inner.entry(for: key, in: namespace)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) throws(HoardError) {
        try inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func write(_ batch: [CacheStoreWrite]) throws(HoardError) { try inner.write(batch) }
    func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool {
        try inner.removeValue(for: key, in: namespace)
    }
    func removeAll(in namespace: String) throws(HoardError) -> Int { try inner.removeAll(in: namespace) }
    func keys(in namespace: String) throws(HoardError) -> [String] { try inner.keys(in: namespace) }
    func contains(_ key: String, in namespace: String) throws(HoardError) -> Bool {
        try inner.contains(key, in: namespace)
    }
    func usage(in namespace: String) throws(HoardError) -> StoreUsage { try inner.usage(in: namespace) }
    func totalUsage() throws(HoardError) -> StoreUsage { try inner.totalUsage() }
    func removeExpired() throws(HoardError) -> Int { try inner.removeExpired() }
    func trim(toBytes maxBytes: Int) throws(HoardError) -> Int { try inner.trim(toBytes: maxBytes) }
    func verify(repairing: Bool) throws(HoardError) -> VerificationReport { try inner.verify(repairing: repairing) }
}

/// A remote store that forwards every call to an ``InMemoryRemoteStore``; a
/// conforming test store writes only the calls it changes. Sends no invalidations
/// unless it says otherwise.
protocol ForwardingRemoteStore: RemoteCacheStore {
    var inner: InMemoryRemoteStore { get }
}

extension ForwardingRemoteStore {
    func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        try await inner.entry(for: key, in: namespace)
    }
    func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry] {
        try await inner.entries(for: keys, in: namespace)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws {
        try await inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func removeValue(for key: String, in namespace: String) async throws {
        try await inner.removeValue(for: key, in: namespace)
    }
    func removeAll(in namespace: String) async throws { try await inner.removeAll(in: namespace) }
    func write(_ batch: [CacheStoreWrite]) async throws { try await inner.write(batch) }
    func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        AsyncStream { $0.finish() }
    }
}

/// A local store that forwards to another one but holds every batch write until
/// released, or fails every call on demand.
final class GatedStore: ForwardingStore {
    let inner: any CacheStore
    private let gate = DispatchSemaphore(value: 0)
    private let state = Mutex<(gated: Bool, failure: HoardError?)>((false, nil))

    init(_ inner: any CacheStore) { self.inner = inner }

    func close() { state.withLock { $0.gated = true } }
    func release() {
        state.withLock { $0.gated = false }
        gate.signal()
    }
    func fail(with error: HoardError?) { state.withLock { $0.failure = error } }

    private func check() throws(HoardError) {
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        try check()
        return try inner.entry(for: key, in: namespace)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) throws(HoardError) {
        try check()
        try inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
        if state.withLock({ $0.gated }) { _ = gate.wait(timeout: .now() + 20) }
        try check()
        try inner.write(batch)
    }
    func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool {
        try check()
        return try inner.removeValue(for: key, in: namespace)
    }
}

struct FetchFailed: Error, Equatable {
    var attempt: Int
}

/// A point where store calls stop until the test opens it, and that tells the test
/// when a call has arrived. Blocking (`passBlocking`) for synchronous stores, which
/// run on Hoard's threads; suspending (`pass`) for asynchronous ones.
final class StoreGate: Sendable {
    private struct State {
        var closed = false
        var arrivals = 0
        var arrivalWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var openWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let opened = DispatchSemaphore(value: 0)

    func close() { state.withLock { $0.closed = true } }

    /// Lets every call through, now and later.
    func open() {
        let waiters = state.withLock { state in
            state.closed = false
            defer { state.openWaiters = [] }
            return state.openWaiters
        }
        for waiter in waiters { waiter.resume() }
        opened.signal()
    }

    /// Waits until a call has arrived at the closed gate.
    func arrival() async {
        await arrivals(1)
    }

    /// Waits until `count` calls have arrived at the closed gate.
    func arrivals(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let arrived = state.withLock { state -> Bool in
                if state.arrivals >= count { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if arrived { continuation.resume() }
        }
    }

    private func arrive() -> Bool {
        let (closed, waiters) = state.withLock { state in
            guard state.closed else { return (false, [CheckedContinuation<Void, Never>]()) }
            state.arrivals += 1
            let arrivals = state.arrivals
            let ready = state.arrivalWaiters.filter { $0.count <= arrivals }.map(\.continuation)
            state.arrivalWaiters.removeAll { $0.count <= arrivals }
            return (true, ready)
        }
        for waiter in waiters { waiter.resume() }
        return closed
    }

    /// Blocks the calling (store) thread while the gate is closed.
    func passBlocking() {
        guard arrive() else { return }
        opened.wait()
        opened.signal()  // let any other blocked caller through too
    }

    /// Suspends while the gate is closed.
    func pass() async {
        guard arrive() else { return }
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state -> Bool in
                if !state.closed { return true }
                state.openWaiters.append(continuation)
                return false
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// A local store whose reads fetch the entry, then stop at a gate before
/// returning it: a read that has found a value and is about to promote it.
final class ReadGatedStore: ForwardingStore {
    let inner: any CacheStore
    let gate = StoreGate()

    init(_ inner: any CacheStore) { self.inner = inner }

    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        let found = try inner.entry(for: key, in: namespace)
        gate.passBlocking()
        return found
    }
}

/// A remote store over an ``InMemoryRemoteStore`` whose reads can stop at a gate
/// after fetching the entry, before returning it (`readGate`), and whose batch
/// writes can stop at another before writing (`writeGate`). Both gates are open
/// until the test closes them. A read whose task is cancelled by the time it
/// leaves the gate throws `CancellationError`, as a store waiting for a
/// connection does (RedisStore, PostgresStore). Sends no invalidations.
final class GatedRemoteStore: ForwardingRemoteStore {
    let inner = InMemoryRemoteStore()
    let readGate = StoreGate()
    let writeGate = StoreGate()

    func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        let found = try await inner.entry(for: key, in: namespace)
        await readGate.pass()
        try Task.checkCancellation()
        return found
    }
    func write(_ batch: [CacheStoreWrite]) async throws {
        await writeGate.pass()
        try await inner.write(batch)
    }
}

extension CacheTest {
    /// A cache over a disk store in `directory` and a remote store whose batch writes
    /// wait at its write gate (open until the test closes it), the remote store holding
    /// `value` under "k".
    static func overGatedRemote(
        holding value: String, in directory: URL
    ) async throws -> (DiskStore, GatedRemoteStore, Cache<String, String>) {
        let disk = try DiskStore(directory: directory)
        let remote = GatedRemoteStore()
        try await remote.inner.set(Data(value.utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
        configuration.remoteStores = [remote]
        return (disk, remote, try Cache<String, String>(configuration: configuration))
    }

    /// Waits until `events` has reported `count` clears.
    static func awaitClears<Key>(_ count: Int, on events: inout AsyncStream<CacheEvent<Key>>.Iterator) async {
        var seen = 0
        while seen < count, let event = await events.next() {
            if case .cleared = event { seen += 1 }
        }
    }
}

/// A local store that runs a hook (once) after a read found its entry, and whose
/// batch writes can stop at a gate.
final class HookedStore: ForwardingStore {
    let inner: any CacheStore
    let writeGate = StoreGate()
    private let hook = Mutex<(@Sendable () -> Void)?>(nil)

    init(_ inner: any CacheStore) { self.inner = inner }

    /// Runs `body` on the reading thread after the next read, before it returns.
    func onNextRead(_ body: @escaping @Sendable () -> Void) { hook.withLock { $0 = body } }

    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        let found = try inner.entry(for: key, in: namespace)
        let body = hook.withLock { hook in
            defer { hook = nil }
            return hook
        }
        body?()
        return found
    }
    func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
        writeGate.passBlocking()
        try inner.write(batch)
    }
}

/// A clock that, once armed, holds the first `now()` of the thread that called
/// ``holdsThisThread()`` (after the calls it was armed to let pass) until released.
final class HoldingClock: CacheClock {
    private static let marker = "HoldingClock.holds"
    private let state = Mutex((armed: false, held: false, passing: 0))
    private let held = DispatchSemaphore(value: 0)
    private let resumed = DispatchSemaphore(value: 0)

    func now() -> Date {
        if Thread.current.threadDictionary[Self.marker] != nil,
            state.withLock({ state in
                guard state.armed else { return false }
                if state.passing > 0 {
                    state.passing -= 1
                    return false
                }
                state.armed = false
                state.held = true
                return true
            })
        {
            held.signal()
            resumed.wait()
        }
        return Date(timeIntervalSinceReferenceDate: 0)
    }

    /// Holds the marked thread's next `now()` but the first `calls`.
    func arm(passing calls: Int = 0) {
        state.withLock { state in
            state.armed = true
            state.passing = calls
        }
    }

    /// Marks the calling thread as the one to hold.
    func holdsThisThread() { Thread.current.threadDictionary[Self.marker] = true }

    /// Whether a `now()` was held.
    var hasHeld: Bool { state.withLock { $0.held } }

    /// Called by the marked thread when done, so that a wait for a hold that never
    /// came returns.
    func finished() { held.signal() }

    /// Returns once the marked thread is held (or finished without being held).
    func waitUntilHeld() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.held.wait()
                continuation.resume()
            }
        }
    }

    func release() { resumed.signal() }
}
