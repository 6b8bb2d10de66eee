import Foundation
import Hoard

struct User: Codable, Sendable { var name: String }
let cacheURL = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnails")
let url = "https://example.com/a.png"
let pngData = Data([0x89, 0x50, 0x4E, 0x47])

let store = try DiskStore(named: "com.example.app")    // ~/.cache/<program>/com.example.app (Caches on Apple platforms)
try store.set(User(name: "Ada"), for: "user:42", expires: .hours(1), in: "users")
let user = try store.value(for: "user:42", as: User.self, in: "users")   // User?

let images = try DiskStore(directory: cacheURL, configuration: .init(
    byteLimit: 512 << 20,       // over 512 MiB of values, evict least-recently-accessed down to 75%
    onEvent: { event in print(event) }))   // damaged entries removed, evictions, failures of deferred work
try images.set(pngData, for: url, in: "thumbnails")
try images.removeAll(in: "thumbnails")     // other namespaces are untouched
let report = try images.verify()           // every damaged entry, with its key and what is wrong
