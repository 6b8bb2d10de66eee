import Foundation
import Testing

@testable import Hoard

/// Long random runs of every `MemoryCache` operation against a model: with `.lru`
/// the model is the whole cache (which entries it holds, in which order it evicts
/// them); with `.tinyLFU`, whose choice of victim is the policy's, the model checks
/// everything but that choice. Each run is seeded, so a failure repeats.
@Suite("MemoryCache against a model, in random runs")
struct MemoryCacheModelTests {
    /// A small deterministic generator (SplitMix64), so a failing seed repeats.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// One entry of the model: what the cache must answer for its key.
    struct Entry: Equatable {
        var value: Int
        var cost: Int
        var storedAt: Double
        var expiresAt: Double
    }

    /// The exact LRU cache the configuration describes: entries most recently used
    /// first, evicted from the end down to the low-water mark of the limit passed.
    struct LRUModel {
        var order: [Int] = []  // keys, most recently used first
        var entries: [Int: Entry] = [:]
        let countLimit: Int
        let costLimit: Int
        let countLowWater: Int
        let costLowWater: Int
        var evictions = 0
        var expirations = 0

        var totalCost: Int { entries.values.reduce(0) { $0 + $1.cost } }

        mutating func touch(_ key: Int) {
            order.removeAll { $0 == key }
            order.insert(key, at: 0)
        }

        mutating func remove(_ key: Int) {
            order.removeAll { $0 == key }
            entries[key] = nil
        }

        /// What a read answers; an expired entry is removed, a hit is used.
        mutating func read(_ key: Int, now: Double, maxAge: Double?) -> Int? {
            guard let entry = entries[key] else { return nil }
            if now >= entry.expiresAt {
                remove(key)
                expirations += 1
                return nil
            }
            if let maxAge, now - entry.storedAt > maxAge { return nil }
            touch(key)
            return entry.value
        }

        /// A write; `false` (and any older value removed) when its cost alone is
        /// over the cost limit.
        mutating func write(_ key: Int, _ entry: Entry) -> Bool {
            guard entry.cost <= costLimit else {
                remove(key)
                return false
            }
            entries[key] = entry
            touch(key)
            let overCount = entries.count > countLimit
            let overCost = totalCost > costLimit
            guard overCount || overCost else { return true }
            let countTarget = overCount ? countLowWater : countLimit
            let costTarget = overCost ? costLowWater : costLimit
            while entries.count > countTarget || totalCost > costTarget, let victim = order.last, victim != key {
                remove(victim)
                evictions += 1
            }
            return true
        }

        mutating func removeExpired(now: Double) -> Int {
            let expired = entries.filter { now >= $0.value.expiresAt }.map(\.key)
            for key in expired { remove(key) }
            expirations += expired.count
            return expired.count
        }

        mutating func purge(downToCount count: Int) {
            while entries.count > count, let victim = order.last {
                remove(victim)
                evictions += 1
            }
        }
    }

    /// The limits of one run: a count limit, a cost limit, or both.
    static let limits: [(count: Int?, cost: Int?)] = [(8, nil), (nil, 40), (12, 30)]

