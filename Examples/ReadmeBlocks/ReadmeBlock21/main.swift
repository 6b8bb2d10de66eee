#if Redis
import Foundation
import Hoard
import HoardRedis

var configuration = try RedisStore.Configuration(url: "redis://:secret@127.0.0.1:6379/0")
configuration.keyPrefix = "shop"                 // keys are shop:<n>:<namespace>:<key>
configuration.commandTimeout = .seconds(2)
let store = try RedisStore(configuration: configuration)

try await store.set(Data("Ada".utf8), for: "user:42", in: "profiles",
                    storedAt: .now, expiresAt: .now + 300)         // SET … PX 300000
let entry = try await store.entry(for: "user:42", in: "profiles")  // StoredEntry? (data, storedAt, expiresAt)
let many = try await store.entries(for: ["user:1", "user:42"], in: "profiles")  // one MGET
try await store.removeValue(for: "user:42", in: "profiles")
try await store.removeAll(in: "profiles")                          // SCAN + UNLINK, this namespace only

let memory = try MemoryCache<String, Data>()
for await change in store.invalidations(in: "profiles") {          // other instances' writes
    switch change {
    case .key(let key): memory.removeValue(for: key)
    case .all, .missed: memory.removeAll()                        // a clear, or a reconnect
    }
}
#endif
