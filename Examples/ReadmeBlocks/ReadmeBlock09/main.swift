import Foundation
import Hoard

let images = try MemoryCache<URL, Data>(configuration: .init(
    costLimit: 64 << 20,       // 64 MiB: a Data value costs its byte count
    lowWaterMark: 0.75,        // over the limit, evict down to 75% of it (the default)
    policy: .tinyLFU))         // or .lru (exact least-recently-used, the default)

let url = URL(filePath: "/tmp/huge.png")
let hugeData = Data(count: 65 << 20)
let stored = images.set(hugeData, for: url)   // false: one value over the whole limit is not stored
images.purge(downTo: 16 << 20)                // make room on demand
