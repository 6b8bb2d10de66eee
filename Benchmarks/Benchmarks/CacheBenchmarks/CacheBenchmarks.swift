import Benchmark
import Foundation
import Hoard
import Synchronization

/// The tiered `Cache` against baselines measured in the same run, so results
/// compare as ratios. Benchmarks with a disk store get a fresh temporary directory
/// in their setup, removed in their teardown.
///
/// - `memory hit`: `Cache<Int, Int>` with no local store vs `MemoryCache<Int, Int>`
///   alone, both with countLimit 100,000 and every key present; uniform random keys
///   precomputed; 1,000 reads per iteration (`.kilo`).
/// - `stampede 1000 tasks`: 1,000 tasks call `try await cache.value(for: k)` for a
///   fresh missing key per iteration; the fetch counts its calls, and the teardown
///   prints fetches per iteration. Baseline: the same 1,000 tasks in a task group,
///   each reading a `MemoryCache`, so the ratio is the cost of coalescing.
/// - `disk hit promote`: memory limit 100, 10,000 1 KiB values on a DiskStore;
///   100 reads of random keys per iteration (each a disk hit promoted to memory).
///   Baseline: `DiskStore.entry(for:in:)` on a store with the same entries.
///   The `async value(for:)` row reads the same way through the asynchronous path
///   (the lookup runs on Hoard's own threads); its floor is `DiskStore.entry` run
///   on a dispatch queue, the caller resumed with the result.
/// - `write-behind 1KiB`: `cache[key] = value` for 10,000 keys, then
///   `await cache.flush()`, per iteration; the `values/s` metric counts values.
///   Baseline: one `DiskStore.write` of the same 10,000 values.
/// - `memory set`, `assign caller side`, `awaited set`: see CacheWriteBenchmarks.swift.
let benchmarks: @Sendable () -> Void = {
    registerMemoryHit()
    registerStampede()
    registerDiskHit()
    registerWriteBehind()
    registerWrites()
}

/// A fresh directory under the system's temporary directory.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("hoard-bench-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A small deterministic generator (SplitMix64).
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func uniformKeys(count: Int, upperBound: Int) -> [Int] {
    var generator = SplitMix(state: 0x484F_4152_4421)
    return (0..<count).map { _ in Int.random(in: 0..<upperBound, using: &generator) }
}

/// Hands state from a benchmark's setup to its teardown.
final class Holder<T> {
    var value: T?
}

func configuration(scaling: BenchmarkScalingFactor, seconds: Int = 2, extra: [BenchmarkMetric] = [])
    -> Benchmark.Configuration
{
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal] + extra,
        units: [.throughput: .count],
        warmupIterations: 3,
        scalingFactor: scaling,
        maxDuration: .seconds(seconds),
        maxIterations: 1_000_000
    )
}

// MARK: Memory hit

let memoryKeyCount = 100_000
// The memory-hit caches hold twice as many entries as there are keys: a 16-shard
// cache (the default at this size) starts evicting in its fullest shard before it
// holds `countLimit` keys, and every read here must hit.
let memoryRequests = uniformKeys(count: 1 << 20, upperBound: memoryKeyCount)

final class MemoryHitFixture {
    var position = 0
    /// The next 1,000 requests; every batch is full (the requests' count is not a
    /// multiple of 1,000, so the last part is skipped, not read short).
    func nextBatch() -> ArraySlice<Int> {
        let start = position + 1_000 <= memoryRequests.count ? position : 0
        position = start + 1_000
        return memoryRequests[start..<position]
    }
}

