#if Postgres
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardPostgres

@Suite(
    "PostgresStore invalidation between two processes",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(3)))
struct PostgresTwoProcessTests {
    @Test("A child process's write and removal drop the key from this process's Cache memory")
    func childWritesDropParentMemory() async throws {
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
        cacheConfiguration.localStores = .none
        cacheConfiguration.remoteStores = [store]
        let cache = try Cache<String, String>(configuration: cacheConfiguration)
        #expect(await waitUntilListening(store))
        try await cache.set("parent", for: "k")
        #expect(cache["k"] == "parent")

        let child = try await RemoteWriterProcess(
            url: PostgresTestServer.url!, cacheName: "profiles", table: configuration.table)
        let events = cache.events
        #expect(try await child.send("set k child") == "ok set k")
        let dropped = await firstEvent(in: events) { if case .invalidated("k") = $0 { true } else { false } }
        #expect(dropped != nil, "the child's write reached this process")
        #expect(cache["k"] == nil, "memory dropped the key")
        #expect(try await cache.value(for: "k") == "child", "the next read goes to PostgreSQL")

        let moreEvents = cache.events
        #expect(try await child.send("remove k") == "ok remove k")
        #expect(await firstEvent(in: moreEvents) { if case .invalidated("k") = $0 { true } else { false } } != nil)
        #expect(cache["k"] == nil)
        #expect(try await cache.value(for: "k") == nil)

        await child.stop()
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }
}
#endif
