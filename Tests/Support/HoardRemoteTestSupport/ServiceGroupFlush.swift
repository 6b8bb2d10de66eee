#if (Redis || Postgres) && ServiceLifecycle
import Foundation
import Hoard
import HoardServiceLifecycle
import Logging
import ServiceLifecycle

/// Runs `store` and a write-behind `Cache` over it in one `ServiceGroup` (the
/// store first, so that it shuts down last), writes `count` values through the
/// cache, triggers graceful shutdown and waits for the group; then reads every
/// key back through `reopened`, a fresh store on the same server.
///
/// - Returns: The keys whose value is missing or wrong afterwards (none when
///   every acknowledged write survived the shutdown).
public func writesLostAcrossGracefulShutdown(
    of store: some RemoteCacheStore & Service, reopened: some RemoteCacheStore, count: Int = 2_000
) async throws -> [String] {
    var configuration = Cache<String, String>.Configuration(name: "lifecycle")
    configuration.localStores = .none
    configuration.remoteStores = [store]
    let cache = try Cache<String, String>(configuration: configuration)
    let group = ServiceGroup(
        services: [store, CacheService(cache)], gracefulShutdownSignals: [],
        logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    let running = Task { try await group.run() }
    for key in 0..<count { cache["k\(key)"] = "v\(key)" }
    await group.triggerGracefulShutdown()
    try await running.value

    var lost: [String] = []
    for key in 0..<count {
        let stored = try await reopened.entry(for: "k\(key)", in: "lifecycle")
        if stored?.data != Data("v\(key)".utf8) { lost.append("k\(key)") }
    }
    return lost
}
#endif
