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

    @Test("A cost-weighted cache, and one that never evicts, keep a fixed window")
    func fixedWindows() throws {
        let costs = try MemoryCache<Int, Data>(
            configuration: .init(costLimit: 1_000, policy: .tinyLFU, memoryPressure: nil))
        #expect(costs.shards.withLock(0) { !$0.tinyLFU.history.isEnabled })
        let unlimited = try MemoryCache<Int, Int>(configuration: .init(policy: .tinyLFU, memoryPressure: nil))
        #expect(unlimited.shards.withLock(0) { !$0.tinyLFU.history.isEnabled && $0.tinyLFU.history.rings.isEmpty })
    }
}
