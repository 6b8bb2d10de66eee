import Foundation
import Testing

@testable import Hoard

/// Replays the recorded traces of `Tests/Traces/real` (see its README) through both
/// policies, row by row, against the libCacheSim figures there.
extension HitRatioTraceTests {
    /// The folder of the recorded traces.
    static let recordedTraces = traces.appendingPathComponent("real")

    /// Requests in each recorded trace.
    static let recordedRequests: [String: Int] = [
        "lirs-cpp": 9_047, "lirs-cs": 6_781, "lirs-gli": 6_015, "lirs-ps": 10_448, "lirs-multi1": 15_858,
        "lirs-multi2": 26_311, "lirs-multi3": 30_241, "lirs-sprite": 133_996, "lirs-2_pools": 100_000,
        "lirs-zigzag": 52_001, "c2k-web07": 76_118, "corda-vault": 135_702, "addr-swim": 303_193,
    ]

    /// (trace, N, best of twelve policies, LRU, W-TinyLFU with a fixed 1% window)
    /// from `Tests/Traces/real/README.md` (libCacheSim 0.3.5).
    static let recordedReference: [(String, Int, Double, Double, Double)] = [
        ("lirs-cpp", 122, 0.8070, 0.7572, 0.7921), ("lirs-cpp", 1_000, 0.8643, 0.8640, 0.8643),
        ("lirs-cs", 141, 0.0880, 0.0183, 0.0880), ("lirs-cs", 1_000, 0.5872, 0.0183, 0.5799),
        ("lirs-gli", 253, 0.1623, 0.0091, 0.1488), ("lirs-gli", 1_000, 0.5072, 0.1121, 0.5051),
        ("lirs-ps", 308, 0.5335, 0.1633, 0.5335), ("lirs-ps", 1_000, 0.6680, 0.4855, 0.6680),
        ("lirs-sprite", 142, 0.3835, 0.2981, 0.3835), ("lirs-sprite", 1_000, 0.9064, 0.9064, 0.8023),
        ("lirs-sprite", 5_000, 0.9466, 0.9465, 0.9365),
        ("lirs-multi1", 261, 0.4984, 0.4345, 0.4852), ("lirs-multi1", 1_000, 0.6848, 0.4823, 0.6848),
        ("lirs-multi2", 114, 0.2870, 0.0802, 0.2870), ("lirs-multi2", 1_000, 0.5752, 0.4780, 0.5684),
        ("lirs-multi2", 5_000, 0.7840, 0.7838, 0.7830),
        ("lirs-multi3", 149, 0.2829, 0.0993, 0.2757), ("lirs-multi3", 1_000, 0.5201, 0.3770, 0.5092),
        ("lirs-multi3", 5_000, 0.7391, 0.7111, 0.7383),
        ("lirs-2_pools", 199, 0.5037, 0.3668, 0.5035), ("lirs-2_pools", 1_000, 0.5445, 0.5442, 0.5442),
        ("lirs-2_pools", 5_000, 0.7305, 0.7295, 0.7292),
        ("lirs-zigzag", 200, 0.0957, 0.0957, 0.0801), ("lirs-zigzag", 1_000, 0.4803, 0.4803, 0.4725),
        ("c2k-web07", 102, 0.3854, 0.3356, 0.3228), ("c2k-web07", 410, 0.4882, 0.4416, 0.4530),
        ("c2k-web07", 1_000, 0.5412, 0.5041, 0.5051), ("c2k-web07", 2_048, 0.5822, 0.5566, 0.5588),
        ("c2k-web07", 5_000, 0.6431, 0.6267, 0.6134), ("c2k-web07", 10_000, 0.6965, 0.6900, 0.6819),
        ("corda-vault", 452, 0.3333, 0.3333, 0.0213), ("corda-vault", 1_000, 0.3333, 0.3333, 0.0100),
        ("corda-vault", 5_000, 0.3333, 0.3333, 0.3328), ("corda-vault", 10_000, 0.3333, 0.3333, 0.3333),
        ("addr-swim", 113, 0.8646, 0.8586, 0.7840), ("addr-swim", 452, 0.9204, 0.9028, 0.8837),
        ("addr-swim", 1_000, 0.9228, 0.9221, 0.8782), ("addr-swim", 2_260, 0.9245, 0.9245, 0.9118),
        ("addr-swim", 5_000, 0.9248, 0.9247, 0.9138), ("addr-swim", 10_000, 0.9253, 0.9251, 0.9199),
    ]

