import Hoard

let counters = try MemoryCache<String, Int>(
    configuration: .init(countLimit: 100_000), clock: CoarseSystemClock())
counters.set(1, for: "hits")
