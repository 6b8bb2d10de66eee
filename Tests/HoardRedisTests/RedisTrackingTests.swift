#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import NIOCore
import Testing

@testable import HoardRedis

@Suite(
    "RedisStore server-assisted invalidation (CLIENT TRACKING)",
    .enabled(if: RedisChildServer.isAvailable, "needs redis-server on PATH"),
    .timeLimit(.minutes(3)))
struct RedisTrackingTests {
    /// Waits until the server counts `count` subscribers on `channel`.
    static func waitForSubscribers(_ count: Int, on channel: String, store: RedisStore) async -> Bool {
        await eventually {
            (try? await store.command("PUBSUB", "NUMSUB", channel))?.elements?.last == .integer(Int64(count))
        }
    }

    /// A cache whose only tier is `store`.
    static func cache(over store: RedisStore) throws -> Cache<String, String> {
        var configuration = Cache<String, String>.Configuration(name: "profiles")
        configuration.localStores = .none
        configuration.remoteStores = [store]
        return try Cache<String, String>(configuration: configuration)
    }

    @Test("A SET and a DEL by a plain client drop the key from a Cache's memory; the next read goes to Redis")
    func foreignWritesInvalidate() async throws {
        try await RedisChildServer.with { server in
            var configuration = server.configuration(prefix: "app")
            configuration.serverAssistedInvalidation = true
            let store = try RedisStore(configuration: configuration)
            let cache = try Self.cache(over: store)
            // The cache's stream subscribed; the tracking channel with it
            #expect(await Self.waitForSubscribers(1, on: "__redis__:invalidate", store: store))
            let plain = try RedisStore(configuration: server.configuration(prefix: "other"))

            try await cache.set("Ada", for: "user:1")
            try await cache.set("Bob", for: "user:2")
            // Its own writes come back too (the server cannot tell instances apart):
            // wait until they have, so that what follows is the plain client's doing.
            #expect(await eventually { cache["user:1"] == nil && cache["user:2"] == nil })
            #expect(try await cache.value(for: "user:1") == "Ada")
            #expect(try await cache.value(for: "user:2") == "Bob")
            #expect(cache["user:1"] == "Ada")

            // A plain client overwrites one key with bytes of its own and deletes another
            let events = cache.events
            let key1 = String(buffer: store.keyspace.key("user:1", in: "profiles"))
            let key2 = String(buffer: store.keyspace.key("user:2", in: "profiles"))
            #expect(try await plain.command("SET", key1, "written by another service") == .simpleString("OK"))
            #expect(await firstEvent(in: events) { if case .invalidated("user:1") = $0 { true } else { false } } != nil)
            #expect(cache["user:1"] == nil, "memory dropped the key")
            #expect(try await cache.value(for: "user:1") == nil, "Redis holds no value in Hoard's format any more")

            let more = cache.events
            #expect(try await plain.command("DEL", key2) == .integer(1))
            #expect(await firstEvent(in: more) { if case .invalidated("user:2") = $0 { true } else { false } } != nil)
            #expect(cache["user:2"] == nil)
            #expect(try await cache.value(for: "user:2") == nil)

            await plain.shutdown()
            await store.shutdown()
        }
    }

    @Test("Without it, a plain client's write is not reported; a flush is reported as everything when it is on")
    func offByDefaultAndFlush() async throws {
        try await RedisChildServer.with { server in
            let untracked = try RedisStore(configuration: server.configuration(prefix: "app"))
            var configuration = server.configuration(prefix: "app")
            configuration.serverAssistedInvalidation = true
            let tracked = try RedisStore(configuration: configuration)
            let seenUntracked = InvalidationRecorder(untracked.invalidations(in: "ns"))
            let seenTracked = InvalidationRecorder(tracked.invalidations(in: "ns"))
            defer {
                seenUntracked.cancel()
                seenTracked.cancel()
            }
            #expect(await Self.waitForSubscribers(1, on: "__redis__:invalidate", store: tracked))
            #expect(
                await Self.waitForSubscribers(
                    2, on: String(buffer: tracked.keyspace.channel(for: "ns")), store: tracked))

            let key = String(buffer: tracked.keyspace.key("k", in: "ns"))
            let elsewhere = String(buffer: tracked.keyspace.key("k", in: "elsewhere"))
            _ = try await untracked.command("SET", elsewhere, "x")  // another namespace: not for "ns"
            _ = try await untracked.command("SET", "unrelated:key", "x")  // outside the prefix
            _ = try await untracked.command("SET", key, "x")
            #expect(await seenTracked.wait(forCount: 1) == [.key("k")])
            _ = try await untracked.command("FLUSHDB")
            #expect(await seenTracked.wait(forCount: 2) == [.key("k"), .all])

            // The untracked store heard nothing of either: a message through Hoard
            // reaches it, and is the first it sees.
            try await tracked.set(Data([1]), for: "via-hoard", in: "ns", storedAt: .now, expiresAt: nil)
            #expect(await seenUntracked.wait(forCount: 1) == [.key("via-hoard")])
            await untracked.shutdown()
            await tracked.shutdown()
        }
    }

}
#endif
