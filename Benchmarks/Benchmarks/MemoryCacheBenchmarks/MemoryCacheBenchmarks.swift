import Benchmark
import Hoard

/// Throughput of `MemoryCache<Int, Int>` on a Zipf(0.99) request stream over
/// 100,000 keys, every one of which the caches hold.
///
/// Each benchmark name reads "<workload> <threads>T: <subject>". An iteration
/// replays the next batch of 1,000 requests (`.kilo` scaling: time per request,
/// throughput in K requests/s); the cache is built and filled in the benchmark's
/// setup, outside the measurement.
///
/// Subjects, with the baselines measured in the same run so results compare as ratios:
/// - `MemoryCache lru shards:1`, `MemoryCache lru shards:8`,
///   `MemoryCache tinyLFU shards:1` (1 thread only): countLimit 100,000,
///   lowWaterMark 1.0, listening to the system's memory-pressure signal (the default).
/// - `MemoryCache default` (get-hit and mix, 1 and 2 threads): `.init(countLimit:
///   100,000)` and nothing else, so the default policy (LRU) and the default shard
///   count (16 for this limit), lowWaterMark 0.75 (nothing is evicted here).
/// - `MemoryCache lru shards:1 no pressure` (get-hit, 1 thread): the same with
///   `memoryPressure: nil`, to show that listening costs a read nothing.
/// - `MemoryCache lru shards:1 coarse clock`, `MemoryCache tinyLFU shards:1 coarse
///   clock` (set and mix, 1 thread): the same on `CoarseSystemClock`, to show what
///   the precise clock read costs a write.
/// - `baseline LockedDictionary`: `Mutex<[Int: Int]>`, no eviction.
/// - `baseline NSCache`: `NSCache<NSNumber, NSNumber>`, unbounded.
/// - `floor TimestampedDictionary`, `floor TimestampedDictionary coarse clock` (set,
///   1 thread): `LockedDictionary` whose entries also keep their write time, read
///   from `SystemClock` or `CoarseSystemClock` before the lock: the floor of any
///   cache that, like `MemoryCache`, stores when each value was written.
/// - `floor SketchedDictionary` (get-hit, 1 thread): `LockedDictionary` whose reads
///   also update two words of tables the size of `.tinyLFU`'s frequency sketch at
///   100,000 entries: what a sketch's two cache lines cost a read, beside
///   `LockedDictionary`; what `.tinyLFU`'s hits, counted on their slots, no longer
///   pay on every read.
///
/// Workloads: `get-hit` (reads), `set` (overwrites), `mix` (90% reads, 10%
/// overwrites) on 1 thread; `get-hit` and `mix` on 2 threads, each replaying half
/// of every batch at the same time (aggregate throughput).
let benchmarks: @Sendable () -> Void = {
    let oneThread: [Workload] = [.getHit, .set, .mix]
    let twoThreads: [Workload] = [.getHit, .mix]

    register("MemoryCache lru shards:1", oneThread: oneThread, twoThreads: twoThreads) {
        try memoryCache(policy: .lru, shards: 1)
    }
    register("MemoryCache lru shards:8", oneThread: oneThread, twoThreads: twoThreads) {
        try memoryCache(policy: .lru, shards: 8)
    }
    register("MemoryCache default", oneThread: [.getHit, .mix], twoThreads: twoThreads) {
        try MemoryCache<Int, Int>(configuration: .init(countLimit: KeySpace.keyCount))
    }
    register("MemoryCache lru shards:1 no pressure", oneThread: [.getHit], twoThreads: []) {
        try memoryCache(policy: .lru, shards: 1, listensToPressure: false)
    }
    register("MemoryCache tinyLFU shards:1", oneThread: oneThread, twoThreads: []) {
        try memoryCache(policy: .tinyLFU, shards: 1)
    }
    register("MemoryCache lru shards:1 coarse clock", oneThread: [.set, .mix], twoThreads: []) {
        try memoryCache(policy: .lru, shards: 1, clock: CoarseSystemClock())
    }
    register("MemoryCache tinyLFU shards:1 coarse clock", oneThread: [.set, .mix], twoThreads: []) {
        try memoryCache(policy: .tinyLFU, shards: 1, clock: CoarseSystemClock())
    }
    register("baseline LockedDictionary", oneThread: oneThread, twoThreads: twoThreads) {
        LockedDictionary(capacity: KeySpace.keyCount)
    }
    register("baseline NSCache", oneThread: oneThread, twoThreads: twoThreads) {
        NSCacheSubject()
    }
    register("floor TimestampedDictionary", oneThread: [.set], twoThreads: []) {
        TimestampedDictionary(capacity: KeySpace.keyCount, clock: SystemClock())
    }
    register("floor TimestampedDictionary coarse clock", oneThread: [.set], twoThreads: []) {
        TimestampedDictionary(capacity: KeySpace.keyCount, clock: CoarseSystemClock())
    }
    register("floor SketchedDictionary", oneThread: [.getHit], twoThreads: []) {
        SketchedDictionary(capacity: KeySpace.keyCount)
    }
}

func memoryCache(
    policy: EvictionPolicy, shards: Int, listensToPressure: Bool = true, clock: any CacheClock = SystemClock()
) throws -> MemoryCache<Int, Int> {
    var configuration = MemoryCache<Int, Int>.Configuration(
        countLimit: KeySpace.keyCount, lowWaterMark: 1.0, policy: policy, shards: shards)
    if !listensToPressure { configuration.memoryPressure = nil }
    return try MemoryCache<Int, Int>(configuration: configuration, clock: clock)
}

/// Registers one benchmark per workload and thread count for a subject. Each gets
/// its own cache, built and prepopulated in the benchmark's setup (unmeasured);
/// its teardown stops the helper thread of a two-thread benchmark.
func register<C: CacheSubject>(
    _ subject: String, oneThread: [Workload], twoThreads: [Workload],
    make: @escaping @Sendable () throws -> C
) {
    let runs = oneThread.map { ($0, 1) } + twoThreads.map { ($0, 2) }
    for (workload, threads) in runs {
        let name = "\(workload.rawValue) \(threads)T: \(subject)"
        let current = CurrentFixture<C>()
        Benchmark(
            name,
            configuration: throughputConfiguration(),
            closure: { _, fixture in fixture.runBatch() },
            setup: {
                let cache = try make()
                let held = KeySpace.prepopulate(cache)
                if held < KeySpace.keyCount {
                    print(
                        "Note: \(name): the cache holds \(held) of \(KeySpace.keyCount) keys; reads of the others miss."
                    )
                }
                let fixture = Fixture(cache: cache, workload: workload, threads: threads)
                current.fixture = fixture
                return fixture
            },
            teardown: {
                current.fixture?.stop()
                current.fixture = nil
            }
        )
    }
}

/// Hands a benchmark's fixture from its setup to its teardown, which the runner
/// calls one after the other, never at the same time.
final class CurrentFixture<C: CacheSubject> {
    var fixture: Fixture<C>?
}

/// About 2 s of iterations per benchmark (each iteration is one batch of 1,000
/// requests, hence `.kilo`: times are per request, throughput in K requests/s);
/// 23 benchmarks plus their setup take about 1.5 minutes.
func throughputConfiguration() -> Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        // Throughput always in K requests/s (one iteration is 1,000 requests), so
        // every row reads in the same unit.
        units: [.throughput: .count],
        warmupIterations: 100,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )
}
