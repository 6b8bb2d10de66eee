import Foundation
import Synchronization
import Testing

@testable import Hoard

/// A key type that does not rebuild its keys from their strings (as `URL` does not).
private struct UnrebuildableKey: CacheKey {
    var id: Int
    var cacheKeyString: String { "unrebuildable/\(id)" }
}

/// A key type that does not rebuild its keys from their strings, whose
/// `init?(cacheKeyString:)` (called by the cache when it notes a key it takes into
/// memory) stops once, when armed, until released.
private struct GatedRebuildKey: CacheKey {
    var id: Int
    var cacheKeyString: String { "gated/\(id)" }

    struct Gate: ~Copyable {
        var armed = false
        var arrived: CheckedContinuation<Void, Never>?
        var hasArrived = false
    }
    static let gate = Mutex(Gate())
    static let released = DispatchSemaphore(value: 0)

    init(id: Int) { self.id = id }

    init?(cacheKeyString: String) {
        let (stops, arrived) = Self.gate.withLock { gate -> (Bool, CheckedContinuation<Void, Never>?) in
            guard gate.armed else { return (false, nil) }
            gate.armed = false
            gate.hasArrived = true
            defer { gate.arrived = nil }
            return (true, gate.arrived)
        }
        if stops {
            arrived?.resume()
            _ = Self.released.wait(timeout: .now() + 20)
        }
        return nil
    }

    static func arm() { gate.withLock { $0.armed = true } }

