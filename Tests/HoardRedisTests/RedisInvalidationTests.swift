#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardRedis

@Suite(
    "RedisStore invalidations across instances",
    .enabled(
        if: RedisTestServer.isAvailable,
        "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
    .timeLimit(.minutes(10)))
struct RedisInvalidationTests {
    /// Waits until the server counts `count` subscribers on the namespace's channel.
    private func waitForSubscribers(_ count: Int, store: RedisStore, namespace: String) async throws -> Bool {
        let channel = String(buffer: store.keyspace.channel(for: namespace))
        return try await eventually {
            let reply = try await store.command("PUBSUB", "NUMSUB", channel)
            return reply.elements?.last == .integer(Int64(count))
        }
    }

    @Test("Another instance sees sets, removals and removeAll; the writer never sees its own")
    func seenByOthersNotByWriter() async throws {
        let configuration = try RedisTestServer.configuration()
        let writer = try RedisStore(configuration: configuration)
        let reader = try RedisStore(configuration: configuration)
        defer {
            Task {
                await writer.shutdown()
                await reader.shutdown()
            }
        }

        let seenByReader = InvalidationRecorder(reader.invalidations(in: "users"))
        let seenByWriter = InvalidationRecorder(writer.invalidations(in: "users"))
        let otherNamespace = InvalidationRecorder(reader.invalidations(in: "orders"))
        defer {
            seenByReader.cancel()
            seenByWriter.cancel()
            otherNamespace.cancel()
        }
        #expect(try await waitForSubscribers(2, store: writer, namespace: "users"))
        #expect(try await waitForSubscribers(1, store: writer, namespace: "orders"))

        try await writer.set(Data([1]), for: "alice", in: "users", storedAt: .now, expiresAt: nil)
        try await writer.removeValue(for: "bob:1", in: "users")
        try await writer.removeAll(in: "users")
        #expect(await seenByReader.wait(forCount: 3) == [.key("alice"), .key("bob:1"), .all])

        // The reader writes last: the writer's first invalidation must be the reader's,
        // so none of its own three (published earlier on the same channel) reached it.
        try await reader.set(Data([2]), for: "from-reader", in: "users", storedAt: .now, expiresAt: nil)
        #expect(await seenByWriter.wait(forCount: 1) == [.key("from-reader")])
        #expect(seenByReader.all.count == 3)
        // Nothing crossed into the other namespace.
        try await writer.set(Data([3]), for: "o1", in: "orders", storedAt: .now, expiresAt: nil)
        #expect(await otherNamespace.wait(forCount: 1) == [.key("o1")])
    }

    @Test("write(_:) applies a batch in order, pipelined: the last change to a key wins, each change is announced")
    func batchWrite() async throws {
        let configuration = try RedisTestServer.configuration()
        let writer = try RedisStore(configuration: configuration)
        let reader = try RedisStore(configuration: configuration)
        defer {
            Task {
                await writer.shutdown()
                await reader.shutdown()
            }
        }
        let seen = InvalidationRecorder(reader.invalidations(in: "batch"))
        let seenElsewhere = InvalidationRecorder(reader.invalidations(in: "batch-b"))
        defer {
            seen.cancel()
            seenElsewhere.cancel()
        }
        #expect(try await waitForSubscribers(1, store: writer, namespace: "batch"))
        #expect(try await waitForSubscribers(1, store: writer, namespace: "batch-b"))

        let now = Date()
        // More changes than one round trip carries, so the batch spans several; every
        // tenth goes to a second namespace, so rounds announce to two channels.
        var batch: [CacheStoreWrite] = (0..<(RedisStore.pipelineLimit + 10)).map {
            .set(
                Data([UInt8(truncatingIfNeeded: $0)]), for: "k\($0)", in: $0 % 10 == 5 ? "batch-b" : "batch",
                storedAt: now, expiresAt: nil)
        }
        batch += [
            .set(Data([1]), for: "same", in: "batch", storedAt: now, expiresAt: nil),
            .set(Data([2]), for: "same", in: "batch", storedAt: now, expiresAt: nil),
            .removeValue(for: "k0", in: "batch"),
            .set(Data([3]), for: "expired", in: "batch", storedAt: now, expiresAt: now - 1),
        ]
        try await writer.write(batch)

        #expect(try await reader.entry(for: "same", in: "batch")?.data == Data([2]))
        #expect(try await reader.entry(for: "k0", in: "batch") == nil)
        #expect(try await reader.entry(for: "k1", in: "batch")?.data == Data([1]))
        #expect(try await reader.entry(for: "k5", in: "batch-b")?.data == Data([5]))
        #expect(try await reader.entry(for: "k5", in: "batch") == nil)
        let last = RedisStore.pipelineLimit + 8  // in the second round, in "batch"
        #expect(try await reader.entry(for: "k\(last)", in: "batch")?.data == Data([UInt8(truncatingIfNeeded: last)]))
        #expect(try await reader.entry(for: "expired", in: "batch") == nil)

        func keys(in namespace: String) -> [RemoteInvalidation] {
            batch.compactMap { change in
                switch change {
                case .set(_, let key, namespace, _, _), .removeValue(let key, namespace): .key(key)
                default: nil
                }
            }
        }
        let expected = keys(in: "batch")
        let expectedElsewhere = keys(in: "batch-b")
        #expect(await seen.wait(forCount: expected.count) == expected, "every key, in the order of the batch")
        #expect(await seenElsewhere.wait(forCount: expectedElsewhere.count) == expectedElsewhere)
    }

    @Test("When its last stream ends, the store unsubscribes; shutdown finishes the streams")
    func unsubscribeAndShutdown() async throws {
        let configuration = try RedisTestServer.configuration()
        let store = try RedisStore(configuration: configuration)
        let observer = try RedisStore(configuration: configuration)
        defer { Task { await observer.shutdown() } }

        let first = InvalidationRecorder(store.invalidations(in: "ns"))
        #expect(try await waitForSubscribers(1, store: observer, namespace: "ns"))
        first.cancel()
        #expect(try await waitForSubscribers(0, store: observer, namespace: "ns"))

        let stream = store.invalidations(in: "ns")
        #expect(try await waitForSubscribers(1, store: observer, namespace: "ns"))
        await store.shutdown()
        // The stream ends, and nothing reached it: nobody wrote, and no reconnection happened.
        var buffered: [RemoteInvalidation] = []
        for await invalidation in stream { buffered.append(invalidation) }
        #expect(buffered.isEmpty)
        #expect(try await waitForSubscribers(0, store: observer, namespace: "ns"))
        await #expect(throws: RedisError.self) { try await store.entry(for: "k", in: "ns") }
    }
}
#endif