func registerMemoryHit() {
    Benchmark(
        "memory hit: Cache",
        configuration: configuration(scaling: .kilo),
        closure: { (_, state: (Cache<Int, Int>, MemoryHitFixture)) in
            let (cache, fixture) = state
            var sum = 0
            for key in fixture.nextBatch() { sum &+= cache.cachedValue(for: key) ?? -1 }
            blackHole(sum)
        },
        setup: {
            var settings = Cache<Int, Int>.Configuration(name: "bench-memory")
            settings.memory = .init(countLimit: 2 * memoryKeyCount, lowWaterMark: 1.0)
            settings.localStores = .none
            let cache = try Cache<Int, Int>(configuration: settings)
            for key in 0..<memoryKeyCount { cache[key] = key }
            precondition(cache.memoryCount == memoryKeyCount, "not every key is held")
            return (cache, MemoryHitFixture())
        }
    )
    Benchmark(
        "memory hit: Cache async value(for:)",
        configuration: configuration(scaling: .kilo),
        closure: { (_, state: (Cache<Int, Int>, MemoryHitFixture)) in
            let (cache, fixture) = state
            var sum = 0
            for key in fixture.nextBatch() { sum &+= ((try? await cache.value(for: key)) ?? nil) ?? -1 }
            blackHole(sum)
        },
        setup: {
            var settings = Cache<Int, Int>.Configuration(name: "bench-memory-async")
            settings.memory = .init(countLimit: 2 * memoryKeyCount, lowWaterMark: 1.0)
            settings.localStores = .none
            let cache = try Cache<Int, Int>(configuration: settings)
            for key in 0..<memoryKeyCount { cache[key] = key }
            precondition(cache.memoryCount == memoryKeyCount, "not every key is held")
            return (cache, MemoryHitFixture())
        }
    )
    Benchmark(
        "memory hit: baseline MemoryCache",
        configuration: configuration(scaling: .kilo),
        closure: { (_, state: (MemoryCache<Int, Int>, MemoryHitFixture)) in
            let (cache, fixture) = state
            var sum = 0
            for key in fixture.nextBatch() { sum &+= cache.value(for: key) ?? -1 }
            blackHole(sum)
        },
        setup: {
            let cache = try MemoryCache<Int, Int>(
                configuration: .init(countLimit: 2 * memoryKeyCount, lowWaterMark: 1.0))
            for key in 0..<memoryKeyCount { _ = cache.set(key, for: key) }
            precondition(cache.count == memoryKeyCount, "not every key is held")
            return (cache, MemoryHitFixture())
        }
    )
}

// MARK: Stampede

let stampedeTasks = 1_000

final class StampedeState: Sendable {
    let fetches = Atomic<Int>(0)
    let iterations = Atomic<Int>(0)
    let nextKey = Atomic<Int>(0)
}

func registerStampede() {
    let held = Holder<StampedeState>()
    Benchmark(
        "stampede 1000 tasks: Cache",
        configuration: configuration(scaling: .one),
        closure: { (_, state: (Cache<Int, Int>, StampedeState)) in
            let (cache, counters) = state
            let key = counters.nextKey.add(1, ordering: .relaxed).newValue
            counters.iterations.add(1, ordering: .relaxed)
            await withTaskGroup(of: Int.self) { group in
                for _ in 0..<stampedeTasks {
                    group.addTask { ((try? await cache.value(for: key)) ?? nil) ?? -1 }
                }
                var sum = 0
                for await value in group { sum &+= value }
                blackHole(sum)
            }
        },
        setup: {
            let counters = StampedeState()
            held.value = counters
            var settings = Cache<Int, Int>.Configuration(name: "bench-stampede")
            settings.localStores = .none
            let cache = try Cache<Int, Int>(configuration: settings) { key in
                counters.fetches.add(1, ordering: .relaxed)
                return key
            }
            return (cache, counters)
        },
        teardown: {
            if let counters = held.value {
                let fetches = counters.fetches.load(ordering: .relaxed)
                let iterations = max(1, counters.iterations.load(ordering: .relaxed))
                print(
                    "stampede 1000 tasks: \(fetches) fetches over \(iterations) iterations = "
                        + "\(Double(fetches) / Double(iterations)) fetches per iteration")
            }
            held.value = nil
        }
    )
    Benchmark(
        "stampede 1000 tasks: baseline task group + MemoryCache",
        configuration: configuration(scaling: .one),
        closure: { (_, state: (MemoryCache<Int, Int>, StampedeState)) in
            let (cache, counters) = state
            let key = counters.nextKey.add(1, ordering: .relaxed).newValue
            await withTaskGroup(of: Int.self) { group in
                for _ in 0..<stampedeTasks {
                    group.addTask { cache.value(for: key) ?? -1 }
                }
                var sum = 0
                for await value in group { sum &+= value }
                blackHole(sum)
            }
        },
        setup: {
            (try MemoryCache<Int, Int>(configuration: .init(countLimit: 10_000)), StampedeState())
        }
    )
}

