import Foundation

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny, seedable, deterministic PRNG,
/// so every run replays exactly the same key sequence.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1), from the top 53 bits.
    mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }
}

/// Zipf(s) over ranks `0..<n` by inverse-CDF sampling: rank `r` has weight
/// `1 / (r + 1)^s`, so rank 0 is the most popular key.
struct ZipfDistribution {
    /// `cumulative[r]` is the sum of the weights of ranks `0...r`.
    private let cumulative: [Double]

    init(n: Int, exponent s: Double) {
        precondition(n > 0)
        var running = 0.0
        cumulative = (0..<n).map { rank in
            running += 1 / pow(Double(rank + 1), s)
            return running
        }
    }

    /// The first rank whose cumulative weight exceeds a uniform draw (binary search).
    func sample(using rng: inout SplitMix64) -> Int {
        let target = rng.nextUnit() * cumulative[cumulative.count - 1]
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let mid = (low + high) / 2
            if cumulative[mid] > target { high = mid } else { low = mid + 1 }
        }
        return low
    }

    /// `count` samples from a generator seeded with `seed`.
    func sequence(count: Int, seed: UInt64) -> [Int] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in sample(using: &rng) }
    }
}
