#if Metrics
import Foundation
import Hoard
import HoardMetrics
import MetricsTestKit
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
}
#endif
