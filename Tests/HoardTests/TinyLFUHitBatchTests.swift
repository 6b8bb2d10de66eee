import Foundation
import Testing

@testable import Hoard

/// A W-TinyLFU hit only appends its slot to its shard's buffer; the shard applies
/// the buffer every `_TinyLFUPolicy.hitBatch` hits and before anything else reads or
/// changes the policy (`_MemoryShard.applyPendingHits`).
@Suite("W-TinyLFU's hits applied in batches")
struct TinyLFUHitBatchTests {
    /// A one-shard W-TinyLFU cache of `countLimit` entries, evicting one at a time.
    func cache(countLimit: Int = 1_000, clock: any CacheClock = SystemClock()) throws -> MemoryCache<Int, Int> {
        try MemoryCache<Int, Int>(
            configuration: .init(
                countLimit: countLimit, lowWaterMark: 1.0, policy: .tinyLFU, shards: 1, memoryPressure: nil),
            clock: clock)
    }

    /// The shard's buffered hits and the policy's uncounted ones, as they are (no
    /// hits applied first).
    func state(of cache: MemoryCache<Int, Int>) -> (buffered: Int, uncounted: Int) {
        cache.shards.withLock(0) { ($0.pendingHits.count, $0.tinyLFU.uncountedHits) }
    }

    @Test("A hit waits in its shard's buffer until the batch is full")
    func hitsWaitForAFullBatch() throws {
        let cache = try cache()
        cache[1] = 1
        cache[2] = 2
        let batch = _TinyLFUPolicy.hitBatch
        for request in 0..<(batch - 1) { #expect(cache[1 + request % 2] == 1 + request % 2) }
        #expect(state(of: cache) == (batch - 1, 0))
        #expect(cache.statistics.hits == batch - 1, "a buffered hit is a hit for the statistics at once")
        #expect(cache[1] == 1)
        #expect(state(of: cache) == (0, batch))
        #expect(cache.shards.withLock(0) { $0.pendingHits.count } == 0)
        // An `.lru` cache never buffers.
        let lru = try MemoryCache<Int, Int>(configuration: .init(countLimit: 10, shards: 1, memoryPressure: nil))
        lru[1] = 1
        for _ in 0..<10 { _ = lru[1] }
        #expect(lru.shards.withLock(0) { $0.pendingHits.count } == 0)
    }

    /// Operations that read or change the policy; each must apply the buffer first.
    enum Operation: String, CaseIterable, CustomTestStringConvertible {
        case insert, overwrite, remove, removeAll, purge, expire
        var testDescription: String { rawValue }
    }

    @Test("Anything that reads or changes the policy applies the buffered hits first", arguments: Operation.allCases)
    func policyChangesApplyTheBuffer(_ operation: Operation) throws {
        let clock = ManualClock()
        let cache = try cache(clock: clock)
        cache[1] = 1
        cache.set(2, for: 2, expires: .seconds(10))
        for _ in 0..<5 { #expect(cache[1] == 1) }
        #expect(state(of: cache) == (5, 0))
        switch operation {
        case .insert: cache[3] = 3
        case .overwrite: cache[2] = 20
        case .remove: #expect(cache.removeValue(for: 2) == 2)
        case .removeAll: cache.removeAll()
        case .purge: cache.purge(downToCount: 1)
        case .expire:
            clock.advance(by: 10)
            #expect(cache.removeExpired() == 1)
        }
        #expect(cache.shards.withLock(0) { $0.pendingHits.count } == 0)
        if operation == .removeAll {
            // The removed entries' hits reached the sketch, as each hit applied at once would have.
            let estimate = cache.shards.withLock(0) { shard in
                shard.tinyLFU.sketch.flush()
                return shard.tinyLFU.sketch.frequency(_HashIndex.hash(of: 1))
            }
            #expect(estimate == 5)
        } else {
            #expect(cache[1] == 1, "key 1, read five times, outlives key 2")
            let hits = cache.withAppliedHits { $0.policySlots[$0.slot(of: 1, hash: _HashIndex.hash(of: 1))!].hits }
            #expect(hits == 6)
        }
    }

    /// The keys on each of the policy's lists, head first, after applying the
    /// buffer; and the sketch's counters and the slots' uncounted hits.
    func policyState(of cache: MemoryCache<Int, Int>) -> [[Int]] {
        cache.withAppliedHits { shard in
            func keys(_ list: _LRUList) -> [Int] {
                var keys: [Int] = []
                var i = list.head
                while i >= 0 {
                    keys.append(shard.nodes[Int(i)].entry!.key)
                    i = shard.links[i].next
                }
                return keys
            }
            shard.tinyLFU.sketch.flush()
            return [
                keys(shard.tinyLFU.window), keys(shard.tinyLFU.probation), keys(shard.tinyLFU.protected),
                shard.tinyLFU.sketch.table.map { Int(truncatingIfNeeded: $0) },
                [shard.tinyLFU.uncountedHits, shard.tinyLFU.windowCapacity],
            ]
        }
    }

    @Test("A cache that buffers hits keeps what one applying every hit at once keeps", arguments: [1, 2, 3])
    func batchingChangesNothingKept(seed: UInt64) throws {
        let clock = ManualClock()
        let batched = try cache(countLimit: 200, clock: clock)
        let immediate = try cache(countLimit: 200, clock: clock)
        var random = SplitMix64(seed: seed)
        for step in 0..<40_000 {
            // Skewed keys: the square of a uniform draw favours small keys.
            let draw = Double(random.next() % 1_000_000) / 1_000_000
            let key = Int(draw * draw * 1_000)
            let roll = random.next() % 100
            var answers: [Int?] = []
            for cache in [batched, immediate] {
                switch roll {
                case 0..<75: answers.append(cache[key])
                case 75..<93: cache.set(step, for: key, expires: roll == 92 ? .seconds(5) : nil)
                case 93..<98: answers.append(cache.removeValue(for: key))
                case 98: answers.append(cache.removeExpired())
                default: cache.purge(downToCount: 150)
                }
            }
            if answers.count == 2 { #expect(answers[0] == answers[1], "step \(step)") }
            if roll == 98 { clock.advance(by: 1) }
            // The reference applies every hit at once.
            immediate.withAppliedHits { _ in }
            if step % 1_000 == 999 {
                #expect(policyState(of: batched) == policyState(of: immediate), "step \(step)")
            }
            #expect(batched.contains(key) == immediate.contains(key), "step \(step)")
        }
        #expect(batched.count == immediate.count)
        #expect(batched.statistics == immediate.statistics)
    }
}
