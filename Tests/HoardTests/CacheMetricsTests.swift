#if Metrics
import Foundation
import Hoard
@testable import HoardMetrics
import MetricsTestKit
import Synchronization
import Testing

@Suite("Cache metrics through swift-metrics", .timeLimit(.minutes(3)))
struct CacheMetricsTests {
    @Test("After a scripted sequence, every counter holds exactly what happened, and again after a second update")
    func counters() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let metrics = TestMetrics()
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("d".utf8), for: "onDisk", in: "metered", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration("metered", disk: disk)
            let pressure = ManualMemoryPressure()
            configuration.memory = .init(countLimit: 2, lowWaterMark: 1.0, memoryPressure: .init(source: pressure))
            configuration.negativeCaching = 60
            configuration.timings = CacheMetrics.timings(cache: "metered", factory: metrics)
            let cache = try Cache<String, String>(configuration: configuration) { key in
                if key == "boom" { throw FetchFailed(attempt: 1) }
                return key == "none" ? nil : "fetched \(key)"
            }
            let reporter = CacheMetrics(cache, factory: metrics)

            #expect(try await cache.value(for: "onDisk") == "d")  // memory miss, local hit, promotion
            #expect(try await cache.value(for: "onDisk") == "d")  // memory hit
            #expect(try await cache.value(for: "a") == "fetched a")  // misses everywhere, fetch
            #expect(try await cache.value(for: "none") == nil)  // fetch found nothing; memory evicts onDisk
            #expect(try await cache.value(for: "none") == nil)  // negative hit
            await #expect(throws: FetchFailed.self) { try await cache.value(for: "boom") }
            await cache.flush()
            reporter.update()

            func total(_ label: String, _ dimensions: [(String, String)] = []) -> Int64 {
                metrics.counterTotal(label: label, dimensions: [("cache", "metered")] + dimensions)
            }
            #expect(total("hoard_cache_hits", [("tier", "memory")]) == 1)
            #expect(total("hoard_cache_misses", [("tier", "memory")]) == 4)
            #expect(total("hoard_cache_hits", [("tier", "local")]) == 1)
            #expect(total("hoard_cache_misses", [("tier", "local")]) == 3)
            #expect(total("hoard_cache_promotions", [("tier", "memory")]) == 1)
            #expect(total("hoard_cache_misses", [("tier", "all")]) == 3)
            #expect(total("hoard_cache_fetches") == 3)
            #expect(total("hoard_cache_fetch_failures") == 1)
            #expect(total("hoard_cache_negative_hits") == 1)
            #expect(total("hoard_cache_evictions", [("tier", "memory")]) == 1)
            #expect(total("hoard_cache_failures", [("operation", "write")]) == 0)
            #expect(
                try metrics.expectGauge("hoard_cache_entries", [("cache", "metered"), ("tier", "memory")]).lastValue
                    == 2)

            // Timers: three fetches (one failed), four local reads, one store write batch or more.
            let fetchTimers = metrics.timers(label: "hoard_cache_duration").filter {
                $0.dimensions.contains { $0 == ("operation", "fetch") }
            }
            #expect(fetchTimers.reduce(0) { $0 + $1.values.count } == 3)
            #expect(fetchTimers.contains { $0.dimensions.contains { $0 == ("result", "failure") } })
            let reads = metrics.timers(label: "hoard_cache_duration").filter {
                $0.dimensions.contains { $0 == ("operation", "read") }
            }
            #expect(reads.reduce(0) { $0 + $1.values.count } == 4)
            // One label scheme: `tier` is the kind of tier, as on the counters;
            // `store` says which store of it.
            #expect(
                reads.allSatisfy { timer in
                    timer.dimensions.contains { $0 == ("tier", "local") }
                        && timer.dimensions.contains { $0 == ("store", "0") }
                })

            // A second update moves the counters only by what happened since.
            #expect(try await cache.value(for: "a") == "fetched a")  // memory hit
            reporter.update()
            #expect(total("hoard_cache_hits", [("tier", "memory")]) == 2)
            #expect(total("hoard_cache_fetches") == 3)
            #expect(total("hoard_cache_memory_pressure_evictions", [("tier", "memory")]) == 0)

            // Critical memory pressure empties the memory tier: two more evictions, both for pressure.
            pressure.signal(.critical)
            reporter.update()
            #expect(total("hoard_cache_evictions", [("tier", "memory")]) == 3)
            #expect(total("hoard_cache_memory_pressure_evictions", [("tier", "memory")]) == 2)
            #expect(
                try metrics.expectGauge("hoard_cache_entries", [("cache", "metered"), ("tier", "memory")]).lastValue
                    == 0)
        }
    }

    @Test("A read answered by a queued write, in flight during an update, never makes a counter jump")
    func readInFlightDuringUpdate() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let metrics = TestMetrics()
            let gated = GatedStore(try DiskStore(directory: directory))
            let clock = HoldingClock()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration("metered", memoryLimit: 1)
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, String>(configuration: configuration, clock: clock)
            let reporter = CacheMetrics(cache, factory: metrics)
            func total(_ label: String, _ tier: String) -> Int64 {
                metrics.counterTotal(label: label, dimensions: [("cache", "metered"), ("tier", tier)])
            }

            for key in 0..<10 { #expect(cache["absent \(key)"] == nil) }  // ten memory misses
            // "a" stays queued for the store while "b" evicts it from memory.
            gated.close()
            cache["a"] = "queued"
            cache["b"] = "evicts a from memory"
            reporter.update()

            // A read of "a" misses memory, then holds in the clock before the queued
            // write answers it: an update meanwhile counts it as a memory miss, the
            // next one (the read done) as a memory hit.
            clock.arm()
            let done = DispatchSemaphore(value: 0)
            let read = Mutex<String?>(nil)
            let reader = Thread {
                clock.holdsThisThread()
                let value = cache["a"]
                read.withLock { $0 = value }
                clock.finished()
                done.signal()
            }
            reader.start()
            await clock.waitUntilHeld()
            try #require(clock.hasHeld)
            reporter.update()
            clock.release()
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    done.wait()
                    continuation.resume()
                }
            }
            #expect(read.withLock { $0 } == "queued")
            reporter.update()
            gated.release()
            await cache.flush()

            // The memory misses went from 11 to 10 as the read became a hit: a
            // counter cannot go back, and must not move again by all 10. One more
            // miss brings the counter and the statistic together.
            #expect(cache["absent"] == nil)
            reporter.update()
            let statistics = cache.statistics
            #expect(statistics.memory.misses == 11)
            #expect(total("hoard_cache_misses", "memory") == Int64(statistics.memory.misses))
            #expect(total("hoard_cache_hits", "memory") == Int64(statistics.memory.hits))

            // A reset of the statistics still moves the counters by what follows it.
            cache.resetStatistics()
            #expect(cache["absent"] == nil)
            reporter.update()
            #expect(total("hoard_cache_misses", "memory") == 12)
            #expect(total("hoard_cache_misses", "all") == 12)
        }
    }
}

