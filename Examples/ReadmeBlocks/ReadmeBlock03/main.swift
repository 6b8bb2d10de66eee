#if Metrics
import Hoard
import HoardMetrics

var metered = Cache<Int, String>.Configuration(name: "users")
metered.timings = CacheMetrics.timings(cache: "users")   // fetch and store durations
let users = try Cache<Int, String>(configuration: metered)
let metrics = CacheMetrics(users)
metrics.update()          // or: await metrics.run(every: .seconds(10))
#endif
