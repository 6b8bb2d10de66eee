#if Hummingbird && Redis
import Foundation
import Hoard
import HoardHummingbird
import HoardRedis
import Hummingbird
import ServiceLifecycle

// A Hummingbird server whose route `/item/:id` serves a slow upstream value (20 ms
// per call) through a cache. Benchmarks/scripts/wrk-server drives it with wrk.
//
//     swift run -c release --enable-all-traits HoardServer MODE [PORT]
//
// MODE: `none` (every request calls the upstream), `memory-persist` (Hummingbird's
// MemoryPersistDriver), `hoard-disk` (the Hoard PersistDriver over memory and a disk
// store), `hoard-redis` (over memory and the Redis server HOARD_REDIS_URL names), or
// `hoard-fetch` (a Hoard Cache over memory and disk with the upstream as its fetch
// closure: one upstream call per key however many requests wait for it).

/// The slow upstream.
func upstream(_ id: String) async throws -> String {
    try await Task.sleep(for: .milliseconds(20))
    return "value of \(id)"
}

let arguments = CommandLine.arguments.dropFirst()
let mode = arguments.first ?? "hoard-disk"
let port = arguments.dropFirst().first.flatMap(Int.init) ?? 8080
let storeDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-server-\(getpid())")
defer { try? FileManager.default.removeItem(at: storeDirectory) }

func hoardConfiguration() throws -> Cache<String, Data>.Configuration {
    var configuration = Cache<String, Data>.Configuration(name: "items")
    configuration.memory = .init(countLimit: 100_000)
    switch mode {
    case "hoard-redis":
        guard let url = ProcessInfo.processInfo.environment["HOARD_REDIS_URL"] else {
            throw HoardError(.invalidConfiguration, "hoard-redis needs HOARD_REDIS_URL")
        }
        configuration.localStores = .none
        configuration.remoteStores = [try RedisStore(configuration: .init(url: url))]
    default:
        configuration.localStores = .stores([try DiskStore(directory: storeDirectory)])
    }
    return configuration
}

let router = Router()
var services: [any Service] = []
switch mode {
case "none":
    router.get("/item/:id") { _, context -> String in try await upstream(try context.parameters.require("id")) }
case "hoard-fetch":
    var configuration = Cache<String, String>.Configuration(name: "items")
    configuration.memory = .init(countLimit: 100_000)
    configuration.localStores = .stores([try DiskStore(directory: storeDirectory)])
    configuration.defaultExpiry = .seconds(60)
    let cache = try Cache<String, String>(configuration: configuration) { id in try await upstream(id) }
    router.get("/item/:id") { _, context -> String in
        try await cache.value(for: try context.parameters.require("id")) ?? ""
    }
default:
    let persist: any PersistDriver
    switch mode {
    case "memory-persist": persist = MemoryPersistDriver()
    case "hoard-disk", "hoard-redis": persist = try HoardPersistDriver(configuration: try hoardConfiguration())
    default: fatalError("unknown mode \(mode): none, memory-persist, hoard-disk, hoard-redis or hoard-fetch")
    }
    services.append(persist)
    router.get("/item/:id") { _, context -> String in
        let id = try context.parameters.require("id")
        if let cached = try await persist.get(key: id, as: String.self) { return cached }
        let value = try await upstream(id)
        try await persist.set(key: id, value: value, expires: .seconds(60))
        return value
    }
}

let app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), services: services)
print("HoardServer (\(mode)) on 127.0.0.1:\(port)")
try await app.runService()
#else
print("HoardServer needs the package traits Hummingbird and Redis: swift run --enable-all-traits HoardServer")
#endif
