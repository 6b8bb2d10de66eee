import Foundation
import Hoard
import Testing

@Suite("Cache statistics and configuration checks", .timeLimit(.minutes(3)))
struct CacheStatisticsTests {
    @Test("Memory hits and misses, fetches, overall misses and negative hits count once per read")
    func memoryAndFetches() async throws {
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.negativeCaching = 60
        let cache = try Cache<String, Int>(configuration: configuration) { key in key == "none" ? nil : 1 }
        #expect(try await cache.value(for: "a") == 1)  // memory miss, miss, fetch
        #expect(try await cache.value(for: "a") == 1)  // memory hit
        #expect(try await cache.value(for: "none") == nil)  // memory miss, miss, fetch (found nothing)
        #expect(try await cache.value(for: "none") == nil)  // negative hit
        #expect(cache["none"] == nil)  // negative hit, synchronously
        let statistics = cache.statistics
        #expect(statistics.memory.hits == 1)
        #expect(statistics.memory.misses == 2)
        #expect(statistics.misses == 2)
        #expect(statistics.fetches == 2)
        #expect(statistics.negativeHits == 2)
        #expect(statistics.fetchFailures == 0)
        #expect(statistics.errors == 0)
        cache.resetStatistics()
        #expect(cache.statistics == CacheStatistics())
    }

    @Test("Concurrent readers of one missing key count one miss and one fetch; the others are coalesced waits")
    func coalescedWaits() async throws {
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            await probe.enter()
            return 5
        }
        let readers = (0..<3).map { _ in Task { try await cache.value(for: "k") } }
        #expect(await CacheTest.eventually { cache.statistics.coalescedWaits == 2 })
        probe.open()
        for reader in readers { #expect(try await reader.value == 5) }
        let statistics = cache.statistics
        #expect(statistics.fetches == 1)
        #expect(statistics.misses == 1)
        #expect(statistics.coalescedWaits == 2)
        #expect(statistics.memory.misses == 3, "each reader looked in memory")
    }

    @Test("A thrown fetch counts as a fetch failure and an error")
    func fetchFailures() async throws {
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            throw FetchFailed(attempt: 1)
        }
        await #expect(throws: FetchFailed.self) { try await cache.value(for: "k") }
        #expect(cache.statistics.fetchFailures == 1)
        #expect(cache.statistics.errors == 1)
        #expect(cache.statistics.fetches == 1)
    }

    @Test("Local hits, misses and promotions; remote hits, misses and promotions into the local stores")
    func tiers() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("d".utf8), for: "onDisk", in: "test", storedAt: Date(), expiresAt: nil)
            let remote = InMemoryRemoteStore()
            try await remote.set(Data("r".utf8), for: "remote", in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)
            #expect(try await cache.value(for: "onDisk") == "d")  // memory miss, local hit
            #expect(try await cache.value(for: "remote") == "r")  // memory miss, local miss, remote hit
            #expect(try await cache.value(for: "nowhere") == nil)  // misses everywhere, no fetch closure
            #expect(cache["gone"] == nil)  // synchronous: memory and local misses, no remote lookup
            await cache.flush()
            let statistics = cache.statistics
            #expect(statistics.memory.misses == 4)
            #expect(statistics.memory.promotions == 2)
            #expect(statistics.local.hits == 1)
            #expect(statistics.local.misses == 3)
            #expect(statistics.local.promotions == 1)
            #expect(statistics.remote.hits == 1)
            #expect(statistics.remote.misses == 1)
            #expect(statistics.remote.promotions == 0)
            #expect(statistics.misses == 2)
        }
    }

    @Test("Failed store reads and writes count as read and write failures")
    func storeFailures() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let gated = GatedStore(try DiskStore(directory: directory))
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, String>(configuration: configuration)
            // A failure of the store as a whole: no removal of the older value follows.
            gated.fail(with: HoardError(.ioFailed, "disk failed"))
            await #expect(throws: HoardError.self) { try await cache.set("v", for: "k") }
            cache["k2"] = "w"
            await cache.flush()
            #expect(cache.statistics.writeFailures == 2)
            #expect(cache.cachedValue(for: "missing") == nil)
            #expect(cache.statistics.readFailures == 1)
            #expect(cache.statistics.errors == 3)
        }
    }

    @Test("Events and eviction reasons print without module paths")
    func descriptions() {
        #expect("\(CacheEvent<String>.evicted("k", reason: .countLimit))" == "evicted(k, countLimit)")
        #expect(String(describing: EvictionReason.costLimit) == "costLimit")
        #expect("\(CacheEvent<Int>.promoted(3, from: .local(0)))" == "promoted(3, from: local store 0)")
        #expect("\(CacheEvent<Int>.invalidated(nil))" == "invalidated(all)")
    }

    @Test("A memory cost limit with no way to cost the value is refused at init, naming the fix")
    func costLimitWithoutCost() throws {
        struct Plain: Codable, Sendable { var x: Int }
        var configuration = Cache<String, Plain>.Configuration.memoryOnly(name: "plain")
        configuration.memory = .init(costLimit: 1_000)
        let error = try #require(throws: HoardError.self) { try Cache<String, Plain>(configuration: configuration) }
        #expect(error.code == .invalidConfiguration)
        #expect("\(error)".contains("memory.cost"))
        configuration.memory.cost = { $0.x }
        _ = try Cache<String, Plain>(configuration: configuration)
        #expect(throws: HoardError.self) { try MemoryCache<String, Plain>(configuration: .init(costLimit: 10)) }
    }

    @Test("A value type without a codec works without stores, and with stores is refused before anything is created")
    func noCodec() async throws {
        struct Opaque: Sendable { var x: Int }
        let memoryOnly = try Cache<String, Opaque>(configuration: .memoryOnly(name: "opaque"))
        memoryOnly["a"] = Opaque(x: 1)
        #expect(memoryOnly["a"]?.x == 1)

        try await DiskTest.withTemporaryDirectory { directory in
            let storeDirectory = directory.appendingPathComponent("never-created")
            var configuration = Cache<String, Opaque>.Configuration.memoryOnly(name: "opaque")
            configuration.localStores = .stores([])
            configuration.remoteStores = [InMemoryRemoteStore()]
            let error = try #require(throws: HoardError.self) {
                try Cache<String, Opaque>(configuration: configuration)
            }
            #expect(error.code == .noCodec)
            #expect(!FileManager.default.fileExists(atPath: storeDirectory.path))

            var withCodec = Cache<String, Opaque>.Configuration(
                name: "opaque",
                codec: ValueCodec(
                    encode: { Data(String($0.x).utf8) },
                    decode: { Opaque(x: Int(String(decoding: $0, as: UTF8.self)) ?? 0) }))
            withCodec.localStores = .stores([try DiskStore(directory: storeDirectory)])
            let cache = try Cache<String, Opaque>(configuration: withCodec)
            cache["a"] = Opaque(x: 7)
            await cache.flush()
            #expect(try DiskStore(directory: storeDirectory).entry(for: "a", in: "opaque")?.data == Data("7".utf8))
        }
    }
}
