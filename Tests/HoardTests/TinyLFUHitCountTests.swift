import Foundation
import Testing

@testable import Hoard

/// W-TinyLFU counts a hit on the entry's own slot and has the sketch count it later
/// (`_TinyLFUPolicy`): when the entry is judged in a duel, when it leaves, and for
/// every slot before the sketch's sample could be complete.
@Suite("W-TinyLFU's hits counted on their slots")
struct TinyLFUHitCountTests {
    /// A one-shard W-TinyLFU cache of `countLimit` entries, evicting one at a time.
    func cache(countLimit: Int = 100) throws -> MemoryCache<Int, Int> {
        try MemoryCache<Int, Int>(
            configuration: .init(
                countLimit: countLimit, lowWaterMark: 1.0, policy: .tinyLFU, shards: 1, memoryPressure: nil))
    }

    /// The sketch's estimate for `key`, after counting what it has buffered.
    func frequency(of key: Int, in cache: MemoryCache<Int, Int>) -> Int {
        cache.withAppliedHits { shard in
            shard.tinyLFU.sketch.flush()
            return shard.tinyLFU.sketch.frequency(_HashIndex.hash(of: key))
        }
    }

    /// Hits counted on slots and not yet in the sketch.
    func uncountedHits(in cache: MemoryCache<Int, Int>) -> Int {
        cache.withAppliedHits { $0.tinyLFU.uncountedHits }
    }