// MARK: Disk hit with promotion

let diskKeyCount = 10_000
let diskReadsPerIteration = 100
let diskRequests = uniformKeys(count: 1 << 20, upperBound: diskKeyCount)
let oneKiB = Data(repeating: 0x5A, count: 1 << 10)

final class DiskFixture<Subject> {
    let subject: Subject
    let directory: URL
    var position = 0

    init(subject: Subject, directory: URL) {
        self.subject = subject
        self.directory = directory
    }

    /// The next `diskReadsPerIteration` requests; every batch is full (a short one
    /// at the end of the requests made a fast run's byte-count check fail).
    func nextBatch() -> ArraySlice<Int> {
        let start = position + diskReadsPerIteration <= diskRequests.count ? position : 0
        position = start + diskReadsPerIteration
        return diskRequests[start..<position]
    }
}

/// A cache whose memory holds 100 of the 10,000 1 KiB values its disk store holds.
func makeDiskHitCache() async throws -> DiskFixture<Cache<Int, Data>> {
    let directory = try makeTemporaryDirectory()
    let store = try DiskStore(directory: directory.appendingPathComponent("store"))
    var settings = Cache<Int, Data>.Configuration(name: "bench-disk")
    settings.memory = .init(countLimit: 100)
    settings.localStores = .stores([store])
    let cache = try Cache<Int, Data>(configuration: settings)
    for key in 0..<diskKeyCount { cache[key] = oneKiB }
    await cache.flush()
    try await cache.clear(memory: true, disk: false, remote: false)
    return DiskFixture(subject: cache, directory: directory)
}

/// A DiskStore holding the 10,000 1 KiB values the disk-hit rows read.
func makeDiskStoreFixture() throws -> DiskFixture<DiskStore> {
    let directory = try makeTemporaryDirectory()
    let store = try DiskStore(directory: directory.appendingPathComponent("store"))
    let now = Date()
    try store.write(
        (0..<diskKeyCount).map {
            .set(oneKiB, for: String($0), in: DiskStore.defaultNamespace, storedAt: now, expiresAt: nil)
        })
    return DiskFixture(subject: store, directory: directory)
}

