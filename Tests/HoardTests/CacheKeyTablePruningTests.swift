import Foundation
import Synchronization
import Testing

@testable import Hoard

/// A key type that does not rebuild its keys from their strings, whose hashing of
/// the key with id 0 (the tripwire), when armed, stops once until released: the
/// cache hashes every noted key when it prunes its table of noted keys (it asks
/// memory whether it holds each), so an armed tripwire stops a prune half-way.
private struct PruneGatedKey: CacheKey {
    var id: Int
    var cacheKeyString: String { "pruned/\(id)" }

    static let tripwire = 0
    static let armed = Mutex(false)
    static let arrived = Mutex<(CheckedContinuation<Void, Never>?, Bool)>((nil, false))
    static let released = DispatchSemaphore(value: 0)

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }

    func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        guard id == Self.tripwire else { return }
        let stops = Self.armed.withLock { armed in
            defer { armed = false }
            return armed
        }
        guard stops else { return }
        let waiter = Self.arrived.withLock { state -> CheckedContinuation<Void, Never>? in
            state.1 = true
            defer { state.0 = nil }
            return state.0
        }
        waiter?.resume()
        _ = Self.released.wait(timeout: .now() + 20)
    }

    static func arm() { armed.withLock { $0 = true } }

    /// Returns once a hash stopped at the armed tripwire.
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

/// The table of keys a cache noted (so that another instance's invalidation, which
/// names a key by its string, finds it) while it is pruned: a key being taken into
/// memory stays in it. One test holds a read at a gate in user code, on a thread of
/// its own (a one-thread executor), and the suite is serialized.
@Suite("Cache: pruning the noted keys", .serialized, .timeLimit(.minutes(2)))
struct CacheKeyTablePruningTests {
    @Test("A prune that runs while a read takes a key into memory keeps the key, so an invalidation of it drops it")
    func pruneDuringPromotionKeepsTheKey() async throws {
        let server = InMemoryRemoteStore()
        let key = PruneGatedKey(id: 1)
        let other = PruneGatedKey(id: 2)
        let fillers = [PruneGatedKey.tripwire, 3, 4, 5].map { PruneGatedKey(id: $0) }
        for id in [1, 2, 3, 4, 5, PruneGatedKey.tripwire] {
            try await server.set(
                Data("1".utf8), for: PruneGatedKey(id: id).cacheKeyString, in: "pruned", storedAt: Date(),
                expiresAt: nil)
        }
        // Memory holds two keys: the table of noted keys is pruned when it has
        // more than four.
        var configuration: Cache<PruneGatedKey, Int>.Configuration = CacheTest.configuration(
            "pruned", memoryLimit: 2)
        configuration.remoteStores = [server]
        let first = try Cache<PruneGatedKey, Int>(configuration: configuration)
        configuration.remoteStores = [server.anotherInstance()]
        let second = try Cache<PruneGatedKey, Int>(configuration: configuration)

        // The second instance notes four keys (the tripwire among them), and
        // memory keeps two of them.
        for filler in fillers { #expect(try await second.value(for: filler) == 1) }
        await second.flush()

        // A read of `key` notes it (the fifth: a prune starts) and stops in its
        // prune, before memory takes `key` in.
        PruneGatedKey.arm()
        // On a thread of its own: the gate blocks it, and must not block one of
        // the few threads of the concurrency pool that every other test shares.
        let read = Task(executorPreference: _BlockingExecutor(label: "test.prune-read", width: 1)) {
            try await second.value(for: key)
        }
        await PruneGatedKey.arrival()
        // Meanwhile a read of `other` notes it (the sixth) and prunes the table
        // whole: memory does not hold `key` yet.
        #expect(try await second.value(for: other) == 1)
        PruneGatedKey.released.signal()
        #expect(try await read.value == 1)
        #expect(second[key] == 1, "memory took the key in")

        // The first instance stores 2; the second instance handles the
        // invalidation (its update stream says the key was removed).
        var updates = second.updates(for: key).makeAsyncIterator()
        #expect(await updates.next() == .some(1))
        try await first.set(2, for: key)
        #expect(await updates.next() == .some(nil))

        #expect(second[key] != 1, "the invalidation found the key: memory must not keep 1")
        #expect(try await second.value(for: key) == 2, "the first instance's write is the newest value")
    }
}
