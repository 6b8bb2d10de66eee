import Foundation
import Hoard

let cache = try MemoryCache<String, Data>(configuration: .init(countLimit: 1_000))
cache["avatar"] = Data([0x89, 0x50, 0x4E, 0x47])
let avatar = cache["avatar"]          // Data?
cache["avatar"] = nil                 // removes