func registerDiskHit() {
    let cacheHeld = Holder<DiskFixture<Cache<Int, Data>>>()
    Benchmark(
        "disk hit promote 1KiB: Cache",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<Cache<Int, Data>>) in
            var bytes = 0
            for key in fixture.nextBatch() { bytes &+= fixture.subject.cachedValue(for: key)?.count ?? -1 }
            precondition(bytes == diskReadsPerIteration << 10, "a disk read missed")
            blackHole(bytes)
        },
        setup: {
            let fixture = try await makeDiskHitCache()
            cacheHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = cacheHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            cacheHeld.value = nil
        }
    )
    Benchmark(
        "disk hit promote 1KiB: Cache async value(for:)",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<Cache<Int, Data>>) in
            var bytes = 0
            for key in fixture.nextBatch() { bytes &+= try await fixture.subject.value(for: key)?.count ?? -1 }
            precondition(bytes == diskReadsPerIteration << 10, "a disk read missed")
            blackHole(bytes)
        },
        setup: {
            let fixture = try await makeDiskHitCache()
            cacheHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = cacheHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            cacheHeld.value = nil
        }
    )
    let storeHeld = Holder<DiskFixture<DiskStore>>()
    let floorQueue = DispatchQueue(label: "bench.floor")
    Benchmark(
        "disk hit promote 1KiB: floor DiskStore.entry hopped to a queue",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<DiskStore>) in
            var bytes = 0
            let store = fixture.subject
            for key in fixture.nextBatch() {
                bytes &+= try await onQueue(floorQueue) {
                    try store.entry(for: String(key), in: DiskStore.defaultNamespace)?.data.count ?? -1
                }
            }
            precondition(bytes == diskReadsPerIteration << 10, "a disk read missed")
            blackHole(bytes)
        },
        setup: {
            let fixture = try makeDiskStoreFixture()
            storeHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = storeHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            storeHeld.value = nil
        }
    )
    Benchmark(
        "disk hit promote 1KiB: baseline DiskStore.entry",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<DiskStore>) in
            var bytes = 0
            for key in fixture.nextBatch() {
                bytes &+=
                    (try? fixture.subject.entry(for: String(key), in: DiskStore.defaultNamespace))?.data.count ?? -1
            }
            precondition(bytes == diskReadsPerIteration << 10, "a disk read missed")
            blackHole(bytes)
        },
        setup: {
            let fixture = try makeDiskStoreFixture()
            storeHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = storeHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            storeHeld.value = nil
        }
    )
}

// MARK: Write-behind

let writeBehindKeys = 10_000
let valuesPerSecond = BenchmarkMetric.custom("values/s", polarity: .prefersLarger, useScalingFactor: false)

/// Records `values` over the time since `start` as values per second.
func recordRate(_ benchmark: Benchmark, values: Int, since start: ContinuousClock.Instant) {
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    benchmark.measurement(valuesPerSecond, Int(Double(values) / seconds))
}

func registerWriteBehind() {
    let cacheHeld = Holder<DiskFixture<Cache<Int, Data>>>()
    Benchmark(
        "write-behind 10k x 1KiB: Cache",
        configuration: configuration(scaling: .one, seconds: 5, extra: [valuesPerSecond]),
        closure: { (benchmark, fixture: DiskFixture<Cache<Int, Data>>) in
            let start = ContinuousClock.now
            let cache = fixture.subject
            for key in 0..<writeBehindKeys { cache[key] = oneKiB }
            await cache.flush()
            recordRate(benchmark, values: writeBehindKeys, since: start)
        },
        setup: {
            let directory = try makeTemporaryDirectory()
            let store = try DiskStore(directory: directory.appendingPathComponent("store"))
            var settings = Cache<Int, Data>.Configuration(name: "bench-write-behind")
            settings.memory = .init(countLimit: writeBehindKeys)
            settings.localStores = .stores([store])
            let fixture = DiskFixture(subject: try Cache<Int, Data>(configuration: settings), directory: directory)
            cacheHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = cacheHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            cacheHeld.value = nil
        }
    )
    let storeHeld = Holder<DiskFixture<DiskStore>>()
    Benchmark(
        "write-behind 10k x 1KiB: baseline DiskStore.write batch",
        configuration: configuration(scaling: .one, seconds: 5, extra: [valuesPerSecond]),
        closure: { (benchmark, fixture: DiskFixture<DiskStore>) in
            let start = ContinuousClock.now
            let now = Date()
            try fixture.subject.write(
                (0..<writeBehindKeys).map {
                    .set(oneKiB, for: String($0), in: DiskStore.defaultNamespace, storedAt: now, expiresAt: nil)
                })
            recordRate(benchmark, values: writeBehindKeys, since: start)
        },
        setup: {
            let directory = try makeTemporaryDirectory()
            let store = try DiskStore(directory: directory.appendingPathComponent("store"))
            let fixture = DiskFixture(subject: store, directory: directory)
            storeHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = storeHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            storeHeld.value = nil
        }
    )
}
