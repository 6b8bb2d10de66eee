import Hoard

let users = try Cache<Int, String>(configuration: .memoryOnly(name: "users"))
let cache = try MemoryCache<String, Int>()
let userID = 42

for await user in users.updates(for: userID) {  // current value first, then every change
    print(user ?? "none")                         // nil after a removal, a clear or an invalidation
}

for await event in cache.events {                 // .set, .removed, .evicted(key, reason:), .expired, .removedAll
    print(event)
}

print(cache.statistics)   // hits 90, misses 10 (hit ratio 90.0%), evictions 3, expirations 1
