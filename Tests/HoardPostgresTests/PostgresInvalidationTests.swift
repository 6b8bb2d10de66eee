import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardPostgres

@Suite(
    "PostgresStore invalidations across instances",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(3)))
struct PostgresInvalidationTests {
    @Test("Another instance sees sets, removals and clears; the writer never sees its own; namespaces stay apart")
    func seenByOthersNotByWriter() async throws {
        let configuration = try PostgresTestServer.configuration()
        let writer = try PostgresStore(configuration: configuration)
        let reader = try PostgresStore(configuration: configuration)
        let seenByReader = InvalidationRecorder(reader.invalidations(in: "users"))
        let seenByWriter = InvalidationRecorder(writer.invalidations(in: "users"))
        let otherNamespace = InvalidationRecorder(reader.invalidations(in: "orders"))
        #expect(await waitUntilListening(writer))
        #expect(await waitUntilListening(reader))

        try await writer.set(Data([1]), for: "alice", in: "users", storedAt: .now, expiresAt: nil)
        try await writer.removeValue(for: "bob:1", in: "users")
        try await writer.set(Data([1]), for: String(repeating: "x", count: 9_000), in: "users", storedAt: .now, expiresAt: nil)
        try await writer.removeAll(in: "users")
        #expect(await seenByReader.wait(forCount: 4) == [.key("alice"), .key("bob:1"), .all, .all])

        // The reader writes last: the writer's first invalidation must be the reader's,
        // so none of its own four (sent earlier on the same channel) reached it.
        try await reader.set(Data([2]), for: "from-reader", in: "users", storedAt: .now, expiresAt: nil)
        #expect(await seenByWriter.wait(forCount: 1) == [.key("from-reader")])
        try await writer.set(Data([3]), for: "o1", in: "orders", storedAt: .now, expiresAt: nil)
        #expect(await otherNamespace.wait(forCount: 1) == [.key("o1")])
        #expect(seenByReader.all.count == 4, "nothing of orders reached users")

        seenByReader.cancel()
        otherNamespace.cancel()
        #expect(await eventually { !reader.isListening }, "the last stream to end stops listening")
        await writer.shutdown()
        await reader.shutdown()
        await PostgresTestServer.drop(configuration)
    }

    @Test("Shutdown finishes the streams, and a stream asked for after it ends at once")
    func shutdownFinishes() async throws {
        let store = try PostgresStore(configuration: try PostgresTestServer.configuration())
        let stream = store.invalidations(in: "ns")
        #expect(await waitUntilListening(store))
        await store.shutdown()
        for await _ in stream { Issue.record("nobody wrote: nothing should arrive") }
        for await _ in store.invalidations(in: "ns") { Issue.record("a stream after shutdown must be empty") }
        let result = await outcome { () async throws(PostgresStoreError) in try await store.entry(for: "k", in: "ns") }
        guard case .failure(let error) = result else {
            Issue.record("operations after shutdown must fail")
            return
        }
        #expect(error.code == .shutdown)
    }

    @Test("Two Caches in one process: a write through one drops the key from the other's memory")
    func twoCaches() async throws {
        let configuration = try PostgresTestServer.configuration()
        let firstStore = try PostgresStore(configuration: configuration)
        let secondStore = try PostgresStore(configuration: configuration)
        func cache(_ store: PostgresStore) throws -> Cache<String, String> {
            var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
            cacheConfiguration.localStores = .none
            cacheConfiguration.remoteStores = [store]
            return try Cache(configuration: cacheConfiguration)
        }
        let first = try cache(firstStore)
        let second = try cache(secondStore)
        #expect(await waitUntilListening(firstStore))
        #expect(await waitUntilListening(secondStore))

        try await first.set("v1", for: "k")
        #expect(try await second.value(for: "k") == "v1", "read from PostgreSQL, now in the second's memory")
        #expect(second["k"] == "v1")

        let events = second.events
        try await first.set("v2", for: "k")
        let invalidated = await firstEvent(in: events) { if case .invalidated("k") = $0 { true } else { false } }
        #expect(invalidated != nil, "the second cache dropped k")
        #expect(second["k"] == nil)
        #expect(try await second.value(for: "k") == "v2")

        let firstEvents = first.events
        try await second.removeValue(for: "k")
        #expect(await firstEvent(in: firstEvents) { if case .invalidated("k") = $0 { true } else { false } } != nil)
        #expect(first["k"] == nil)

        await firstStore.shutdown()
        await secondStore.shutdown()
        await PostgresTestServer.drop(configuration)
    }
}
