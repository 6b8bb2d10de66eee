/// The key space and request stream every throughput benchmark shares.
enum KeySpace {
    /// Distinct keys, all of which the caches hold: `0..<keyCount`.
    static let keyCount = 100_000
    /// Length of the precomputed request stream.
    static let requestCount = 1_000_000
    /// Requests per benchmark iteration (the `.kilo` scaling factor): iteration `i`
    /// replays batch `i % batchCount`, so the iterations walk the whole stream.
    static let batchSize = 1_000
    static let batchCount = requestCount / batchSize
    /// Zipf(0.99) over the key space (key = popularity rank), computed once, outside
    /// any measured region.
    static let requests: [Int] = ZipfDistribution(n: keyCount, exponent: 0.99)
        .sequence(count: requestCount, seed: 0x484F_4152_4421)

    /// Writes every key once, coldest first, and returns how many keys the cache
    /// then holds. Should a subject hold fewer than `keyCount` (a sharded cache whose
    /// busiest shard overflows its share of the limit), the entries it dropped are
    /// the least requested ones, and reads of them miss.
    static func prepopulate(_ cache: some CacheSubject) -> Int {
        for key in (0..<keyCount).reversed() {
            cache.put(key, for: key)
        }
        return (0..<keyCount).reduce(0) { held, key in cache.get(key) == nil ? held : held + 1 }
    }
}

/// What one benchmark iteration does with each request of the stream.
enum Workload: String {
    /// Reads only; every key is present, so every read is a hit (see
    /// `KeySpace.prepopulate` for the exception).
    case getHit = "get-hit"
    /// Overwrites only: every key is already present, so nothing is inserted or
    /// evicted (same exception).
    case set
    /// 90% reads, 10% overwrites: every tenth request is a write.
    case mix

    /// Runs the workload over `requests` and returns a checksum for `blackHole`.
    @inline(__always)
    func run<C: CacheSubject>(on cache: C, requests: ArraySlice<Int>) -> Int {
        var checksum = 0
        switch self {
        case .getHit:
            for key in requests {
                checksum &+= cache.get(key) ?? -1
            }
        case .set:
            for (position, key) in zip(requests.indices, requests) {
                cache.put(position, for: key)
            }
            checksum = requests.count
        case .mix:
            for (position, key) in zip(requests.indices, requests) {
                if position % 10 == 9 {
                    cache.put(position, for: key)
                } else {
                    checksum &+= cache.get(key) ?? -1
                }
            }
        }
        return checksum
    }
}
