#if Redis
import Foundation
import Hoard
import HoardRedis
import HoardRemoteTestSupport
import Testing

/// The README's Redis example, done as the README does it, so it cannot rot.
@Suite(
    "README Redis example",
    .enabled(
        if: RedisTestServer.isAvailable,
        "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
    .timeLimit(.minutes(10)))
struct RedisReadmeExamplesTests {
    @Test("RedisStore: configure from a URL, set, get, MGET, remove, clear, watch invalidations")
    func redisExample() async throws {
        var configuration = try RedisStore.Configuration(url: RedisTestServer.url!)
        configuration.keyPrefix = "shop-\(UUID().uuidString.prefix(8))"
        configuration.commandTimeout = .seconds(2)
        let store = try RedisStore(configuration: configuration)
        let otherInstance = try RedisStore(configuration: configuration)
        let memory = try MemoryCache<String, Data>()
        memory["user:7"] = Data([1])

        try await store.set(Data("Ada".utf8), for: "user:42", in: "profiles", storedAt: .now, expiresAt: .now + 300)
        let entry = try await store.entry(for: "user:42", in: "profiles")
        #expect(entry?.data == Data("Ada".utf8))
        let many = try await store.entries(for: ["user:1", "user:42"], in: "profiles")
        #expect(Array(many.keys) == ["user:42"])
        try await store.removeValue(for: "user:42", in: "profiles")
        #expect(try await store.entry(for: "user:42", in: "profiles") == nil)
        try await store.removeAll(in: "profiles")

        let watcher = Task {
            for await change in store.invalidations(in: "profiles") {
                switch change {
                case .key(let key): memory.removeValue(for: key)
                case .all, .missed: memory.removeAll()
                }
                return
            }
        }
        // Another instance's write reaches this one (retried until the subscription is live).
        #expect(
            await eventually {
                try? await otherInstance.set(Data([2]), for: "user:7", in: "profiles", storedAt: .now, expiresAt: nil)
                return memory["user:7"] == nil
            })
        watcher.cancel()
        await store.shutdown()
        await otherInstance.shutdown()
    }
}
#endif