/// Concurrent ``CacheMetrics/update()`` calls, over statistics that only grow.
@Suite("Cache metrics updated from many threads", .timeLimit(.minutes(3)))
struct CacheMetricsConcurrencyTests {
    /// Statistics whose fetches count the snapshots taken: each snapshot is newer,
    /// and higher, than every one before it. It also records, for each snapshot,
    /// whether an update held the reporter's lock while it was taken.
    final class GrowingStatistics: Sendable {
        private let state = Mutex((taken: 0, underLock: [Bool](), reporter: CacheMetrics?.none))

        func attach(_ reporter: CacheMetrics) { state.withLock { $0.reporter = reporter } }

        func snapshot() -> CacheStatistics {
            let (taken, reporter) = state.withLock { state in
                state.taken += 1
                return (state.taken, state.reporter)
            }
            let underLock = reporter?.isUpdating ?? false
            state.withLock { $0.underLock.append(underLock) }
            var statistics = CacheStatistics()
            statistics.fetches = taken
            return statistics
        }

        var taken: Int { state.withLock { $0.taken } }
        var underLock: [Bool] { state.withLock { $0.underLock } }
    }

    @Test("Every snapshot is taken under the lock that applies it, so no older snapshot is applied after a newer one")
    func snapshotsUnderTheLock() {
        let metrics = TestMetrics()
        let statistics = GrowingStatistics()
        let reporter = CacheMetrics(
            name: "locked", statistics: statistics.snapshot, memory: { (0, 0) }, factory: metrics)
        statistics.attach(reporter)
        #expect(!reporter.isUpdating)
        reporter.update()
        reporter.update()
        #expect(statistics.underLock == [true, true])
        #expect(!reporter.isUpdating)
        #expect(metrics.counterTotal(label: "hoard_cache_fetches", dimensions: [("cache", "locked")]) == 2)
    }

    @Test("Updates from four threads at once count each fetch once: the counter ends at the last snapshot")
    func concurrentUpdates() async {
        let metrics = TestMetrics()
        let statistics = GrowingStatistics()
        let reporter = CacheMetrics(
            name: "concurrent", statistics: statistics.snapshot, memory: { (0, 0) }, factory: metrics)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        Thread {
                            for _ in 0..<5_000 { reporter.update() }
                            continuation.resume()
                        }.start()
                    }
                }
            }
        }
        #expect(statistics.taken == 20_000)
        #expect(metrics.counterTotal(label: "hoard_cache_fetches", dimensions: [("cache", "concurrent")]) == 20_000)
    }

    @Test("A timer is made once per operation, tier, store and result, and kept")
    func timersMadeOnce() {
        let timers = _Timers(cache: "kept", factory: TestMetrics())
        let read = CacheTiming(operation: .read, tier: .local(0), duration: .milliseconds(1), succeeded: true)
        let again = CacheTiming(operation: .read, tier: .local(0), duration: .milliseconds(2), succeeded: true)
        let otherStore = CacheTiming(operation: .read, tier: .local(1), duration: .milliseconds(1), succeeded: true)
        #expect(timers.timer(for: read) === timers.timer(for: again))
        #expect(timers.timer(for: read) !== timers.timer(for: otherStore))
    }
}
#endif
