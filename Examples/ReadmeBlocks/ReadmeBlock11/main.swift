import Hoard

let clock = ManualClock()
let cache = try MemoryCache<String, Int>(clock: clock)
cache.set(1, for: "k", expires: .seconds(10))
clock.advance(by: 11)
assert(cache["k"] == nil)
