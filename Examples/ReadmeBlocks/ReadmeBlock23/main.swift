#if Postgres
import Foundation
import Hoard
import HoardPostgres

var configuration = try PostgresStore.Configuration(url: "postgres://app:secret@127.0.0.1:5432/app")
configuration.table = "shop_cache"               // created if missing, with its indexes
configuration.isUnlogged = true                  // no WAL: faster, emptied after a server crash
configuration.maximumRows = 1_000_000            // trimmed oldest first, every 1,000 writes
configuration.commandTimeout = .seconds(2)
let store = try PostgresStore(configuration: configuration)

try await store.set(Data("Ada".utf8), for: "user:42", in: "profiles",
                    storedAt: .now, expiresAt: .now + 300)         // INSERT … ON CONFLICT DO UPDATE
let entry = try await store.entry(for: "user:42", in: "profiles")  // StoredEntry?
let many = try await store.entries(for: ["user:1", "user:42"], in: "profiles")  // key = ANY($2)
try await store.removeValue(for: "user:42", in: "profiles")
try await store.removeAll(in: "profiles")                          // this namespace only
try await store.maintain()                                         // sweep expired rows, trim

var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
cacheConfiguration.remoteStores = [store]        // other instances' writes drop keys from memory
let profiles = try Cache<String, String>(configuration: cacheConfiguration)
#endif
