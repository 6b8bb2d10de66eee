import Foundation
import Hoard
import Testing

@Suite("W-TinyLFU")
struct TinyLFUTests {
    /// Warms a hot set, runs a one-pass scan of cold keys, and counts how many hot
    /// keys still hit afterwards.
    func hotKeysSurvivingScan(policy: EvictionPolicy) throws -> Int {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 100, lowWaterMark: 1.0, policy: policy))
        let hot = 0..<50
        for _ in 0..<20 {
            for key in hot where cache[key] == nil { cache[key] = key }
        }
        for key in 1_000..<11_000 where cache[key] == nil { cache[key] = key }
        return hot.filter { cache[$0] != nil }.count
    }

    @Test("Keeps a frequently used working set through a one-pass scan that LRU loses")
    func scanResistance() throws {
        #expect(try hotKeysSurvivingScan(policy: .lru) == 0)
        #expect(try hotKeysSurvivingScan(policy: .tinyLFU) >= 45)
    }

    /// A workload where only recency predicts the next request: a third of the
    /// requests introduce a new key, the rest ask for one of the last 4,096 keys
    /// introduced, the more recent the likelier (log-uniform over the distance).
    /// Every key is popular for a while and then forgotten, which a frequency sketch
    /// learns too late.
    static func recencyWorkload(requests: Int) -> [Int] {
        var state: UInt64 = 42
        func unit() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        let recent = 4_096
        var introduced = 0
        var keys: [Int] = []
        keys.reserveCapacity(requests)
        for _ in 0..<requests {
            if introduced == 0 || unit() < 0.3 {
                keys.append(introduced)
                introduced += 1
            } else {
                let span = min(introduced, recent)
                let distance = min(span - 1, Int(pow(Double(span), unit())) - 1)
                keys.append(introduced - 1 - distance)
            }
        }
        return keys
    }

    func hitRatio(_ keys: [Int], countLimit: Int, policy: EvictionPolicy) throws -> Double {
        let cache = try MemoryCache<Int, Int>(
            configuration: .init(countLimit: countLimit, lowWaterMark: 1.0, policy: policy, memoryPressure: nil))
        var hits = 0
        for key in keys {
            if cache[key] != nil { hits += 1 } else { cache[key] = key }
        }
        return Double(hits) / Double(keys.count)
    }

    /// With the window fixed at 1% of 500 entries, W-TinyLFU kept 0.18 of these
    /// requests against LRU's 0.51 (new keys rarely win admission against entries
    /// whose popularity has not decayed yet); the adaptive window grows until it
    /// keeps about 0.45.
    @Test("Grows its window on a workload where recency is the only signal, to near LRU's hit ratio")
    func adaptsToRecency() throws {
        let keys = Self.recencyWorkload(requests: 200_000)
        let lru = try hitRatio(keys, countLimit: 500, policy: .lru)
        let tinyLFU = try hitRatio(keys, countLimit: 500, policy: .tinyLFU)
        #expect(lru > 0.45)
        #expect(tinyLFU > 0.75 * lru, "W-TinyLFU \(tinyLFU) against LRU \(lru)")
    }

    @Test("A value just written is readable, even when the window evicts at once")
    func justWrittenIsReadable() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 10, lowWaterMark: 1.0, policy: .tinyLFU))
        for _ in 0..<5 {
            for key in 0..<10 { _ = cache[key] }
        }
        for key in 100..<1_000 {
            cache[key] = key
            #expect(cache[key] == key)
            #expect(cache.count <= 10)
        }
    }

    @Test("Cost-weighted W-TinyLFU respects the cost limit")
    func costWeighted() throws {
        let cache = try MemoryCache<Int, Data>(configuration: .init(costLimit: 10_000, policy: .tinyLFU))
        for key in 0..<1_000 {
            cache[key] = Data(count: key % 50 + 1)
            #expect(cache.totalCost <= 10_000)
        }
        #expect(cache.count > 100)
    }

    @Test("An entry alone in the protected segment that grows in place evicts from the window to keep the cost limit")
    func costWeightedGrowthInPlace() throws {
        let cache = try MemoryCache<Int, Data>(
            configuration: .init(costLimit: 100, policy: .tinyLFU, memoryPressure: nil))
        cache[1] = Data(count: 10)
        cache[2] = Data(count: 10)  // 1 leaves the window for probation
        #expect(cache[1] != nil)  // 1 is promoted: alone in protected, probation empty
        #expect(cache.set(Data(count: 95), for: 1))
        #expect(cache.totalCost == 95)
        #expect(cache[2] == nil)
        #expect(cache[1]?.count == 95)
    }

    @Test("A very large count limit gets a sketch of bounded size")
    func hugeCountLimit() async {
        // 2^57 entries: a sketch sized from the limit overflows computing its
        // doorkeeper (and could not be allocated).
        await #expect(processExitsWith: .success) {
            let cache = try? MemoryCache<Int, Int>(
                configuration: .init(countLimit: 1 << 57, policy: .tinyLFU, memoryPressure: nil))
            cache?[1] = 1
            precondition(cache?[1] == 1)
        }
    }
}

