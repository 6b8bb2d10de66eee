import Foundation
import Hoard
import Testing

@Suite("MemoryCache under concurrency", .timeLimit(.minutes(2)))
struct MemoryCacheConcurrencyTests {
    static let configurations: [(String, MemoryCache<Int, Data>.Configuration)] = [
        ("lru, one shard", .init(countLimit: 500, costLimit: 40_000)),
        ("lru, four shards", .init(countLimit: 500, costLimit: 40_000, shards: 4)),
        ("tinyLFU, one shard", .init(countLimit: 500, costLimit: 40_000, policy: .tinyLFU)),
        (
            "tinyLFU, four shards, 100% mark",
            .init(countLimit: 500, costLimit: 40_000, lowWaterMark: 1, policy: .tinyLFU, shards: 4)
        ),
    ]

    /// Each value starts with its key's 8 bytes, so a read can prove it got the
    /// value of the key it asked for.
    static func value(for key: Int, size: Int) -> Data {
        var data = withUnsafeBytes(of: Int64(key).littleEndian) { Data($0) }
        data.append(Data(count: size))
        return data
    }

    static func key(of value: Data) -> Int {
        Int(value.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }.littleEndian)
    }

    @Test(
        "Many tasks keep count and cost within the limits and never read another key's value",
        arguments: 0..<4)
    func stress(configurationIndex: Int) async throws {
        let (_, configuration) = Self.configurations[configurationIndex]
        let cache = try MemoryCache<Int, Data>(configuration: configuration)
        let violations = await withTaskGroup(of: [String].self) { group in
            for task in 0..<16 {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(task))
                    var problems: [String] = []
                    for step in 0..<5_000 {
                        let key = Int(rng.next() % 2_000)
                        switch rng.next() % 10 {
                        case 0..<5:
                            if let value = cache[key], Self.key(of: value) != key {
                                problems.append("read key \(key) returned the value of \(Self.key(of: value))")
                            }
                        case 5..<9:
                            cache[key] = Self.value(for: key, size: Int(rng.next() % 200))
                        default:
                            cache.removeValue(for: key)
                        }
                        if step % 97 == 0 {
                            if cache.count > 500 { problems.append("count \(cache.count) > 500") }
                            if cache.totalCost > 40_000 { problems.append("cost \(cache.totalCost) > 40000") }
                        }
                    }
                    return problems
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(violations.isEmpty, "\(violations.prefix(5))")
        #expect(cache.count <= 500)
        #expect(cache.totalCost <= 40_000)
        // The bookkeeping agrees with the contents: cost is the sum of what is stored.
        var counted = 0
        var cost = 0
        for key in 0..<2_000 {
            if let value = cache[key] {
                counted += 1
                cost += value.count
            }
        }
        #expect(counted == cache.count)
        #expect(cost == cache.totalCost)
    }
}

/// A small deterministic generator for tests.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
