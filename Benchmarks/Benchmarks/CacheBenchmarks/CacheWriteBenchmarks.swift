import Benchmark
import Foundation
import Hoard

/// The write paths of `Cache`, each beside its baseline in the same run:
///
/// - `memory set`: `cache[key] = value` on a `Cache<Int, Int>` with no stores, 1,000
///   keys per iteration, against `MemoryCache.set` with the same limit.
/// - `assign caller side 1KiB`: the time the caller spends in `cache[key] = value`
///   with a DiskStore below (write-behind), 1,000 per iteration; the flush that
///   follows is outside the measurement.
/// - `awaited set 1KiB`: `try await cache.set(value, for: key)` with a DiskStore
///   below, against `DiskStore.set` of the same bytes, and against the floor of an
///   `async` write that keeps off the cooperative pool: `DiskStore.set` run on a
///   dispatch queue, the caller resumed with its result.
func registerWrites() {
    let keys = Array(0..<memoryKeyCount)
    let cursor = Cursor()
    Benchmark(
        "memory set: Cache (no stores)",
        configuration: configuration(scaling: .kilo),
        closure: { (_, cache: Cache<Int, Int>) in
            let offset = cursor.advance(by: 1_000, modulo: memoryKeyCount)
            for key in keys[offset..<offset + 1_000] { cache[key] = key }
        },
        setup: {
            var settings = Cache<Int, Int>.Configuration(name: "bench-memory-set")
            settings.memory = .init(countLimit: memoryKeyCount)
            settings.localStores = .none
            return try Cache<Int, Int>(configuration: settings)
        }
    )
    Benchmark(
        "memory set: baseline MemoryCache",
        configuration: configuration(scaling: .kilo),
        closure: { (_, cache: MemoryCache<Int, Int>) in
            let offset = cursor.advance(by: 1_000, modulo: memoryKeyCount)
            for key in keys[offset..<offset + 1_000] { cache.set(key, for: key) }
        },
        setup: {
            try MemoryCache<Int, Int>(configuration: .init(countLimit: memoryKeyCount))
        }
    )

    let assignHeld = Holder<DiskFixture<Cache<Int, Data>>>()
    Benchmark(
        "assign caller side 1KiB: Cache over DiskStore",
        configuration: configuration(scaling: .kilo),
        closure: { (benchmark, fixture: DiskFixture<Cache<Int, Data>>) in
            let cache = fixture.subject
            let offset = cursor.advance(by: 1_000, modulo: diskKeyCount)
            benchmark.startMeasurement()
            for key in offset..<offset + 1_000 { cache[key] = oneKiB }
            benchmark.stopMeasurement()
            await cache.flush()
        },
        setup: {
            let fixture = try makeWriteCache(name: "bench-assign")
            assignHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = assignHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            assignHeld.value = nil
        }
    )

    let setHeld = Holder<DiskFixture<Cache<Int, Data>>>()
    Benchmark(
        "awaited set 1KiB: Cache over DiskStore",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<Cache<Int, Data>>) in
            try await fixture.subject.set(oneKiB, for: cursor.advance(by: 1, modulo: diskKeyCount))
        },
        setup: {
            let fixture = try makeWriteCache(name: "bench-set")
            setHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = setHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            setHeld.value = nil
        }
    )
    let storeHeld = Holder<DiskFixture<DiskStore>>()
    let floorQueue = DispatchQueue(label: "bench.floor")
    Benchmark(
        "awaited set 1KiB: floor DiskStore.set hopped to a queue",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<DiskStore>) in
            let key = String(cursor.advance(by: 1, modulo: diskKeyCount))
            let store = fixture.subject
            try await onQueue(floorQueue) {
                try store.set(oneKiB, for: key, in: "bench-set", storedAt: Date(), expiresAt: nil)
            }
        },
        setup: {
            let directory = try makeTemporaryDirectory()
            let fixture = DiskFixture(
                subject: try DiskStore(directory: directory.appendingPathComponent("store")), directory: directory)
            storeHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = storeHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            storeHeld.value = nil
        }
    )
    Benchmark(
        "awaited set 1KiB: baseline DiskStore.set",
        configuration: configuration(scaling: .one, seconds: 3),
        closure: { (_, fixture: DiskFixture<DiskStore>) in
            let key = cursor.advance(by: 1, modulo: diskKeyCount)
            try fixture.subject.set(oneKiB, for: String(key), in: "bench-set", storedAt: Date(), expiresAt: nil)
        },
        setup: {
            let directory = try makeTemporaryDirectory()
            let fixture = DiskFixture(
                subject: try DiskStore(directory: directory.appendingPathComponent("store")), directory: directory)
            storeHeld.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = storeHeld.value { try? FileManager.default.removeItem(at: fixture.directory) }
            storeHeld.value = nil
        }
    )
}

/// Runs `body` on `queue` and resumes the caller with its result: the least an
/// `async` call pays to keep blocking work off the cooperative pool (two thread
/// switches), the floor under the Cache's `async` disk rows.
func onQueue<T: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withUnsafeThrowingContinuation { continuation in
        queue.async { continuation.resume(with: Result { try body() }) }
    }
}

/// An empty cache over a fresh DiskStore, memory large enough for every key.
func makeWriteCache(name: String) throws -> DiskFixture<Cache<Int, Data>> {
    let directory = try makeTemporaryDirectory()
    let store = try DiskStore(directory: directory.appendingPathComponent("store"))
    var settings = Cache<Int, Data>.Configuration(name: name)
    settings.memory = .init(countLimit: diskKeyCount)
    settings.localStores = .stores([store])
    return DiskFixture(subject: try Cache<Int, Data>(configuration: settings), directory: directory)
}

/// Where a benchmark's run of keys starts next: `advance` returns the current
/// start and moves it on, wrapping so that a run never passes `modulo`.
final class Cursor {
    private var position = 0

    func advance(by count: Int, modulo: Int) -> Int {
        let start = position
        position = (position + count) % (modulo - count + 1)
        return start
    }
}
