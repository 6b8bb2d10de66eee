import Hoard

/// Reference hit ratios for the traces, copied from the table in
/// `Tests/Traces/README.md` (libCacheSim 0.3.5 on exactly these sequences): its
/// LRU column for `.lru` and its W-TinyLFU column (1% window LRU, segmented-LRU
/// main space, count-min sketch, no adaptive window) for `.tinyLFU`.
enum Reference {
    /// Cache sizes, in entries, the table covers.
    static let sizes = [1_000, 5_000, 10_000]

    /// `[trace: [N: (lru, wTinyLFU)]]`.
    static let hitRatios: [String: [Int: (lru: Double, wTinyLFU: Double)]] = [
        "zipf1.0": [
            1_000: (0.5060, 0.6033),
            5_000: (0.6648, 0.7297),
            10_000: (0.7353, 0.7800),
        ],
        "scan": [
            1_000: (0.4021, 0.4804),
            5_000: (0.5120, 0.5780),
            10_000: (0.5419, 0.6175),
        ],
        "loop": [
            1_000: (0, 0.0082),
            5_000: (0, 0.0419),
            10_000: (0, 0.0838),
        ],
    ]

    /// The reference figure for `policy` on `trace` at `size` entries, if the table has one.
    static func hitRatio(trace: String, size: Int, policy: EvictionPolicy) -> Double? {
        guard let row = hitRatios[trace]?[size] else { return nil }
        switch policy {
        case .lru: return row.lru
        case .tinyLFU: return row.wTinyLFU
        }
    }
}
