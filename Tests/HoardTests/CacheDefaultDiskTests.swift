import Foundation
import Hoard
import Synchronization
import Testing

/// A default `Cache` keeps its disk tier bounded.
@Suite("Cache: the default disk store is bounded")
struct CacheDefaultDiskTests {
    @Test("A default configuration limits its disk store to 150 MB; nil means no limit")
    func defaultLimit() throws {
        var configuration = Cache<String, Data>.Configuration(name: "defaults")
        #expect(configuration.diskByteLimit == 150_000_000)
        #expect(Cache<String, Data>.Configuration.defaultDiskByteLimit == 150_000_000)
        configuration.diskByteLimit = 0
        #expect(throws: HoardError.self) { try Cache<String, Data>(configuration: configuration) }
    }

    @Test("The default disk store evicts down to diskByteLimit")
    func defaultDiskEvicts() async throws {
        let name = "hoard-test-default-disk-\(UUID().uuidString)"
        let directory = try DiskStore.defaultDirectory(named: name)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Cache<String, Data>.Configuration(name: name)
        configuration.diskByteLimit = 4_096
        let cache = try Cache<String, Data>(configuration: configuration)
        for index in 0..<16 { try await cache.set(Data(count: 1_024), for: "k\(index)") }
        await cache.flush()

        let store = try DiskStore(directory: directory)
        let usage = try store.usage(in: name)
        #expect(usage.bytes <= 4_096)
        #expect(try store.entry(for: "k15", in: name) != nil, "the newest entry is kept")

        configuration.diskByteLimit = nil
        let unbounded = try Cache<String, Data>(configuration: configuration)
        for index in 0..<16 { try await unbounded.set(Data(count: 1_024), for: "u\(index)") }
        await unbounded.flush()
        #expect(try store.usage(in: name).bytes >= 16 * 1_024)
    }
}

/// A producer faster than the stores is slowed to their pace, never buffered
/// without bound.
@Suite("Cache: the write-behind queue is bounded", .timeLimit(.minutes(2)))
struct CacheWriteQueueBudgetTests {
    final class Progress: Sendable {
        let count = Atomic<Int>(0)
    }

    @Test("Past the queue's byte budget, an assignment waits for the writer; nothing is dropped")
    func assignmentsWaitForRoom() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let gated = HookedStore(disk)
            var configuration: Cache<String, Data>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            configuration.writeQueueByteLimit = 8 << 10
            let cache = try Cache<String, Data>(configuration: configuration)

            gated.writeGate.close()
            let progress = Progress()
            let done = DispatchSemaphore(value: 0)
            let producer = Thread {
                for index in 0..<64 {
                    cache["k\(index)"] = Data(count: 1 << 10)
                    progress.count.add(1, ordering: .relaxed)
                }
                done.signal()
            }
            producer.start()
            // Eight values fill the budget; the ninth waits while the store is shut.
            await gated.writeGate.arrival()
            while cache.queuedWriteBytes < 8 << 10 || progress.count.load(ordering: .relaxed) < 8 {
                await Task.yield()
            }
            for _ in 0..<1_000 { await Task.yield() }
            #expect(progress.count.load(ordering: .relaxed) == 8)
            #expect(cache.queuedWriteBytes <= 8 << 10)

            gated.writeGate.open()
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    done.wait()
                    continuation.resume()
                }
            }
            await cache.flush()
            #expect(cache.queuedWriteBytes == 0)
            #expect(try disk.keys(in: "test").count == 64, "nothing was dropped")
        }
    }

    /// A value whose type states whatever cost it likes; stored as one byte.
    struct DeclaredCost: CacheValue {
        var cost: Int
        init(cost: Int) { self.cost = cost }
        init(cacheData: Data) { cost = 0 }
        func cacheEncoded() -> Data { Data([1]) }
        var cacheCost: Int { cost }
    }

    @Test(
        "A value's cost below zero counts as nothing, and one past 2^32 − 1 as that, as memory counts them: the queue's count neither runs backwards nor traps"
    )
    func outOfRangeCosts() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let gated = HookedStore(disk)
            var configuration = Cache<String, DeclaredCost>.Configuration(name: "test")
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, DeclaredCost>(configuration: configuration)

            gated.writeGate.close()
            cache["first"] = DeclaredCost(cost: 10)
            // The writer holds the first batch; the writes below queue behind it.
            await gated.writeGate.arrival()
            cache["negative"] = DeclaredCost(cost: -1_000)
            #expect(cache.queuedWriteBytes == 10)
            // Awaited writes never wait for room: both are queued behind the first.
            let huge = Task { try await cache.set(DeclaredCost(cost: .max), for: "huge") }
            let huger = Task { try await cache.set(DeclaredCost(cost: .max), for: "huger") }
            let largest = Int(UInt32.max)
            #expect(await CacheTest.eventually { cache.queuedWriteBytes == 10 + 2 * largest })

            gated.writeGate.open()
            try await huge.value
            try await huger.value
            await cache.flush()
            #expect(cache.queuedWriteBytes == 0)
            #expect(try disk.keys(in: "test").sorted() == ["first", "huge", "huger", "negative"])
        }
    }

    @Test("A budget below one byte is refused")
    func invalidBudget() {
        var configuration = Cache<String, Data>.Configuration.memoryOnly(name: "budget")
        configuration.writeQueueByteLimit = 0
        #expect(throws: HoardError.self) { try Cache<String, Data>(configuration: configuration) }
        #expect(Cache<String, Data>.Configuration(name: "budget").writeQueueByteLimit == 64 << 20)
    }
}
