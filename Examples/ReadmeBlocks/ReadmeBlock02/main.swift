#if ServiceLifecycle
import Hoard
import HoardServiceLifecycle
import Logging
import ServiceLifecycle

let logger = Logger(label: "app")
var configuration = Cache<Int, String>.Configuration(name: "profiles")
configuration.logger = logger
let profiles = try Cache<Int, String>(configuration: configuration)
let group = ServiceGroup(
    services: [CacheService(profiles)], gracefulShutdownSignals: [.sigterm], logger: logger)
// try await group.run()   // serves until SIGTERM, then flushes what the cache still queues
#endif
