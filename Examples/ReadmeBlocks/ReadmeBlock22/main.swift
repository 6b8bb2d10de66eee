#if Redis
import HoardRedis

let configuration = try RedisStore.Configuration(url: "redis+cluster://10.0.0.1:7000,10.0.0.2:7000")
let clustered = try RedisStore(configuration: configuration)
#endif
