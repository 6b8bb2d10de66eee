import Testing

@testable import Hoard

@Suite("Frequency sketch")
struct FrequencySketchTests {
    /// A deterministic stream of hashes with a skewed distribution: low numbers often,
    /// high numbers rarely, spread by the sketch's own mixer.
    static func stream(count: Int) -> [UInt64] {
        var state: UInt64 = 7
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let rank = Int((state >> 33) % 4_096) / (Int((state >> 20) % 64) + 1)
            return _FrequencySketch.spread(rank)
        }
    }

    @Test("Recorded occurrences, counted in batches, give the estimates of counting each at once")
    func batchedCountingMatchesImmediate() {
        // 1,000 entries: resets every 10,000 additions, so the stream crosses several.
        var immediate = _FrequencySketch(capacity: 1_000)
        var batched = _FrequencySketch(capacity: 1_000)
        let hashes = Self.stream(count: 50_003)
        for (n, hash) in hashes.enumerated() {
            immediate.increment(hash)
            batched.record(hash)
            if n % 997 == 0 {
                // Reading an estimate requires flushing first, as W-TinyLFU's duel does.
                batched.flush()
                #expect(batched.frequency(hash) == immediate.frequency(hash))
            }
        }
        batched.flush()
        #expect(batched.pendingCount == 0)
        #expect(batched.table == immediate.table)
        #expect(batched.doorkeeper == immediate.doorkeeper)
        #expect(batched.additions == immediate.additions)
        #expect(Set(hashes.prefix(64)).contains { immediate.frequency($0) > 0 })
    }

    @Test("Counting an occurrence many times at once gives the tables, additions and resets of counting each in turn")
    func repeatedIncrementMatchesOneAtATime() {
        // 100 entries: resets every 1,000 additions, so runs of up to 40 occurrences
        // often straddle one, and keys that saturate stop adding.
        var oneAtATime = _FrequencySketch(capacity: 100)
        var repeated = _FrequencySketch(capacity: 100)
        var state: UInt64 = 11
        var stoppedAtFull = 0
        for _ in 0..<5_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let hash = _FrequencySketch.spread(Int((state >> 33) % 300))
            let times = Int((state >> 20) % 41)
            var expected = true
            for _ in 0..<times where !oneAtATime.increment(hash) {
                expected = false
                break
            }
            let counted = repeated.increment(hash, times: times)
            #expect(counted == expected)
            if !counted { stoppedAtFull += 1 }
            #expect(repeated.additions == oneAtATime.additions)
            #expect(repeated.resets == oneAtATime.resets)
        }
        #expect(repeated.table == oneAtATime.table)
        #expect(repeated.doorkeeper == oneAtATime.doorkeeper)
        #expect(repeated.resets > 10)
        #expect(stoppedAtFull > 0)
    }

    @Test("A capacity above the largest is sized as the largest")
    func capacityIsCapped() {
        let largest = _FrequencySketch(capacity: 1 << 20)
        #expect(largest.table.count == 1 << 20)
        #expect(largest.doorkeeper.count == 1 << 21)
        #expect(largest.sampleSize == 10 << 20)
        for capacity in [(1 << 20) + 1, 4 << 20] {
            let sketch = _FrequencySketch(capacity: capacity)
            #expect(sketch.table.count == largest.table.count)
            #expect(sketch.doorkeeper.count == largest.doorkeeper.count)
            #expect(sketch.sampleSize == largest.sampleSize)
        }
    }

    @Test("An occurrence waits in the buffer until a flush, which 32 occurrences trigger")
    func bufferFlushesWhenFull() {
        var sketch = _FrequencySketch(capacity: 1_000)
        let hash = _FrequencySketch.spread(12_345)
        for _ in 0..<3 { sketch.record(hash) }
        #expect(sketch.pendingCount == 3)
        #expect(sketch.frequency(hash) == 0)
        for _ in 3..<32 { sketch.record(hash) }
        #expect(sketch.pendingCount == 0)
        // The first occurrence went to the doorkeeper; the other 31 saturate at 15.
        #expect(sketch.frequency(hash) == 15)
    }
}