/// Replays the hit-ratio traces committed in `Tests/Traces` through both policies and
/// checks them against the reference figures in `Tests/Traces/README.md`. A missing
/// or damaged trace fails the test.
@Suite("Hit ratios on the reference traces", .serialized, .timeLimit(.minutes(10)))
struct HitRatioTraceTests {
    static let traces = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Traces")

    /// (trace, N, LRU, W-TinyLFU, best of twelve policies) from `Tests/Traces/README.md`
    /// (libCacheSim 0.3.5).
    static let reference: [(String, Int, Double, Double, Double)] = [
        ("zipf1.0", 1_000, 0.5060, 0.6033, 0.6033), ("zipf1.0", 5_000, 0.6648, 0.7297, 0.7297),
        ("zipf1.0", 10_000, 0.7353, 0.7800, 0.7809),
        ("scan", 1_000, 0.4021, 0.4804, 0.4804), ("scan", 5_000, 0.5120, 0.5780, 0.5805),
        ("scan", 10_000, 0.5419, 0.6175, 0.6219),
        ("loop", 1_000, 0, 0.0082, 0.0089), ("loop", 5_000, 0, 0.0419, 0.0445), ("loop", 10_000, 0, 0.0838, 0.0891),
    ]

    /// One replay is one draw: the sketch hashes keys with Swift's per-process random
    /// seed, so which keys collide, and with them the hit ratio, changes from process
    /// to process. With the window fixed at 1%, a row landed up to 0.0111 below its
    /// median over 260 draws; the adaptive window absorbs most of it (45 draws, five
    /// a row: every one within 0.0003 of its row's median). A single replay is held
    /// to these bounds below the best of twelve policies.
    static let drawSpread = 0.003
    /// The same for the loop's rows, whose figures are a hundred times smaller.
    static let loopDrawSpread = 0.0003

    /// One-to-one relabellings of a trace's keys, `key &* multiplier ^ mask`
    /// (multipliers odd), each as good as another hash seed; the first is the
    /// identity. Fixed, so the draws differ from process to process only by the seed.
    static let relabellings: [(multiplier: UInt32, mask: UInt32)] = [
        (1, 0), (0x9E37_79B1, 0x5BD1_E995), (0x85EB_CA6B, 0xC2B2_AE35), (0x27D4_EB2F, 0x1656_67B1),
        (0xCC9E_2D51, 0x1B87_3593), (0xE654_6B65, 0x0000_FFFF), (0x7FEB_352D, 0x846C_A68B),
        (0x2C1B_3C6D, 0x297A_2D39), (0x68E3_1DA5, 0xB529_7A4D),
    ]

    /// Requests in every trace.
    static let requests = 1_000_000

    struct TraceError: Error, CustomStringConvertible {
        var description: String
    }

    /// The keys of trace `name`: `loop` is generated; the others are expanded from
    /// `Tests/Traces/<name>.u32.gz` with `gzip -dc`.
    /// - Throws: `TraceError` when the file is missing, gzip fails, or the trace is
    ///   not 1,000,000 keys.
    static func load(_ name: String) throws -> [UInt32] {
        if name == "loop" {
            return (0..<requests).map { UInt32($0 % 100_000) }
        }
        return try expand(traces.appendingPathComponent("\(name).u32.gz"), requests: requests)
    }

