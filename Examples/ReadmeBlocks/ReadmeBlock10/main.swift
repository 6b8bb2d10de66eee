import Foundation
import Hoard

let lastLogout = Date.now
let sessions = try MemoryCache<String, String>(configuration: .init(defaultExpiry: .minutes(30)))
sessions["alice"] = "token-a"                              // expires in 30 minutes
sessions.set("token-b", for: "bob", expires: .seconds(60)) // per-entry override
sessions.set("token-c", for: "carol", expires: .never)

let fresh = sessions["alice", maxAge: 60]                  // nil if stored more than 60 s ago
let recent = sessions["alice", newerThan: lastLogout]      // nil unless stored after lastLogout
sessions.removeExpired()                                   // sweep; reads also drop expired entries
