import Foundation
import Testing

@testable import Hoard

@Suite("MemoryCache basics and limits")
struct MemoryCacheTests {
    @Test("Get, set, overwrite, subscript, contains, remove, removeAll")
    func basicOperations() throws {
        let cache = try MemoryCache<String, Int>()
        #expect(cache["a"] == nil)
        cache["a"] = 1
        cache.set(2, for: "b")
        #expect(cache["a"] == 1)
        #expect(cache.value(for: "b") == 2)
        cache["a"] = 10
        #expect(cache["a"] == 10)
        #expect(cache.count == 2)
        #expect(cache.contains("a"))
        #expect(!cache.contains("zzz"))

        #expect(cache.removeValue(for: "a") == 10)
        #expect(cache.removeValue(for: "a") == nil)
        cache["b"] = nil
        #expect(cache["b"] == nil)
        #expect(cache.count == 0)

        for i in 0..<10 { cache["k\(i)"] = i }
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache["k3"] == nil)
        cache["again"] = 1
        #expect(cache["again"] == 1)
    }

    @Test("Exact LRU: the untouched oldest entries go first")
    func exactLRUOrder() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 10, lowWaterMark: 1.0))
        for i in 0..<10 { cache[i] = i }
        // Touch 0, 2, 4, 6, 8: the odd keys are now the least recently used, 1 oldest.
        for i in stride(from: 0, to: 10, by: 2) { _ = cache[i] }
        for i in 10..<15 { cache[i] = i }
        #expect(cache.count == 10)
        for i in [1, 3, 5, 7, 9] { #expect(cache[i] == nil, "key \(i) should have been evicted") }
        for i in [0, 2, 4, 6, 8, 10, 11, 12, 13, 14] { #expect(cache[i] == i, "key \(i) should remain") }
        // Writes count as use too: overwrite 0, then two more inserts evict 2 then 4.
        cache[0] = 100
        cache[20] = 20
        cache[21] = 21
        #expect(cache[2] == nil)
        #expect(cache[4] == nil)
        #expect(cache[0] == 100)
    }

    @Test("Over the count limit the cache evicts down to the 75% low-water mark")
    func countLimitPurgesToLowWaterMark() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 100))
        for i in 0..<100 { cache[i] = i }
        #expect(cache.count == 100)
        cache[100] = 100
        #expect(cache.count == 75)
        #expect(cache[100] == 100)
        #expect(cache[0] == nil)
        #expect(cache[25] == nil)
        #expect(cache[26] == 26)
        #expect(cache.statistics.evictions == 26)
    }

    @Test("A cost-limit purge lands at the 75% mark")
    func costLimitPurge() throws {
        let cache = try MemoryCache<String, Data>(configuration: .init(costLimit: 1000))
        for i in 0..<10 { cache["k\(i)"] = Data(count: 100) }
        #expect(cache.totalCost == 1000)
        cache["big"] = Data(count: 100)
        #expect(cache.totalCost <= 750)
        #expect(cache.totalCost == 700)
        #expect(cache["big"] != nil)
        #expect(cache["k0"] == nil)
        #expect(cache["k9"] != nil)
    }

    @Test("A cost closure given at init decides the cost")
    func costClosure() throws {
        let cache = try MemoryCache<String, [Int]>(
            configuration: .init(costLimit: 100, lowWaterMark: 1.0, cost: { $0.count * 10 }))
        cache["a"] = [1, 2, 3]
        cache["b"] = [1, 2, 3, 4]
        #expect(cache.totalCost == 70)
        cache["c"] = [1, 2, 3, 4]
        #expect(cache.totalCost == 80)
        #expect(cache["a"] == nil)
        #expect(cache["b"] == [1, 2, 3, 4])
    }

    @Test("An entry whose own cost exceeds the limit is not stored, and the caller can tell")
    func oversizedEntryIsRejected() throws {
        let cache = try MemoryCache<String, String>(configuration: .init(costLimit: 10))
        #expect(cache.set("small", for: "k"))
        #expect(cache.set("far too long for the limit", for: "k") == false)
        // The older value is gone too: a read never returns what the caller replaced.
        #expect(cache["k"] == nil)
        #expect(cache.set("0123456789", for: "exact"))
        #expect(cache["exact"] == "0123456789")
    }

    @Test("purge(downTo:) and purge(downToCount:) evict in policy order on demand")
    func purgeOnDemand() throws {
        let cache = try MemoryCache<Int, Data>()
        for i in 0..<10 { cache[i] = Data(count: 10) }
        _ = cache[0]
        cache.purge(downTo: 50)
        #expect(cache.totalCost == 50)
        #expect(cache[0] != nil)
        #expect(cache[1] == nil)
        cache.purge(downToCount: 2)
        #expect(cache.count == 2)
        #expect(cache[0] != nil)
        cache.purge(downToCount: 0)
        #expect(cache.count == 0)
    }

    @Test("A sharded purge keeps as many entries as its target allows, however the keys fall into shards")
    func shardedPurgeKeepsTarget() throws {
        // Given 12 entries spread by hash over 8 shards (so some shards hold none and
        // others several)
        let cache = try MemoryCache<Int, Int>(configuration: .init(shards: 8, memoryPressure: nil))
        for i in 0..<12 { cache[i] = i }

        // When it is purged down to 10, then to 3, entries
        cache.purge(downToCount: 10)

        // Then exactly that many remain each time, not a multiple of the shard count
        #expect(cache.count == 10)
        #expect(cache.statistics.evictions == 2)
        cache.purge(downToCount: 3)
        #expect(cache.count == 3)
        cache.purge(downToCount: 20)
        #expect(cache.count == 3)
    }

    @Test("A sharded purge down to a cost keeps as much cost as its target allows")
    func shardedCostPurgeKeepsTarget() throws {
        // Given 200 entries of cost 10 spread over 8 shards
        let cache = try MemoryCache<Int, Data>(configuration: .init(shards: 8, memoryPressure: nil))
        for i in 0..<200 { cache[i] = Data(count: 10) }

        // When it is purged down to a cost of 100, which no share of 100 / 8 divides
        cache.purge(downTo: 100)

        // Then ten entries remain, not one per shard
        #expect(cache.totalCost == 100)
        #expect(cache.count == 10)
    }

    @Test(
        "A purge's shares are as even as the shards allow and add up to the target or all there is",
        arguments: [
            (10, [0, 3, 0, 1, 5, 2, 0, 1], [0, 3, 0, 1, 3, 2, 0, 1]),
            (10, [4, 4, 4, 4], [3, 3, 2, 2]),
            (20, [4, 4, 4, 4], [4, 4, 4, 4]),
            (0, [4, 1], [0, 0]),
            (7, [100, 1, 1], [5, 1, 1]),
        ])
    func purgeShares(total: Int, held: [Int], expected: [Int]) {
        #expect(MemoryCache<Int, Int>.shares(of: total, among: held) == expected)
    }

    @Test("Low-water mark of 100% evicts one entry at a time")
    func oneAtATime() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 5, lowWaterMark: 1.0))
        for i in 0..<50 { cache[i] = i }
        #expect(cache.count == 5)
        #expect(cache.statistics.evictions == 45)
        #expect((45..<50).allSatisfy { cache[$0] == $0 })
    }

    @Test("Statistics count hits, misses, evictions and expirations")
    func statistics() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 2, lowWaterMark: 1.0), clock: clock)
        cache[1] = 1
        _ = cache[1]
        _ = cache[2]
        cache.set(2, for: 2, expires: .seconds(1))
        cache[3] = 3
        clock.advance(by: 2)
        _ = cache[2]
        let stats = cache.statistics
        #expect(stats.hits == 1)
        #expect(stats.misses == 2)
        #expect(stats.evictions == 1)
        #expect(stats.expirations == 1)
        #expect(stats.hitRatio == 1.0 / 3.0)
        cache.resetStatistics()
        #expect(cache.statistics == MemoryCacheStatistics())
    }

    @Test(
        "Out-of-range configuration is a clear thrown error",
        arguments: [
            MemoryCache<Int, Int>.Configuration(countLimit: 0),
            .init(countLimit: -5),
            .init(costLimit: 0),
            .init(lowWaterMark: 0),
            .init(lowWaterMark: 1.5),
            .init(lowWaterMark: .nan),
            .init(shards: 0),
            .init(countLimit: 4, shards: 8),
        ])
    func invalidConfiguration(configuration: MemoryCache<Int, Int>.Configuration) {
        #expect {
            try MemoryCache<Int, Int>(configuration: configuration)
        } throws: { error in
            (error as? HoardError)?.code == .invalidConfiguration
        }
    }

    @Test("Limits of Int.max with a low-water mark of 100% are accepted")
    func largestLimitsFullLowWaterMark() async {
        // The low-water mark, computed in floating point, is 2^63 for Int.max.
        await #expect(processExitsWith: .success) {
            let cache = try? MemoryCache<Int, Data>(
                configuration: .init(countLimit: .max, costLimit: .max, lowWaterMark: 1.0, memoryPressure: nil))
            cache?[1] = Data(count: 10)
            precondition(cache?.count == 1 && cache?.totalCost == 10)
        }
    }

    @Test("A cost above 2^32 − 1 counts as 2^32 − 1, and one above the cost limit is still not stored")
    func largestCost() throws {
        let cache = try MemoryCache<Int, Int>(
            configuration: .init(costLimit: 1 << 40, lowWaterMark: 1.0, cost: { $0 }, memoryPressure: nil))
        #expect(!cache.set(1 << 41, for: 1))
        #expect(cache.set(1 << 35, for: 2))
        #expect(cache.set(Int.max, for: 3) == false)
        #expect(cache.totalCost == Int(UInt32.max))
        cache[2] = 1 << 33
        #expect(cache.totalCost == Int(UInt32.max))
        cache[2] = 5
        #expect(cache.totalCost == 5)
    }

    @Test("Costs without a cost limit add up without overflowing")
    func largestCostsWithoutLimit() async {
        await #expect(processExitsWith: .success) {
            let cache = try? MemoryCache<Int, Int>(configuration: .init(cost: { _ in .max }, memoryPressure: nil))
            cache?[1] = 1
            cache?[2] = 2
            precondition(cache?.count == 2 && cache?.totalCost == 2 * Int(UInt32.max))
        }
    }

    @Test("Sharded caches keep each shard's share of the limits")
    func shardedLimits() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 800, lowWaterMark: 1.0, shards: 8))
        for i in 0..<10_000 { cache[i] = i }
        #expect(cache.count <= 800)
        #expect(cache.count > 700)
        for i in 9_990..<10_000 { #expect(cache[i] == i) }
    }

    @Test("The default shard count is 16 only for a cache limited by count alone to 65,536 entries or more")
    func defaultShards() throws {
        typealias Configuration = MemoryCache<Int, Data>.Configuration
        #expect(Configuration().shards == 1)
        #expect(Configuration(countLimit: 65_535).shards == 1)
        #expect(Configuration(countLimit: 65_536).shards == 16)
        #expect(Configuration(countLimit: 1_000_000, policy: .tinyLFU).shards == 16)
        #expect(Configuration(countLimit: 1_000_000, costLimit: 1 << 30).shards == 1)
        #expect(Configuration(countLimit: 1_000_000, shards: 1).shards == 1)
        #expect(Configuration(countLimit: 10, shards: 4).shards == 4)
        // The default follows limits set after the configuration was made.
        var configuration = Configuration()
        configuration.countLimit = 100_000
        #expect(configuration.shards == 16)
        configuration.shards = 2
        configuration.countLimit = 10
        #expect(configuration.shards == 2)
    }

    @Test("A large cache on the default shards keeps its count limit and its newest entries")
    func defaultShardedLimits() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 65_536, lowWaterMark: 1.0))
        for i in 0..<80_000 { cache[i] = i }
        #expect(cache.count <= 65_536)
        #expect(cache.count > 60_000)
        for i in 79_900..<80_000 { #expect(cache[i] == i) }
    }

    @Test("Keys whose hashes collide are stored, found and removed like any others", arguments: [1, 4])
    func collidingHashes(shards: Int) throws {
        // Given a key type with only eight distinct hashes, so that lookups probe
        // long runs of entries and removals shift them back
        let cache = try MemoryCache<CollidingKey, Int>(configuration: .init(shards: shards))
        var model: [CollidingKey: Int] = [:]
        var rng = SplitMix64(seed: 7)

        // When keys are written, overwritten, removed and read at random
        for step in 0..<20_000 {
            let key = CollidingKey(id: Int(rng.next() % 300))
            switch rng.next() % 4 {
            case 0, 1:
                cache[key] = step
                model[key] = step
            case 2:
                #expect(cache.removeValue(for: key) == model.removeValue(forKey: key))
            default:
                #expect(cache[key] == model[key])
            }
        }

        // Then the cache holds exactly what a dictionary would
        #expect(cache.count == model.count)
        for id in 0..<300 {
            let key = CollidingKey(id: id)
            #expect(cache[key] == model[key], "key \(id)")
        }
    }
}

/// A key whose hash takes only eight values.
struct CollidingKey: Hashable, Sendable {
    var id: Int

    func hash(into hasher: inout Hasher) {
        hasher.combine(id % 8)
    }
}
