import Foundation
import Synchronization
import Testing

@testable import Hoard

/// A cache that writes nothing more after a store failed a change still repairs
/// that store once it recovers: the writer flushes on a timer while a repair is
/// owed (``Cache/Configuration/repairRetryInterval``). The timer is the test's:
/// every wait is recorded and ends only when the test fires it.
@Suite("Cache timed repair retry")
struct CacheRepairRetryTests {
    /// A repair retry's clock: records each delay asked for, and returns from the
    /// wait only when the test fires it.
    final class ManualSleeper: Sendable {
        private let state = Mutex<(delays: [Duration], waiting: [CheckedContinuation<Void, Never>])>(([], []))

        /// Every delay asked for so far, in order.
        var delays: [Duration] { state.withLock { $0.delays } }

        func sleep(_ delay: Duration) async {
            await withCheckedContinuation { continuation in
                state.withLock {
                    $0.delays.append(delay)
                    $0.waiting.append(continuation)
                }
            }
        }

        /// Ends the oldest wait; `false` when none waits.
        @discardableResult
        func fire() -> Bool {
            let waiting = state.withLock { $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }
            waiting?.resume()
            return waiting != nil
        }
    }

    /// Whether `disk` holds an entry of `key` in the tests' namespace (a disk that
    /// cannot be read counts as holding one, so a wait for its absence fails).
    static func holds(_ disk: DiskStore, _ key: String) -> Bool {
        do { return try disk.entry(for: key, in: "test") != nil } catch { return true }
    }

    /// Runs `body` with ``CacheSuspectKeyTests/withFailingDisk(reportsFailures:memoryLimit:configure:_:)``
    /// whose cache retries repairs after 5 seconds of `sleeper`'s.
    static func withRetryingDisk(
        _ sleeper: ManualSleeper, _ body: (CacheSuspectKeyTests.FailingDisk) async throws -> Void
    ) async throws {
        try await CacheSuspectKeyTests.withFailingDisk(
            configure: { configuration in
                configuration.repairRetryInterval = 5
                configuration._repairRetrySleep = { await sleeper.sleep($0) }
            }, body)
    }

    @Test("A disk that recovered is repaired by the timed retry, with no write or flush after the failure")
    func retryRepairsRecoveredDisk() async throws {
        let sleeper = ManualSleeper()
        try await Self.withRetryingDisk(sleeper) { fixture in
            await fixture.replaceWhileFailing()
            #expect(await CacheTest.eventually { sleeper.delays == [.seconds(5)] }, "a retry waits: \(sleeper.delays)")
            fixture.store.failing.withLock { $0 = false }
            #expect(Self.holds(fixture.disk, "k"), "nothing repaired the disk before the retry")

            #expect(sleeper.fire())
            #expect(
                await CacheTest.eventually { !Self.holds(fixture.disk, "k") }, "the retry removed the replaced value")
            let second = try Cache<String, String>(configuration: fixture.configuration)
            #expect(try await second.value(for: "k") == nil, "another cache over the same disk does not serve it")
            try await CacheSuspectKeyTests.evictMemory(fixture.cache)
            fixture.cache["k"] = "4"
            await fixture.cache.flush()
            try await CacheSuspectKeyTests.evictMemory(fixture.cache)
            #expect(fixture.cache.cachedValue(for: "k") == "4", "the disk is read for the key again")
        }
    }

    @Test("Each retry the store fails doubles the next wait, and a repair starts the waits over")
    func retriesBackOff() async throws {
        let sleeper = ManualSleeper()
        try await Self.withRetryingDisk(sleeper) { fixture in
            await fixture.replaceWhileFailing()
            #expect(await CacheTest.eventually { sleeper.delays.count == 1 })
            let attempts = fixture.store.attempts.withLock { $0 }
            #expect(sleeper.fire())
            #expect(await CacheTest.eventually { sleeper.delays.count == 2 }, "the failed retry waits again")
            #expect(fixture.store.attempts.withLock { $0 } == attempts + 1, "the retry sent the repair once")
            #expect(sleeper.fire())
            #expect(await CacheTest.eventually { sleeper.delays.count == 3 })
            #expect(sleeper.delays == [.seconds(5), .seconds(10), .seconds(20)])

            fixture.store.failing.withLock { $0 = false }
            #expect(sleeper.fire())
            #expect(await CacheTest.eventually { !Self.holds(fixture.disk, "k") })

            // A new failure waits the first interval again.
            fixture.store.failing.withLock { $0 = true }
            fixture.cache["j"] = "1"
            await fixture.cache.flush()
            #expect(await CacheTest.eventually { sleeper.delays.count == 4 })
            #expect(sleeper.delays.last == .seconds(5), "\(sleeper.delays)")
            fixture.store.failing.withLock { $0 = false }
            #expect(sleeper.fire())
            #expect(await CacheTest.eventually { fixture.cache.writer.suspectStores.load(ordering: .acquiring) == 0 })
        }
    }

    @Test("The waits double up to five minutes, or the interval when it is longer")
    func waitsAreBounded() async {
        let sleeper = ManualSleeper()
        let retry = _RepairRetry(interval: .seconds(5), sleep: { await sleeper.sleep($0) })
        let retries = Atomic<Int>(0)
        // A retry that leaves the store with suspect keys, as a store still down does.
        let failingRetry: @Sendable () async -> Void = {
            retries.add(1, ordering: .relaxed)
        }
        retry.batchSettled(hasSuspectKeys: true, retry: failingRetry)
        for settled in 1...8 {
            #expect(await CacheTest.eventually { sleeper.delays.count == settled })
            // One retry waits at a time: settling again schedules nothing more.
            retry.batchSettled(hasSuspectKeys: true, retry: failingRetry)
            #expect(sleeper.fire())
            #expect(await CacheTest.eventually { retries.load(ordering: .relaxed) == settled })
            retry.batchSettled(hasSuspectKeys: true, retry: failingRetry)
        }
        #expect(await CacheTest.eventually { sleeper.delays.count == 9 })
        #expect(
            sleeper.delays == [5, 10, 20, 40, 80, 160, 300, 300, 300].map { .seconds($0) }, "\(sleeper.delays)")
        #expect(_RepairRetry.maximumDelay(for: .seconds(600)) == .seconds(600))
        sleeper.fire()
    }

    @Test(
        "A repair retry interval that is not more than zero, or is longer than a day, is refused",
        arguments: [0, -1, .nan, .infinity, 86_401] as [TimeInterval])
    func invalidInterval(_ seconds: TimeInterval) {
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.repairRetryInterval = seconds
        #expect(throws: HoardError.self) { try Cache<String, String>(configuration: configuration) }
    }

    @Test("The default retries after five seconds; a day and a millisecond are accepted, and nil turns it off")
    func defaultsAndBounds() throws {
        #expect(Cache<String, String>.Configuration(name: "test").repairRetryInterval == 5)
        for seconds in [86_400, 0.001, nil] as [TimeInterval?] {
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.repairRetryInterval = seconds
            let cache = try Cache<String, String>(configuration: configuration)
            #expect(cache.writer.repairRetry == nil, "a cache with no stores has no retry")
            configuration.remoteStores = [InMemoryRemoteStore()]
            let stored = try Cache<String, String>(configuration: configuration)
            #expect(stored.writer.repairRetry?.interval == seconds.map { .seconds($0) })
        }
    }
}
