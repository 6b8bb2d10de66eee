#if Metrics
import CoreMetrics
import Hoard

/// The counters of one cache, and how each follows its statistics.
struct _Counters: Sendable {
    /// Each counter with the statistic it follows.
    private let followed: [(Counter, @Sendable (CacheStatistics) -> Int)]

    init(cache: String, factory: any MetricsFactory) {
        func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: [("cache", cache)] + dimensions, factory: factory)
        }
        var followed: [(Counter, @Sendable (CacheStatistics) -> Int)] = [
            (counter("hoard_cache_evictions", [("tier", "memory")]), { $0.evictions }),
            (counter("hoard_cache_memory_pressure_evictions", [("tier", "memory")]), { $0.memoryPressureEvictions }),
            (counter("hoard_cache_expirations", [("tier", "memory")]), { $0.expirations }),
        ]
        let tiers: [(String, @Sendable (CacheStatistics) -> CacheStatistics.Tier)] = [
            ("memory", { $0.memory }), ("local", { $0.local }), ("remote", { $0.remote }),
        ]
        for (tier, read) in tiers {
            followed.append((counter("hoard_cache_hits", [("tier", tier)]), { read($0).hits }))
            followed.append((counter("hoard_cache_misses", [("tier", tier)]), { read($0).misses }))
            followed.append((counter("hoard_cache_promotions", [("tier", tier)]), { read($0).promotions }))
        }
        followed.append((counter("hoard_cache_misses", [("tier", "all")]), { $0.misses }))
        followed.append((counter("hoard_cache_fetches"), { $0.fetches }))
        followed.append((counter("hoard_cache_fetch_failures"), { $0.fetchFailures }))
        followed.append((counter("hoard_cache_coalesced_waits"), { $0.coalescedWaits }))
        followed.append((counter("hoard_cache_negative_hits"), { $0.negativeHits }))
        followed.append((counter("hoard_cache_stale_hits"), { $0.staleHits }))
        followed.append((counter("hoard_cache_dropped_promotions"), { $0.droppedPromotions }))
        followed.append((counter("hoard_cache_failures", [("operation", "read")]), { $0.readFailures }))
        followed.append((counter("hoard_cache_failures", [("operation", "write")]), { $0.writeFailures }))
        followed.append((counter("hoard_cache_failures", [("operation", "decode")]), { $0.decodeFailures }))
        self.followed = followed
    }

    /// Moves every counter by its statistic's change from `before` to `now`.
    func move(from before: CacheStatistics, to now: CacheStatistics) {
        for (counter, statistic) in followed {
            let delta = CacheMetrics.delta(statistic(before), statistic(now))
            if delta > 0 { counter.increment(by: delta) }
        }
    }
}

/// The duration timers of one cache, one per operation, tier and result.
struct _Timers: Sendable {
    private let cache: String
    private let factory: any MetricsFactory

    init(cache: String, factory: any MetricsFactory) {
        self.cache = cache
        self.factory = factory
    }

    func timer(for timing: CacheTiming) -> Timer {
        let tier: String
        switch timing.tier {
        case .memory: tier = "memory"
        case .local(let index): tier = "local\(index)"
        case .remote(let index): tier = "remote\(index)"
        case .fetch: tier = "fetch"
        }
        // swift-metrics factories cache handlers by label and dimensions.
        return Timer(
            label: "hoard_cache_duration",
            dimensions: [
                ("cache", cache), ("operation", timing.operation.rawValue), ("tier", tier),
                ("result", timing.succeeded ? "success" : "failure"),
            ],
            factory: factory)
    }
}
#endif