    @Test("A hit stays on its slot, and the sketch counts it when the entry leaves")
    func countedWhenTheEntryLeaves() throws {
        let cache = try cache()
        cache[1] = 1
        for _ in 0..<5 { #expect(cache[1] == 1) }
        #expect(uncountedHits(in: cache) == 5)
        #expect(cache.withAppliedHits { $0.policySlots[0].hits } == 5)
        #expect(frequency(of: 1, in: cache) == 0, "the insertion only set the doorkeeper")
        #expect(cache.removeValue(for: 1) == 1)
        #expect(uncountedHits(in: cache) == 0)
        #expect(frequency(of: 1, in: cache) == 5, "the key's history outlives the entry")
    }

    @Test("A duel counts the candidate's uncounted hits")
    func duelCountsHits() throws {
        let cache = try cache()
        #expect(cache.withAppliedHits { $0.tinyLFU.windowCapacity } == 1)
        // Fill the cache: every key after the first leaves the one-entry window for
        // probation, and none is read, so all estimate 0.
        for key in 0..<100 { cache[key] = key }
        cache[1_000] = 1_000
        for _ in 0..<3 { #expect(cache[1_000] == 1_000) }
        // The next insertion makes 1,000 a candidate; with its three hits it beats
        // probation's oldest entry, key 0, which estimates 0. Uncounted, it would
        // estimate 0 too and lose.
        cache[1_001] = 1_001
        #expect(cache.contains(1_000))
        #expect(!cache.contains(0))
        #expect(frequency(of: 1_000, in: cache) == 3)
    }

    @Test("A duel counts the victim's uncounted hits")
    func duelCountsVictimHits() throws {
        let cache = try cache()
        for key in 0..<100 { cache[key] = key }
        // Key 0 is probation's oldest entry. Hits reach a probation entry's slot
        // uncounted only when it was hit in the protected segment and then demoted;
        // the test puts five there directly.
        cache.withAppliedHits { shard in
            let slot = shard.slot(of: 0, hash: _HashIndex.hash(of: 0))!
            #expect(shard.policySlots[slot].queue == .probation)
            #expect(shard.tinyLFU.probation.tail == slot)
            shard.policySlots[slot].hits = 5
            shard.tinyLFU.uncountedHits += 5
        }
        cache[1_000] = 1_000
        for _ in 0..<3 { #expect(cache[1_000] == 1_000) }
        // 1,000's three hits lose to key 0's five, counted only for the duel.
        cache[1_001] = 1_001
        #expect(cache.contains(0))
        #expect(!cache.contains(1_000))
        #expect(uncountedHits(in: cache) == 0)
    }

    @Test("Every slot's hits are counted when the sketch's sample could otherwise be complete")
    func countedBeforeTheSampleCompletes() throws {
        let cache = try cache()
        for key in 0..<10 { cache[key] = key }
        // A 100-entry sketch resets after 1,000 additions; the insertions were ten
        // (counted here rather than at the 32nd, as the buffer would).
        let before = cache.withAppliedHits { shard in
            shard.tinyLFU.sketch.flush()
            shard.tinyLFU.refreshCounting(slots: &shard.policySlots)
            return shard.tinyLFU.sketch.additionsBeforeReset
        }
        #expect(before == 990)
        // Ten keys in turn, so that no slot reaches `_PolicySlot.maxHits`.
        for request in 0..<989 { _ = cache[request % 10] }
        #expect(uncountedHits(in: cache) == 989)
        #expect(frequency(of: 0, in: cache) == 0)
        _ = cache[9]
        #expect(uncountedHits(in: cache) == 0)
        #expect(frequency(of: 0, in: cache) == 15, "the counters fill at 15")
    }

    @Test("With the sample nearly complete, hits are still counted only every eighth of the capacity")
    func countedAtMostEveryEighth() throws {
        let cache = try cache(countLimit: 1_000)
        cache[1] = 1
        let minimum = cache.withAppliedHits { shard in
            shard.tinyLFU.sketch.additions = shard.tinyLFU.sketch.sampleSize - 1
            shard.tinyLFU.refreshCounting(slots: &shard.policySlots)
            return shard.tinyLFU.minimumHitsPerCount
        }
        #expect(minimum == 125)
        for _ in 0..<124 { _ = cache[1] }
        #expect(uncountedHits(in: cache) == 124)
        _ = cache[1]
        #expect(uncountedHits(in: cache) == 0)
    }

    @Test("With more slots than capacity, hits are counted at most every eighth of the slots")
    func countedAtMostEveryEighthOfTheSlots() throws {
        // Entries that cost nothing never fill a cost limit: 2,000 slots under a
        // capacity of 100, whose eighth (12) would have every slot visited every 12
        // hits once the sample is nearly complete.
        let cache = try MemoryCache<Int, Data>(
            configuration: .init(costLimit: 100, lowWaterMark: 1.0, policy: .tinyLFU, shards: 1, memoryPressure: nil))
        for key in 0..<2_000 { cache[key] = Data() }
        #expect(cache.count == 2_000)
        cache.withAppliedHits { shard in
            shard.tinyLFU.sketch.flush()
            shard.tinyLFU.sketch.additions = shard.tinyLFU.sketch.sampleSize - 1
            shard.tinyLFU.refreshCounting(slots: &shard.policySlots)
        }
        func uncounted() -> Int { cache.withAppliedHits { $0.tinyLFU.uncountedHits } }
        for request in 0..<249 { _ = cache[request] }
        #expect(uncounted() == 249)
        _ = cache[249]
        #expect(uncounted() == 0, "a pass at 2,000 / 8 uncounted hits")
    }

    @Test("A reset that an insertion brings clears the marks, with nothing evicted")
    func insertionResetClearsMarks() throws {
        let cache = try cache(countLimit: 10_000)
        cache[1] = 1
        for _ in 0..<254 { _ = cache[1] }
        #expect(cache.withAppliedHits { $0.policySlots[0].hits } == _PolicySlot.full)
        cache.withAppliedHits { shard in
            shard.tinyLFU.sketch.additions = shard.tinyLFU.sketch.sampleSize - 1
            shard.tinyLFU.refreshCounting(slots: &shard.policySlots)
        }
        // The 32nd insertion counts the buffered ones, and the first completes the
        // sample: the sketch resets inside an insertion that evicts nothing.
        for key in 2...40 { cache[key] = key }
        #expect(cache.count == 40)
        #expect(cache.withAppliedHits { $0.tinyLFU.sketch.resets } == 1)
        #expect(cache.withAppliedHits { $0.policySlots[0].hits } == 0)
        _ = cache[1]
        #expect(uncountedHits(in: cache) == 1)
    }

    @Test("A cache that never evicts does not count hits")
    func unlimitedCachesDoNotCount() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(policy: .tinyLFU, shards: 1, memoryPressure: nil))
        cache[1] = 1
        for _ in 0..<10 { _ = cache[1] }
        #expect(uncountedHits(in: cache) == 0)
        #expect(cache.withAppliedHits { $0.policySlots[0].hits } == 0)
    }

    @Test("A key whose counters are full has its hits ignored until the sketch's next reset")
    func fullKeysAreMarkedUntilTheReset() throws {
        let cache = try cache(countLimit: 10_000)
        cache[1] = 1
        func slot() -> UInt8 { cache.withAppliedHits { $0.policySlots[0].hits } }
        for _ in 0..<253 { _ = cache[1] }
        #expect(slot() == 253)
        #expect(uncountedHits(in: cache) == 253)
        // The 254th hit hands the slot's hits to the sketch, whose counters for
        // the key fill at 15: the slot is marked, and later hits change nothing.
        _ = cache[1]
        #expect(slot() == _PolicySlot.full)
        #expect(uncountedHits(in: cache) == 0)
        #expect(frequency(of: 1, in: cache) == 15)
        for _ in 0..<10 { _ = cache[1] }
        #expect(slot() == _PolicySlot.full)
        #expect(uncountedHits(in: cache) == 0)
        // A reset (which the policy follows with `refreshCounting`) halves the
        // counters: the mark is cleared, and the next hit counts again.
        cache.withAppliedHits { shard in
            shard.tinyLFU.sketch.reset()
            shard.tinyLFU.refreshCounting(slots: &shard.policySlots)
        }
        _ = cache[1]
        #expect(slot() == 1)
        #expect(uncountedHits(in: cache) == 1)
    }
}