    @Test(
        "With .lru, random reads, writes, removals, expiries and purges leave exactly the entries and order of an LRU model",
        arguments: 0..<12)
    func lruMatchesTheModel(seed: Int) throws {
        var random = Generator(state: UInt64(seed) &* 0x2545_F491_4F6C_DD1D)
        let (countLimit, costLimit) = Self.limits[seed % Self.limits.count]
        let lowWaterMark = [1.0, 0.75, 0.5][seed % 3]
        let clock = ManualClock()
        let cache = try MemoryCache<Int, Int>(
            configuration: .init(
                countLimit: countLimit, costLimit: costLimit, lowWaterMark: lowWaterMark, policy: .lru,
                cost: { $0 % 100 }, memoryPressure: nil),
            clock: clock)
        var model = LRUModel(
            countLimit: countLimit ?? .max, costLimit: costLimit ?? .max,
            countLowWater: countLimit.map { _LowWaterMark.of($0, at: lowWaterMark) } ?? .max,
            costLowWater: costLimit.map { _LowWaterMark.of($0, at: lowWaterMark) } ?? .max)
        for step in 0..<4_000 {
            let key = Int.random(in: 0..<24, using: &random)
            let now = clock.now().timeIntervalSinceReferenceDate
            let context = "seed \(seed), step \(step), key \(key)"
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<40:
                let maxAge: Double? = Bool.random(using: &random) ? nil : Double(Int.random(in: 0..<6, using: &random))
                let expected = model.read(key, now: now, maxAge: maxAge)
                #expect(cache.value(for: key, maxAge: maxAge) == expected, "\(context)")
            case 40..<80:
                // A value's cost is its last two digits: 0 to 15, now and then over the cost limit.
                let cost = Int.random(in: 0..<100, using: &random) < 3 ? 99 : Int.random(in: 0..<16, using: &random)
                let value = step * 100 + cost
                let lifetime = Int.random(in: 0..<4, using: &random)
                let expires: Expiry = lifetime == 0 ? .never : .after(Double(lifetime * 3))
                let expiresAt = lifetime == 0 ? Double.infinity : now + Double(lifetime * 3)
                let stored = cache.set(value, for: key, expires: expires)
                let modelStored = model.write(key, Entry(value: value, cost: cost, storedAt: now, expiresAt: expiresAt))
                #expect(stored == modelStored, "\(context)")
            case 80..<88:
                #expect(cache.removeValue(for: key) == model.entries[key]?.value, "\(context)")
                model.remove(key)
            case 88..<95:
                clock.advance(by: Double(Int.random(in: 1..<4, using: &random)))
            case 95..<98:
                #expect(cache.removeExpired() == model.removeExpired(now: now), "\(context)")
            default:
                let target = Int.random(in: 0..<8, using: &random)
                cache.purge(downToCount: target)
                model.purge(downToCount: target)
            }
            #expect(cache.count == model.entries.count, "\(context): count")
            #expect(cache.totalCost == model.totalCost, "\(context): total cost")
            // One divergence is enough to report; the steps after it would repeat it.
            if cache.count != model.entries.count || cache.totalCost != model.totalCost { return }
        }
        // The order too: evicting one entry at a time removes the model's least recent first.
        let statistics = cache.statistics
        #expect(model.evictions > 0 && model.expirations > 0, "seed \(seed): the run evicts and expires")
        #expect(statistics.evictions == model.evictions)
        #expect(statistics.expirations == model.expirations)
        // (`contains` does not see an expired entry, which still counts until removed.)
        let now = clock.now().timeIntervalSinceReferenceDate
        while let victim = model.order.last {
            cache.purge(downToCount: model.entries.count - 1)
            model.remove(victim)
            #expect(cache.count == model.entries.count, "seed \(seed): count after evicting \(victim)")
            #expect(cache.contains(victim) == false, "seed \(seed): \(victim) should be the next to go")
            for key in model.order {
                let isLive = now < model.entries[key]!.expiresAt
                #expect(cache.contains(key) == isLive, "seed \(seed): \(key) should remain")
            }
        }
    }

    @Test(
        "With .tinyLFU, a read answers the newest value written or nothing, never a replaced or removed one, and the limits hold",
        arguments: 0..<12)
    func tinyLFUNeverAnswersAnOlderValue(seed: Int) throws {
        var random = Generator(state: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        let (countLimit, costLimit) = Self.limits[seed % Self.limits.count]
        let clock = ManualClock()
        let cache = try MemoryCache<Int, Int>(
            configuration: .init(
                countLimit: countLimit, costLimit: costLimit, lowWaterMark: [1.0, 0.75][seed % 2], policy: .tinyLFU,
                cost: { $0 % 100 }, memoryPressure: nil),
            clock: clock)
        // The newest entry written for each key that was not removed since; the
        // cache may have evicted it.
        var newest: [Int: Entry] = [:]
        for step in 0..<6_000 {
            let key = Int.random(in: 0..<48, using: &random)
            let now = clock.now().timeIntervalSinceReferenceDate
            let context = "seed \(seed), step \(step), key \(key)"
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<45:
                let maxAge: Double? = Bool.random(using: &random) ? nil : Double(Int.random(in: 0..<6, using: &random))
                guard let value = cache.value(for: key, maxAge: maxAge) else { break }
                guard let entry = newest[key] else {
                    Issue.record("\(context): answered \(value) for a key removed or never written")
                    break
                }
                #expect(value == entry.value, "\(context): answered an older value")
                #expect(now < entry.expiresAt, "\(context): answered an expired value")
                if let maxAge { #expect(now - entry.storedAt <= maxAge, "\(context): answered a value too old") }
            case 45..<85:
                let cost = Int.random(in: 0..<100, using: &random) < 3 ? 99 : Int.random(in: 0..<16, using: &random)
                let value = step * 100 + cost
                let lifetime = Int.random(in: 0..<4, using: &random)
                let expires: Expiry = lifetime == 0 ? .never : .after(Double(lifetime * 3))
                let expiresAt = lifetime == 0 ? Double.infinity : now + Double(lifetime * 3)
                if cache.set(value, for: key, expires: expires) {
                    newest[key] = Entry(value: value, cost: cost, storedAt: now, expiresAt: expiresAt)
                    #expect(cache.contains(key), "\(context): the entry just written was evicted")
                } else {
                    #expect(cost > costLimit ?? .max, "\(context): refused a value within the cost limit")
                    newest[key] = nil
                }
            case 85..<93:
                let removed = cache.removeValue(for: key)
                if let removed { #expect(removed == newest[key]?.value, "\(context): removed an older value") }
                newest[key] = nil
            case 93..<98:
                clock.advance(by: Double(Int.random(in: 1..<4, using: &random)))
            default:
                cache.purge(downToCount: Int.random(in: 0..<8, using: &random))
            }
            #expect(cache.count <= countLimit ?? .max, "\(context): over the count limit")
            #expect(cache.totalCost <= costLimit ?? .max, "\(context): over the cost limit")
            if cache.count > countLimit ?? .max || cache.totalCost > costLimit ?? .max { return }
        }
        // Every entry the cache still holds is the newest written for its key, and
        // the total cost is theirs.
        cache.removeExpired()
        for (key, entry) in newest where clock.now().timeIntervalSinceReferenceDate < entry.expiresAt {
            if let value = cache.value(for: key) { #expect(value == entry.value, "seed \(seed), key \(key)") }
        }
        let expected = newest.filter { cache.contains($0.key) }.values.reduce(0) { $0 + $1.cost }
        #expect(cache.totalCost == expected, "seed \(seed): total cost")
    }
}
