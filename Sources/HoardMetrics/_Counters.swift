#if Metrics
import CoreMetrics
import Hoard
import Synchronization

/// The counters of one cache, and how each follows its statistics.
struct _Counters: Sendable {
    /// Each counter with the statistic it follows, and whether that statistic may go
    /// down without a reset (see ``move(from:to:)``).
    private let followed: [(Counter, @Sendable (CacheStatistics) -> Int, dips: Bool)]

    /// What the counters were last moved to: each followed statistic's highest value
    /// since the last reset, by position, and the memory tier's reads.
    struct Moved: Sendable {
        var values: [Int]
        /// The memory tier's hits, misses and negative hits together.
        var memoryReads: Int
    }

    /// Where the counters start: every statistic at zero.
    var start: Moved { Moved(values: Array(repeating: 0, count: followed.count), memoryReads: 0) }

    init(cache: String, factory: any MetricsFactory) {
        func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: [("cache", cache)] + dimensions, factory: factory)
        }
        var followed: [(Counter, @Sendable (CacheStatistics) -> Int, dips: Bool)] = [
            (counter("hoard_cache_evictions", [("tier", "memory")]), { $0.evictions }, false),
            (
                counter("hoard_cache_memory_pressure_evictions", [("tier", "memory")]), { $0.memoryPressureEvictions },
                false
            ),
            (counter("hoard_cache_expirations", [("tier", "memory")]), { $0.expirations }, false),
        ]
        let tiers: [(String, @Sendable (CacheStatistics) -> CacheStatistics.Tier)] = [
            ("memory", { $0.memory }), ("local", { $0.local }), ("remote", { $0.remote }),
        ]
        for (tier, read) in tiers {
            followed.append((counter("hoard_cache_hits", [("tier", tier)]), { read($0).hits }, tier == "memory"))
            followed.append((counter("hoard_cache_misses", [("tier", tier)]), { read($0).misses }, tier == "memory"))
            followed.append((counter("hoard_cache_promotions", [("tier", tier)]), { read($0).promotions }, false))
        }
        followed.append((counter("hoard_cache_misses", [("tier", "all")]), { $0.misses }, false))
        followed.append((counter("hoard_cache_fetches"), { $0.fetches }, false))
        followed.append((counter("hoard_cache_fetch_failures"), { $0.fetchFailures }, false))
        followed.append((counter("hoard_cache_coalesced_waits"), { $0.coalescedWaits }, false))
        followed.append((counter("hoard_cache_negative_hits"), { $0.negativeHits }, false))
        followed.append((counter("hoard_cache_stale_hits"), { $0.staleHits }, false))
        followed.append((counter("hoard_cache_dropped_promotions"), { $0.droppedPromotions }, false))
        followed.append((counter("hoard_cache_failures", [("operation", "read")]), { $0.readFailures }, false))
        followed.append((counter("hoard_cache_failures", [("operation", "write")]), { $0.writeFailures }, false))
        followed.append((counter("hoard_cache_failures", [("operation", "decode")]), { $0.decodeFailures }, false))
        self.followed = followed
    }

    /// Moves every counter by how far its statistic rose above what the counter was
    /// last moved to, or, when the cache's statistics were reset since, by the
    /// statistic; returns what the counters were moved to.
    ///
    /// The memory tier's hits and misses may go down without a reset: a read that
    /// missed memory and that a queued write then answers moves from the misses to
    /// the hits, so an update while it is in flight counts one miss the next
    /// does not. Their sum with the negative hits, and every other statistic, goes
    /// down only on a reset.
    func move(from moved: Moved, to now: CacheStatistics) -> Moved {
        let values = followed.map { $0.1(now) }
        let memoryReads = now.memory.hits + now.memory.misses + now.negativeHits
        let wasReset =
            memoryReads < moved.memoryReads
            || zip(followed, zip(values, moved.values)).contains { followed, value in
                !followed.dips && value.0 < value.1
            }
        var next = Moved(values: [], memoryReads: wasReset ? memoryReads : max(memoryReads, moved.memoryReads))
        for ((counter, _, _), (value, last)) in zip(followed, zip(values, moved.values)) {
            let delta = wasReset ? value : max(0, value - last)
            if delta > 0 { counter.increment(by: Int64(delta)) }
            next.values.append(wasReset ? value : max(value, last))
        }
        return next
    }
}

/// The duration timers of one cache, one per operation, tier, store and result,
/// each made the first time it is needed and kept.
final class _Timers: Sendable {
    /// What tells one timer from another.
    private struct Dimensions: Hashable {
        var operation: CacheTiming.Operation
        var tier: CacheTier
        var succeeded: Bool
    }

    private let cache: String
    private let factory: any MetricsFactory
    /// `Timer` is a class whose handler is `Sendable`; the lock guards the
    /// dictionary.
    private let timers = Mutex<[Dimensions: Timer]>([:])

    init(cache: String, factory: any MetricsFactory) {
        self.cache = cache
        self.factory = factory
    }

    func timer(for timing: CacheTiming) -> Timer {
        let dimensions = Dimensions(operation: timing.operation, tier: timing.tier, succeeded: timing.succeeded)
        return timers.withLock { timers in
            if let timer = timers[dimensions] { return timer }
            let timer = Timer(
                label: "hoard_cache_duration",
                dimensions: [("cache", cache), ("operation", timing.operation.rawValue)]
                    + _MetricLabels.tier(timing.tier) + [("result", timing.succeeded ? "success" : "failure")],
                factory: factory)
            timers[dimensions] = timer
            return timer
        }
    }
}

/// The one label scheme of Hoard's metrics: `tier` names the kind of tier
/// (`memory`, `local`, `remote`, `fetch`), the same on every metric; metrics about
/// one store of a tier (the timers) add `store`, its position in
/// `Configuration.localStores` or `remoteStores` (`"0"`, `"1"`, …).
enum _MetricLabels {
    static func tier(_ tier: CacheTier) -> [(String, String)] {
        switch tier {
        case .memory: [("tier", "memory")]
        case .local(let index): [("tier", "local"), ("store", String(index))]
        case .remote(let index): [("tier", "remote"), ("store", String(index))]
        case .fetch: [("tier", "fetch")]
        }
    }
}
#endif