    /// Returns once a call stopped at the armed gate.
    static func arrival() async {
        await withCheckedContinuation { continuation in
            let now = gate.withLock { gate -> Bool in
                if gate.hasArrived { return true }
                gate.arrived = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// A key whose hashing, in a task that reads with `reading` set, stops at its
/// second call (the first is the read's memory lookup) until released.
private struct HashGatedKey: CacheKey {
    var id: Int
    var cacheKeyString: String { "hash/\(id)" }

    @TaskLocal static var reading = false
    static let calls = Mutex(0)
    static let arrived = Mutex<(CheckedContinuation<Void, Never>?, Bool)>((nil, false))
    static let released = DispatchSemaphore(value: 0)

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }

    func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        guard Self.reading else { return }
        let call = Self.calls.withLock { calls in
            calls += 1
            return calls
        }
        guard call == 2 else { return }
        let waiter = Self.arrived.withLock { state -> CheckedContinuation<Void, Never>? in
            state.1 = true
            defer { state.0 = nil }
            return state.0
        }
        waiter?.resume()
        _ = Self.released.wait(timeout: .now() + 20)
    }

    static func arrival() async {
        await withCheckedContinuation { continuation in
            let now = arrived.withLock { state -> Bool in
                if state.1 { return true }
                state.0 = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// A point where one thread stops, once, until released; a task awaits its arrival.
private final class StopOnce: Sendable {
    private struct State {
        var arrived = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())
    private let released = DispatchSemaphore(value: 0)

    /// Stops the calling thread until ``release()`` (at most 20 s).
    func stop() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.arrived = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        _ = released.wait(timeout: .now() + 20)
    }

    /// Returns once a thread stopped here.
    func arrival() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.arrived { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() { released.signal() }
}

/// A key type that does not rebuild its keys from their strings, whose
/// `init?(cacheKeyString:)` (called by the cache when it notes a key it takes into
/// memory, and when it looks up an invalidation's string) stops at ``noting``
/// once, when armed.
private struct NotingGatedKey: CacheKey {
    var id: Int
    var cacheKeyString: String { "noting/\(id)" }

    static let armed = Mutex(false)
    static let noting = StopOnce()

    init(id: Int) { self.id = id }

    init?(cacheKeyString: String) {
        let stops = Self.armed.withLock { armed in
            defer { armed = false }
            return armed
        }
        if stops { Self.noting.stop() }
        return nil
    }
}

/// Another instance's invalidations of keys a cache cannot rebuild from their
/// strings, arriving at every point of a read; and a read's count. Three of the tests
/// hold a read at a gate in user code, on a thread of its own (a one-thread
/// executor), and the suite is serialized.
@Suite("Cache: invalidations of keys known only by their string", .serialized, .timeLimit(.minutes(2)))
struct CacheInvalidationRaceTests {
    @Test("A remembered 'not found' of a key the cache cannot rebuild is dropped by another instance's write of it")
    func negativeEntryDroppedByRemoteInvalidation() async throws {
        let server = InMemoryRemoteStore()
        var configuration: Cache<UnrebuildableKey, Int>.Configuration = CacheTest.configuration("neg")
        configuration.remoteStores = [server]
        let first = try Cache<UnrebuildableKey, Int>(configuration: configuration)
        configuration.remoteStores = [server.anotherInstance()]
        configuration.negativeCaching = 3_600
        let fetches = Mutex(0)
        let second = try Cache<UnrebuildableKey, Int>(configuration: configuration) { _ in
            fetches.withLock { $0 += 1 }
            return nil
        }
        let key = UnrebuildableKey(id: 1)
        let sentinel = UnrebuildableKey(id: 2)

        // The second instance learns that nothing holds `key` (remembered for an
        // hour), and takes `sentinel` into memory from the server.
        #expect(try await second.value(for: key) == nil)
        #expect(try await second.value(for: key) == nil)
        #expect(fetches.withLock { $0 } == 1, "the 'not found' is remembered")
        try await first.set(0, for: sentinel)
        #expect(try await second.value(for: sentinel) == 0)

        // The first instance stores `key`, then changes `sentinel`: once the second
        // instance has dropped `sentinel`, it has handled the invalidation of `key`
        // (one stream, in order).
        try await first.set(5, for: key)
        try await first.set(1, for: sentinel)
        #expect(await CacheTest.eventually { second[sentinel] == nil })

        #expect(try await second.value(for: key) == 5, "the remembered 'not found' was dropped")
    }

    @Test("Another instance's write that arrives while a read takes the key into memory drops the promoted copy")
    func invalidationDuringPromotion() async throws {
        let server = InMemoryRemoteStore()
        let key = GatedRebuildKey(id: 1)
        // The server holds 1 before either cache listens.
        try await server.set(Data("1".utf8), for: key.cacheKeyString, in: "gated", storedAt: Date(), expiresAt: nil)
        var configuration: Cache<GatedRebuildKey, Int>.Configuration = CacheTest.configuration("gated")
        configuration.remoteStores = [server]
        let first = try Cache<GatedRebuildKey, Int>(configuration: configuration)
        configuration.remoteStores = [server.anotherInstance()]
        let second = try Cache<GatedRebuildKey, Int>(configuration: configuration)
        var updates = second.updates(for: key).makeAsyncIterator()
        #expect(await updates.next() == .some(nil))

        // The second instance reads 1 from the server; it stops while noting the key.
        GatedRebuildKey.arm()
        // On a thread of its own: the gate blocks it, and must not block one of
        // the few threads of the concurrency pool that every other test shares.
        let read = Task(executorPreference: _BlockingExecutor(label: "test.gated-read", width: 1)) {
            try await second.value(for: key)
        }
        await GatedRebuildKey.arrival()

        // Meanwhile the first instance stores 2; the second instance handles the
        // invalidation (its update stream says the key was removed).
        try await first.set(2, for: key)
        #expect(await updates.next() == .some(nil))
        GatedRebuildKey.released.signal()
        #expect(try await read.value == 1, "the read began before the change")

        #expect(second[key] != 1, "the invalidation came after the read began: 1 must not stay")
        #expect(try await second.value(for: key) == 2, "the first instance's write is the newest value")
    }

    @Test("An invalidation that looked for the key before a read noted it still drops the read's promoted copy")
    func invalidationLookingBeforeTheReadNotesTheKey() async throws {
        let server = InMemoryRemoteStore()
        let key = NotingGatedKey(id: 1)
        try await server.set(Data("1".utf8), for: key.cacheKeyString, in: "noting", storedAt: Date(), expiresAt: nil)
        // The invalidation below stops once it has looked for the key, before the
        // writer orders its removal.
        let ordering = StopOnce()
        var configuration: Cache<NotingGatedKey, Int>.Configuration = CacheTest.configuration("noting")
        configuration.remoteStores = [server]
        configuration._invalidationWillBeOrdered = { _ in ordering.stop() }
        let cache = try Cache<NotingGatedKey, Int>(configuration: configuration)

        // A read finds 1 on the server and stops before it notes the key.
        NotingGatedKey.armed.withLock { $0 = true }
        // On threads of their own: the gates block them, and must not block the
        // few threads of the concurrency pool that every other test shares.
        let read = Task(executorPreference: _BlockingExecutor(label: "test.noting-read", width: 1)) {
            try await cache.value(for: key)
        }
        await NotingGatedKey.noting.arrival()

        // Another instance stores 2 (written here through this instance's own
        // connection, which reports nothing to it), and its invalidation arrives:
        // it finds no key for the string, and stops before the writer orders it.
        try await server.set(Data("2".utf8), for: key.cacheKeyString, in: "noting", storedAt: Date(), expiresAt: nil)
        let invalidation = Task(executorPreference: _BlockingExecutor(label: "test.noting-invalidation", width: 1)) {
            cache.invalidate(.key(key.cacheKeyString))
        }
        await ordering.arrival()

        // The read notes the key and takes 1 into memory; then the removal is ordered.
        NotingGatedKey.noting.release()
        #expect(try await read.value == 1, "the read began before the change")
        ordering.release()
        await invalidation.value

        #expect(cache[key] != 1, "the invalidation came after the read began: 1 must not stay")
        #expect(try await cache.value(for: key) == 2, "the other instance's write is the newest value")
    }

    @Test("A read answered by memory at its second look counts once, as a memory hit")
    func memoryAnswerCountedOnce() async throws {
        let fetches = Mutex(0)
        let cache = try Cache<HashGatedKey, Int>(configuration: .memoryOnly(name: "stats")) { _ in
            fetches.withLock { $0 += 1 }
            return 99
        }
        let key = HashGatedKey(id: 1)
        // The read misses memory, then stops before it looks again.
        // On a thread of its own, as in `invalidationDuringPromotion`.
        let read = Task(executorPreference: _BlockingExecutor(label: "test.gated-hash", width: 1)) {
            try await HashGatedKey.$reading.withValue(true) { try await cache.value(for: key) }
        }
        await HashGatedKey.arrival()
        cache[key] = 5
        HashGatedKey.released.signal()
        #expect(try await read.value == 5)
        #expect(fetches.withLock { $0 } == 0)

        let statistics = cache.statistics
        #expect(statistics.memory.hits == 1 && statistics.memory.misses == 0, "one read: \(statistics)")
    }
}
