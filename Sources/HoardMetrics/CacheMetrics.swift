#if Metrics
import CoreMetrics
import Hoard
import Synchronization

/// Reports a `Cache`'s statistics through swift-metrics.
///
/// Counters (label, then dimensions; every metric also carries `cache`, the cache's
/// name): `hoard_cache_hits`, `hoard_cache_misses` and `hoard_cache_promotions` by
/// `tier` (`memory`, `local`, `remote`; misses also `all`, reads no tier answered),
/// `hoard_cache_fetches`, `hoard_cache_fetch_failures`, `hoard_cache_coalesced_waits`,
/// `hoard_cache_negative_hits`, `hoard_cache_stale_hits`,
/// `hoard_cache_dropped_promotions`, `hoard_cache_failures` by `operation` (`read`,
/// `write`, `decode`), and `hoard_cache_evictions` (all of them),
/// `hoard_cache_memory_pressure_evictions` (the part made for memory pressure) and
/// `hoard_cache_expirations` of the memory tier. Gauges: `hoard_cache_entries` and `hoard_cache_cost` of the memory
/// tier. Timers, from ``timings(cache:factory:)``: `hoard_cache_duration` by
/// `operation` (`fetch`, `read`, `write`), `tier` (`local`, `remote`, `fetch`),
/// `store` (for `local` and `remote`: the store's position in the configuration's
/// `localStores` or `remoteStores`, `"0"` first) and `result` (`success`,
/// `failure`). `tier` means the same on every metric.
///
/// Counters move by what changed since the previous ``update()``; nothing is
/// counted on the cache's own paths, so a cache without metrics pays nothing, and
/// one with metrics pays only when ``update()`` runs (``run(every:)`` calls it
/// periodically).
///
/// ```swift
/// var configuration = Cache<Int, User>.Configuration(name: "users")
/// configuration.timings = CacheMetrics.timings(cache: "users")
/// let users = try Cache<Int, User>(configuration: configuration)
/// let metrics = CacheMetrics(users)          // then: try await metrics.run(every: .seconds(10))
/// ```
public final class CacheMetrics: Sendable {
    private let statistics: @Sendable () -> CacheStatistics
    private let memory: @Sendable () -> (count: Int, cost: Int)
    private let counters: _Counters
    private let entries: Gauge
    private let cost: Gauge
    /// What the counters were last moved to. ``update()`` takes the cache's
    /// statistics while it holds this lock, so the snapshots are applied in the
    /// order they were taken.
    private let moved: Mutex<_Counters.Moved>

    /// Creates the metrics of `cache`, registered with `factory` (by default the
    /// process's bootstrapped `MetricsSystem`).
    public convenience init<Key, Value>(_ cache: Cache<Key, Value>, factory: any MetricsFactory = MetricsSystem.factory)
    {
        self.init(
            name: cache.configuration.name, statistics: { cache.statistics },
            memory: { (cache.memoryCount, cache.memoryCost) }, factory: factory)
    }

    /// Creates the metrics of the cache named `name`, whose statistics and memory
    /// tier's size the closures read.
    init(
        name: String, statistics: @escaping @Sendable () -> CacheStatistics,
        memory: @escaping @Sendable () -> (count: Int, cost: Int), factory: any MetricsFactory
    ) {
        self.statistics = statistics
        self.memory = memory
        counters = _Counters(cache: name, factory: factory)
        moved = Mutex(counters.start)
        entries = Gauge(
            label: "hoard_cache_entries", dimensions: [("cache", name), ("tier", "memory")], factory: factory)
        cost = Gauge(label: "hoard_cache_cost", dimensions: [("cache", name), ("tier", "memory")], factory: factory)
    }

    /// Moves every counter by what changed since the last call (or since the
    /// cache's statistics were reset), and sets the gauges.
    ///
    /// Safe to call from any number of threads at once: each call reads the cache's
    /// statistics and moves the counters in one step under a lock, so a call never
    /// moves them by a snapshot older than one another call already applied (which
    /// would look like a reset and count everything again), and the gauges end at
    /// the last snapshot taken.
    public func update() {
        moved.withLock { moved in
            moved = counters.move(from: moved, to: statistics())
            let memory = memory()
            entries.record(memory.count)
            cost.record(memory.cost)
        }
    }

    /// Whether an ``update()`` is running now, on any thread; for tests.
    var isUpdating: Bool { moved.withLockIfAvailable { _ in false } ?? true }

    /// Calls ``update()`` every `interval` until the task is cancelled, then once
    /// more.
    public func run(every interval: Duration) async {
        while !Task.isCancelled {
            update()
            try? await Task.sleep(for: interval)
        }
        update()
    }

    /// A closure for a cache configuration's `timings` that records every
    /// fetch, store read and store write of the cache named `cache` in the timer
    /// `hoard_cache_duration`.
    public static func timings(
        cache: String, factory: any MetricsFactory = MetricsSystem.factory
    ) -> @Sendable (CacheTiming) -> Void {
        let timers = _Timers(cache: cache, factory: factory)
        return { timing in timers.timer(for: timing).recordNanoseconds(timing.duration.nanoseconds) }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return whole &+ attoseconds / 1_000_000_000
    }
}
#endif
