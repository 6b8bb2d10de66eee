import Foundation
import Testing

@testable import Hoard

@Suite("W-TinyLFU's adaptive window")
struct AdaptiveWindowTests {
    /// The window capacity of a one-shard cache's policy.
    func window(of cache: MemoryCache<Int, Int>) -> Int {
        cache.shards.withLock(0) { $0.tinyLFU.windowCapacity }
    }

    /// Independent requests, the key log-uniform over 1...100,000: popularity is
    /// skewed and never changes, so recency adds nothing to frequency.
    static func frequencyWorkload(requests: Int) -> [Int] {
        var state: UInt64 = 7
        return (0..<requests).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return 1_000_000 + Int(pow(100_000, Double(state >> 11) / Double(1 << 53)))
        }
    }

    /// With the window allowed up to 80% of the capacity, it reached the bound in
    /// the recency phase and stayed there through the frequency phase in 4 of 6
    /// runs (each run hashes with another seed); with half, it came back below 5
    /// entries in 6 of 6.
    @Test("Grows the window when recency is the signal and shrinks it again when frequency is")
    func followsTheWorkload() throws {
        let cache = try MemoryCache<Int, Int>(
            configuration: .init(countLimit: 1_000, lowWaterMark: 1.0, policy: .tinyLFU, memoryPressure: nil))
        #expect(window(of: cache) == 10)
        for key in TinyLFUTests.recencyWorkload(requests: 200_000) where cache[key] == nil { cache[key] = key }
        let grown = window(of: cache)
        for key in Self.frequencyWorkload(requests: 1_000_000) where cache[key] == nil { cache[key] = key }
        let shrunk = window(of: cache)
        #expect(grown > 400, "window after the recency phase")
        #expect(grown <= 500, "the window takes at most half the capacity")
        #expect(shrunk < 10, "window after the frequency phase, below where it started")
        #expect(cache.count == 1_000)
    }

    /// Fills a cache of `countLimit` entries whose window holds one entry, then asks
    /// again for two keys it evicted as candidates: each new key pushes the one
    /// before it out of the window, and it loses its duel with the oldest entry (all
    /// seen once), so `countLimit - 1` and `countLimit` leave the cache remembered as
    /// leaving the window. Returns the window after the first and the second miss.
    func windowAfterTwoWindowMisses(countLimit: Int) throws -> (Int, Int) {
        let cache = try MemoryCache<Int, Int>(
            configuration: .init(countLimit: countLimit, lowWaterMark: 1.0, policy: .tinyLFU, memoryPressure: nil))
        cache.shards.withLock(0) { $0.tinyLFU.resizeWindow(by: 1 - $0.tinyLFU.windowCapacity) }
        for key in 0..<(countLimit + 2) { cache[key] = key }
        #expect(cache[countLimit - 1] == nil && cache[countLimit] == nil, "the candidates lost their duels")
        #expect(cache.shards.withLock(0) { $0.tinyLFU.history.capacity } == 16)
        cache[countLimit - 1] = countLimit - 1
        let first = window(of: cache)
        cache[countLimit] = countLimit
        return (first, window(of: cache))
    }

    @Test("Below 1% of the capacity the window moves once one side of the history is two misses ahead")
    func netsMissesBelowOnePercent() throws {
        let (first, second) = try windowAfterTwoWindowMisses(countLimit: 1_000)
        #expect(first == 1, "one remembered miss does not move a window below 1%")
        #expect(second == 2, "a second one on the same side grows it")
    }

    @Test("At 1% of the capacity or more every remembered miss moves the window")
    func movesOnEveryMissFromOnePercent() throws {
        let (first, second) = try windowAfterTwoWindowMisses(countLimit: 100)
        #expect(first == 2)
        #expect(second == 3)
    }

    @Test("A cost-weighted cache, and one that never evicts, keep a fixed window")
    func fixedWindows() throws {
        let costs = try MemoryCache<Int, Data>(
            configuration: .init(costLimit: 1_000, policy: .tinyLFU, memoryPressure: nil))
        #expect(costs.shards.withLock(0) { !$0.tinyLFU.history.isEnabled })
        let unlimited = try MemoryCache<Int, Int>(configuration: .init(policy: .tinyLFU, memoryPressure: nil))
        #expect(unlimited.shards.withLock(0) { !$0.tinyLFU.history.isEnabled && $0.tinyLFU.history.rings.isEmpty })
    }
}