    /// The keys of the gzip-compressed trace at `url`, which must hold `requests`
    /// little-endian `UInt32` keys.
    /// - Throws: `TraceError` when the file is missing, gzip fails, or the trace is
    ///   not `requests` keys.
    static func expand(_ url: URL, requests: Int) throws -> [UInt32] {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw TraceError(description: "trace \(url.lastPathComponent) is missing: no file at \(url.path)")
        }
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["gzip", "-dc", url.path]
        let output = Pipe()
        gzip.standardOutput = output
        try gzip.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        gzip.waitUntilExit()
        guard gzip.terminationStatus == 0 else {
            throw TraceError(description: "gzip -dc \(url.path) exited with status \(gzip.terminationStatus)")
        }
        guard data.count == requests * 4 else {
            throw TraceError(description: "\(url.path) expands to \(data.count) bytes, not \(requests * 4)")
        }
        return data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map {
                UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))
            }
        }
    }

    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    static func hitRatio(_ keys: [UInt32], size: Int, policy: EvictionPolicy) throws -> Double {
        let cache = try MemoryCache<UInt32, UInt32>(
            configuration: .init(countLimit: size, lowWaterMark: 1.0, policy: policy))
        var hits = 0
        for key in keys {
            if cache.value(for: key) != nil { hits += 1 } else { cache.set(key, for: key) }
        }
        return Double(hits) / Double(keys.count)
    }

    @Test("A trace that is not in the repository fails the load instead of being skipped")
    func missingTraceThrows() {
        #expect(throws: TraceError.self) { try Self.load("absent") }
    }

    @Test(
        "LRU matches the reference exactly; W-TinyLFU beats LRU, is near the best of twelve policies, and its median of nine seeds at or above it",
        arguments: ["zipf1.0", "scan", "loop"])
    func trace(name: String) async throws {
        let keys = try Self.load(name)
        let isLoop = name == "loop"
        for (trace, size, lru, fixedWindow, best) in Self.reference where trace == name {
            // Replayed on a thread of its own: a minute of CPU work must not hold a
            // thread of the concurrency pool that other suites' tests need.
            let (measuredLRU, draws) = try await Self.onOwnThread {
                var draws = [try Self.hitRatio(keys, size: size, policy: .tinyLFU)]
                #if !DEBUG
                for relabelling in Self.relabellings.dropFirst() {
                    let relabelled = keys.map { ($0 &* relabelling.multiplier) ^ relabelling.mask }
                    draws.append(try Self.hitRatio(relabelled, size: size, policy: .tinyLFU))
                }
                #endif
                return (try Self.hitRatio(keys, size: size, policy: .lru), draws)
            }
            let measuredTiny = draws[0]
            print(
                "\(name) N=\(size): lru \(measuredLRU) (ref \(lru)), tinyLFU \(draws) (best \(best))"
            )
            #expect(abs(measuredLRU - lru) < 0.00005, "\(name) N=\(size) LRU")
            #expect(measuredTiny > measuredLRU, "\(name) N=\(size) W-TinyLFU above LRU")
            #expect(
                measuredTiny >= fixedWindow - Self.recordedFloorSlack,
                "\(name) N=\(size) W-TinyLFU at least the fixed-window W-TinyLFU")
            #expect(
                measuredTiny >= best - (isLoop ? Self.loopDrawSpread : Self.drawSpread),
                "\(name) N=\(size) W-TinyLFU near the best of twelve policies")
            #if !DEBUG
            // Rounded to the table's four decimals, as the reference figures are.
            let median = draws.sorted()[draws.count / 2]
            let rounded = (median * 10_000).rounded() / 10_000
            #expect(
                rounded >= best - 1e-9,
                "\(name) N=\(size) W-TinyLFU's median of \(draws.count) seeds at or above the best of twelve policies")
            #endif
        }
    }
}
