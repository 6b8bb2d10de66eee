#if Postgres
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
        try await writer.set(
            Data([1]), for: String(repeating: "x", count: 9_000), in: "users", storedAt: .now, expiresAt: nil)
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

    @Test(
        "write(_:) applies a batch in rounds of one statement: the last change to a key wins, every changed key is notified"
    )
    func batchWrite() async throws {
        let configuration = try PostgresTestServer.configuration()
        let writer = try PostgresStore(configuration: configuration)
        let reader = try PostgresStore(configuration: configuration)
        let seen = InvalidationRecorder(reader.invalidations(in: "batch"))
        let seenElsewhere = InvalidationRecorder(reader.invalidations(in: "batch-b"))
        #expect(await waitUntilListening(reader))
        try await writer.set(Data([9]), for: "before-clear", in: "batch", storedAt: .now, expiresAt: nil)
        try await writer.set(Data([9]), for: "removed-in-batch", in: "batch", storedAt: .now, expiresAt: nil)
        #expect(await seen.wait(forCount: 2).count == 2)

        let now = wholeMilliseconds()
        let later = now.addingTimeInterval(3_600)
        // More changes than one statement carries, so the batch spans two rounds; every
        // tenth goes to a second namespace.
        var batch: [CacheStoreWrite] = (0..<(PostgresStore.batchLimit + 10)).map {
            .set(
                Data([UInt8(truncatingIfNeeded: $0)]), for: "k\($0)", in: $0 % 10 == 5 ? "batch-b" : "batch",
                storedAt: now, expiresAt: $0 % 2 == 0 ? later : nil)
        }
        batch += [
            .set(Data([1]), for: "same", in: "batch", storedAt: now, expiresAt: nil),
            .set(Data([2]), for: "same", in: "batch", storedAt: now, expiresAt: later),
            .removeValue(for: "k0", in: "batch"),
            .removeValue(for: "removed-in-batch", in: "batch"),
            .removeValue(for: "revived", in: "batch"),
            .set(Data([4]), for: "revived", in: "batch", storedAt: now, expiresAt: nil),
            .set(Data([3]), for: "expired", in: "batch", storedAt: now, expiresAt: now - 1),
        ]
        try await writer.write(batch)

        #expect(
            try await reader.entry(for: "same", in: "batch")
                == StoredEntry(data: Data([2]), storedAt: now, expiresAt: later))
        #expect(
            try await reader.entry(for: "k1", in: "batch")
                == StoredEntry(data: Data([1]), storedAt: now, expiresAt: nil))
        #expect(
            try await reader.entry(for: "k2", in: "batch")
                == StoredEntry(data: Data([2]), storedAt: now, expiresAt: later))
        #expect(try await reader.entry(for: "k0", in: "batch") == nil)
        #expect(try await reader.entry(for: "removed-in-batch", in: "batch") == nil)
        #expect(try await reader.entry(for: "revived", in: "batch")?.data == Data([4]))
        #expect(try await reader.entry(for: "expired", in: "batch") == nil)
        #expect(try await reader.entry(for: "k5", in: "batch-b")?.data == Data([5]))
        #expect(try await reader.entry(for: "k5", in: "batch") == nil)
        let last = PostgresStore.batchLimit + 8  // in the second round, in "batch"
        #expect(try await reader.entry(for: "k\(last)", in: "batch")?.data == Data([UInt8(truncatingIfNeeded: last)]))
        // k1…k(limit + 9), "same", "revived", and "before-clear" from before.
        #expect(try await reader.usage().count == PostgresStore.batchLimit + 9 + 3, "one row per key")

        func keys(in namespace: String) -> Set<RemoteInvalidation> {
            Set(
                batch.compactMap { change in
                    switch change {
                    case .set(_, let key, namespace, _, _), .removeValue(let key, namespace): .key(key)
                    default: nil
                    }
                })
        }
        let expected = keys(in: "batch")
        let expectedElsewhere = keys(in: "batch-b")
        // One notification per key a round changed: k0 is in both rounds.
        let notified = await seen.wait(forCount: 2 + expected.count + 1)
        #expect(notified.count == 2 + expected.count + 1)
        #expect(Set(notified.dropFirst(2)) == expected)
        #expect(Set(await seenElsewhere.wait(forCount: expectedElsewhere.count)) == expectedElsewhere)

        // A removeAll in a batch runs after the changes before it and before those after.
        try await writer.write([
            .set(Data([1]), for: "before-clear", in: "batch", storedAt: now, expiresAt: nil),
            .removeAll(in: "batch"),
            .set(Data([2]), for: "after-clear", in: "batch", storedAt: now, expiresAt: nil),
        ])
        #expect(try await reader.entry(for: "before-clear", in: "batch") == nil)
        #expect(try await reader.entry(for: "after-clear", in: "batch")?.data == Data([2]))
        #expect(try await reader.entry(for: "k5", in: "batch-b")?.data == Data([5]), "the other namespace is untouched")

        seen.cancel()
        seenElsewhere.cancel()
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

        // The second hears of the first write before reading: an invalidation that
        // arrived while its read was in flight would (rightly) drop the promotion.
        let earlyEvents = second.events
        try await first.set("v1", for: "k")
        #expect(await firstEvent(in: earlyEvents) { if case .invalidated("k") = $0 { true } else { false } } != nil)
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
#endif