    /// How far below the higher of LRU and the fixed-window W-TinyLFU a replay may
    /// land: the reference figures are rounded to four decimals, and libCacheSim's
    /// W-TinyLFU draws random numbers.
    static let recordedFloorSlack = 0.0005
    /// How far below the best of twelve policies a replay may land.
    static let recordedBestSlack = 0.005

    /// Rows (`"trace@N"`) where `.tinyLFU` does not yet reach both targets in every
    /// draw (issue 36): their targets are checked as known issues, so a draw that
    /// reaches them passes and one that misses is reported without failing. On
    /// every other row both targets are hard expectations. `lirs-cs@1000` and
    /// `lirs-2_pools@1000` met both in every draw measured, with too thin a margin
    /// (0.0006 and 0.0001 at the lowest of 23 draws) to fail a run on.
    /// `addr-swim@113` met both in the draws measured for the policy change, but a
    /// release-mode CI draw landed at 0.8532 (floor 0.8581, best 0.8646).
    /// `lirs-multi1@1000` is 0.6844 in the deterministic draw, but a debug-mode draw
    /// of the whole suite landed at 0.68420, under its floor less the slack (0.6843).
    static let recordedShortfalls: Set<String> = [
        "lirs-cpp@122", "lirs-cs@141", "lirs-cs@1000", "lirs-gli@1000", "lirs-multi1@1000",
        "lirs-2_pools@1000", "lirs-ps@308", "lirs-ps@1000", "lirs-sprite@1000",
        "lirs-sprite@5000", "lirs-multi3@1000", "lirs-zigzag@200", "lirs-zigzag@1000",
        "c2k-web07@1000", "c2k-web07@2048", "c2k-web07@5000", "c2k-web07@10000",
        "addr-swim@113", "addr-swim@452", "addr-swim@1000", "addr-swim@2260", "addr-swim@5000", "addr-swim@10000",
    ]

    /// The keys of recorded trace `name`, expanded from
    /// `Tests/Traces/real/<name>.u32.gz`.
    /// - Throws: `TraceError` when the trace is unknown, missing, or not as long as
    ///   its README says.
    static func loadRecorded(_ name: String) throws -> [UInt32] {
        guard let requests = recordedRequests[name] else {
            throw TraceError(description: "no recorded trace named \(name)")
        }
        return try expand(recordedTraces.appendingPathComponent("\(name).u32.gz"), requests: requests)
    }

    @Test("A recorded trace that is not in the repository fails the load instead of being skipped")
    func missingRecordedTraceThrows() {
        #expect(throws: TraceError.self) { try Self.loadRecorded("absent") }
    }

    @Test(
        "On recorded traces LRU matches the reference exactly; W-TinyLFU is at least the higher of LRU and a fixed window, and near the best of twelve policies",
        arguments: [
            "lirs-cpp", "lirs-cs", "lirs-gli", "lirs-ps", "lirs-sprite", "lirs-multi1", "lirs-multi2", "lirs-multi3",
            "lirs-2_pools", "lirs-zigzag", "c2k-web07", "corda-vault", "addr-swim",
        ])
    func recorded(name: String) async throws {
        let keys = try Self.loadRecorded(name)
        let rows = Self.recordedReference.filter { $0.0 == name }
        #expect(!rows.isEmpty, "\(name) has reference rows")
        for (_, size, best, lru, fixedWindow) in rows {
            let (measuredLRU, measuredTiny) = try await Self.onOwnThread {
                (
                    try Self.hitRatio(keys, size: size, policy: .lru),
                    try Self.hitRatio(keys, size: size, policy: .tinyLFU)
                )
            }
            print("\(name) N=\(size): lru \(measuredLRU) (ref \(lru)), tinyLFU \(measuredTiny) (best \(best))")
            #expect(abs(measuredLRU - lru) < 0.00005, "\(name) N=\(size) LRU")
            let row = "\(name)@\(size)"
            let targets = {
                #expect(
                    measuredTiny >= max(lru, fixedWindow) - Self.recordedFloorSlack,
                    "\(row) W-TinyLFU at least LRU and the fixed-window W-TinyLFU")
                #expect(
                    measuredTiny >= best - Self.recordedBestSlack, "\(row) W-TinyLFU near the best of twelve policies")
            }
            if Self.recordedShortfalls.contains(row) {
                withKnownIssue("issue 36: \(row) is short of the targets", isIntermittent: true, targets)
            } else {
                targets()
            }
        }
    }
}
