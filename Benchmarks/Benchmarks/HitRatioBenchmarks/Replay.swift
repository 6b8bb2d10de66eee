import Foundation
import Hoard

/// One replay of a trace through one cache configuration.
struct ReplayResult {
    var trace: String
    var size: Int
    var policy: EvictionPolicy
    var hits: Int
    var requests: Int

    var hitRatio: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
}

/// Replays `keys` through a fresh `MemoryCache` of `size` entries: a read that
/// finds the key is a hit, otherwise the key is inserted (every object has size 1).
func replay(_ keys: [UInt32], trace: String, size: Int, policy: EvictionPolicy) throws -> ReplayResult {
    let cache = try MemoryCache<UInt32, UInt32>(
        configuration: .init(countLimit: size, lowWaterMark: 1.0, policy: policy))
    var hits = 0
    for key in keys {
        if cache.value(for: key) != nil {
            hits += 1
        } else {
            cache.set(key, for: key)
        }
    }
    return ReplayResult(trace: trace, size: size, policy: policy, hits: hits, requests: keys.count)
}

/// The table's lines for some results: measured hit ratio, the reference figure and
/// measured minus reference.
func formatTable(_ results: [ReplayResult]) -> String {
    var lines = [
        "trace     N        policy    hit ratio  reference            diff",
        "--------  -------  --------  ---------  -------------------  -------",
    ]
    for result in results {
        let policy = result.policy == .lru ? "lru" : "tinyLFU"
        let referenceName = result.policy == .lru ? "LRU" : "W-TinyLFU"
        let reference = Reference.hitRatio(trace: result.trace, size: result.size, policy: result.policy)
        let referenceText = reference.map { "\(fixed($0)) \(referenceName)" } ?? "-"
        let diffText = reference.map { signed(rounded(result.hitRatio) - rounded($0)) } ?? "-"
        lines.append(
            pad(result.trace, 8) + "  " + pad(result.size.formatted(), 7) + "  " + pad(policy, 8) + "  "
                + pad(fixed(result.hitRatio), 9) + "  " + pad(referenceText, 19) + "  " + diffText)
    }
    return lines.joined(separator: "\n")
}

private func fixed(_ value: Double) -> String {
    String(format: "%.4f", value)
}

/// `value` to four decimals, the table's precision.
private func rounded(_ value: Double) -> Double {
    (value * 10_000).rounded() / 10_000
}

private func signed(_ value: Double) -> String {
    String(format: "%+.4f", abs(value) < 0.000_05 ? 0 : value)
}

private func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
