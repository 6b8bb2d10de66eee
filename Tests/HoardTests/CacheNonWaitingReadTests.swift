import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Hoard

@Suite("Cache: async disk reads answer on the caller's task when the disk store can without waiting")
struct CacheNonWaitingReadTests {
    /// A cache whose memory holds 10 values over a disk store in `url` holding
    /// `count` 1 KiB values (keys `0..<count`), with memory emptied, as the
    /// `disk hit` rows of CacheBenchmarks set it up.
    static func diskHitCache(_ store: DiskStore, count: Int) async throws -> Cache<Int, Data> {
        var configuration = Cache<Int, Data>.Configuration(name: "test")
        configuration.memory = .init(countLimit: 10)
        configuration.localStores = .stores([store])
        let cache = try Cache<Int, Data>(configuration: configuration)
        for key in 0..<count { cache[key] = Data(repeating: UInt8(key & 0xFF), count: 1_024) }
        await cache.flush()
        try await cache.clear(memory: true, disk: false, remote: false)
        return cache
    }

    @Test("Disk hits and misses of inline values never run on Hoard's executor")
    func inlineHitsStayOnTheCallersTask() async throws {
        try await DiskTest.withTemporaryDirectory { url in
            let cache = try await Self.diskHitCache(try DiskStore(directory: url), count: 200)
            // Random keys, each a disk hit promoted into a memory of 10 (as the benchmark reads)
            var random = SystemRandomNumberGenerator()
            for _ in 0..<300 {
                let key = Int.random(in: 0..<200, using: &random)
                #expect(try await cache.value(for: key) == Data(repeating: UInt8(key & 0xFF), count: 1_024))
            }
            #expect(try await cache.value(for: 1_000) == nil)
            #expect(cache.counters.executorLookups.load(ordering: .relaxed) == 0)
            #expect(cache.statistics.local.misses == 1)
            #expect(cache.statistics.local.hits + cache.statistics.memory.hits == 300)
        }
    }

    @Test("A value in a file is read on Hoard's executor")
    func spilledValueTakesTheExecutor() async throws {
        try await DiskTest.withTemporaryDirectory { url in
            let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
            let cache = try await Self.diskHitCache(store, count: 1)
            #expect(try await cache.value(for: 0)?.count == 1_024)
            #expect(cache.counters.executorLookups.load(ordering: .relaxed) == 1)
        }
    }

    @Test("With every read connection busy, the read waits on Hoard's executor, not on the caller's thread")
    func busyConnectionsTakeTheExecutor() async throws {
        try await DiskTest.withTemporaryDirectory { url in
            // Given a store with one read connection, held by a read stopped in a gate
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let gated = Atomic<Bool>(true)
            var configuration = DiskStore.Configuration(readerCount: 1)
            configuration.readerGate = { _ in
                guard gated.exchange(false, ordering: .relaxed) else { return }
                entered.signal()
                release.wait()
            }
            let store = try DiskStore(directory: url, configuration: configuration)
            gated.store(false, ordering: .relaxed)
            let cache = try await Self.diskHitCache(store, count: 2)
            gated.store(true, ordering: .relaxed)
            async let held = DiskTest.onThread { try store.entry(for: "1", in: "test")?.data.count }
            try await DiskTest.onThread { entered.wait() }

            // When an async read comes: it goes to the executor (and waits there)
            let read = Task { try await cache.value(for: 0) }
            #expect(await CacheTest.eventually { cache.counters.executorLookups.load(ordering: .relaxed) == 1 })

            // Then it completes once the connection is free
            release.signal()
            #expect(try await read.value?.count == 1_024)
            #expect(try await held == 1_024)
        }
    }
}
