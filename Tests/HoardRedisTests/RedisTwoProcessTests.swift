#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardRedis

@Suite(
    "RedisStore invalidation between two processes",
    .enabled(
        if: RedisTestServer.isAvailable,
        "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
    .timeLimit(.minutes(3)))
struct RedisTwoProcessTests {
    @Test("A child process's write and removal drop the key from this process's Cache memory")
    func childWritesDropParentMemory() async throws {
        let prefix = "hoard-2p-\(UUID().uuidString.prefix(8))"
        let store = try RedisStore(configuration: try RedisTestServer.configuration(prefix: prefix))
        let channel = String(buffer: store.keyspace.channel(for: "profiles"))
        try await Self.childWritesDropParentMemory(store: store, url: RedisTestServer.url!, prefix: prefix) {
            try await store.command("PUBSUB", "NUMSUB", channel).elements?.last == .integer(1)
        }
    }

    /// A Cache over `store` in this process and one in a child process on the same
    /// server (`url`, key prefix `prefix`): the child's set and removal drop the key
    /// from this process's memory, and the next read goes to Redis.
    ///
    /// - Parameter subscribed: Whether the server counts this store's subscription.
    static func childWritesDropParentMemory(
        store: RedisStore, url: String, prefix: String, subscribed: @escaping () async throws -> Bool
    ) async throws {
        var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
        cacheConfiguration.localStores = .none
        cacheConfiguration.remoteStores = [store]
        let cache = try Cache<String, String>(configuration: cacheConfiguration)
        // The cache subscribed at once; wait until the server counts it.
        #expect(try await eventually { try await subscribed() })
        try await cache.set("parent", for: "k")
        #expect(cache["k"] == "parent")

        let child = try await RemoteWriterProcess(url: url, cacheName: "profiles", table: prefix)
        let events = cache.events
        #expect(try await child.send("set k child") == "ok set k")
        let dropped = await firstEvent(in: events) { if case .invalidated("k") = $0 { true } else { false } }
        #expect(dropped != nil, "the child's write reached this process")
        #expect(cache["k"] == nil, "memory dropped the key")
        #expect(try await cache.value(for: "k") == "child", "the next read goes to Redis")

        let moreEvents = cache.events
        #expect(try await child.send("remove k") == "ok remove k")
        #expect(await firstEvent(in: moreEvents) { if case .invalidated("k") = $0 { true } else { false } } != nil)
        #expect(cache["k"] == nil)
        #expect(try await cache.value(for: "k") == nil)

        await child.stop()
        try await cache.clear()
        await store.shutdown()
    }
}
#endif
