import Foundation
import Hoard

var configuration = MemoryCache<URL, Data>.Configuration(costLimit: ProcessMemory.fraction(0.1))
configuration.memoryPressure = .init(warningFraction: 0.25, criticalFraction: 0)  // keep a quarter on a warning
let thumbnails = try MemoryCache<URL, Data>(configuration: configuration)
