#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import HoardRedis

/// `RedisStore.taskExecutor`: tasks that prefer it run on the store's event loop, the
/// loop of every pooled connection, and the store's operations resume them there.
@Suite("RedisStore on its own event loop", .timeLimit(.minutes(10)))
struct RedisStoreTaskExecutorTests {
    @Test("The pool's connections run on the store's event loop, the one loop passed as the group")
    func connectionsRunOnTheStoresLoop() async throws {
        // Given a group of two loops, and a store given the second one.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { group.shutdownGracefully { _ in } }
        let loops = Array(group.makeIterator())
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(port: server.port), eventLoopGroup: loops[1])
        defer { Task { await store.shutdown() } }

        // When a connection is opened, Then it is on that loop.
        #expect(store.eventLoop === loops[1])
        let connectionLoop = try await store.pool.withConnection { connection throws(RedisError) in
            connection.channel.eventLoop
        }
        #expect(connectionLoop === loops[1])
    }

    @Test(
        "Reads, writes and 16 concurrent child tasks preferring the executor all run on the loop and see their own results",
        .enabled(
            if: RedisTestServer.isAvailable,
            "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"))
    func operationsStayOnTheLoop() async throws {
        let store = try RedisStore(configuration: RedisTestServer.configuration())
        defer { Task { await store.shutdown() } }
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000)

        let result = try await withTaskExecutorPreference(store.taskExecutor) {
            () async throws -> (onLoop: [Bool], entries: [String: StoredEntry], read: StoredEntry?) in
            var onLoop = [store.eventLoop.inEventLoop]
            try await store.set(Data("one".utf8), for: "k1", in: "ns", storedAt: storedAt, expiresAt: nil)
            onLoop.append(store.eventLoop.inEventLoop)
            try await store.write(
                (2...4).map { .set(Data("v\($0)".utf8), for: "k\($0)", in: "ns", storedAt: storedAt, expiresAt: nil) })
            onLoop.append(store.eventLoop.inEventLoop)
            let read = try await store.entry(for: "k1", in: "ns")
            onLoop.append(store.eventLoop.inEventLoop)
            // Sixteen concurrent reads share the connection; child tasks inherit the preference.
            let children = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        let entry = try await store.entry(for: "k\(index % 4 + 1)", in: "ns")
                        return entry != nil && store.eventLoop.inEventLoop
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            onLoop += children
            let entries = try await store.entries(for: ["k1", "k2", "k3", "k4", "missing"], in: "ns")
            onLoop.append(store.eventLoop.inEventLoop)
            return (onLoop, entries, read)
        }

        #expect(result.onLoop.count == 21)
        #expect(result.onLoop.allSatisfy { $0 })
        #expect(result.read == StoredEntry(data: Data("one".utf8), storedAt: storedAt, expiresAt: nil))
        #expect(result.entries.keys.sorted() == ["k1", "k2", "k3", "k4"])
        #expect(result.entries["k3"]?.data == Data("v3".utf8))
        // Outside the preference the caller is back on the concurrency pool.
        #expect(!store.eventLoop.inEventLoop)
    }

    @Test(
        "On the loop, a command the server never answers times out with the same error, and the caller resumes on the loop"
    )
    func timeoutOnTheLoop() async throws {
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(port: server.port, commandTimeout: .milliseconds(200)))
        defer { Task { await store.shutdown() } }

        let (result, onLoop) = await withTaskExecutorPreference(store.taskExecutor) {
            let result = await outcome { () async throws(RedisError) in try await store.entry(for: "slow", in: "ns") }
            return (result, store.eventLoop.inEventLoop)
        }

        guard case .failure(let error) = result else {
            Issue.record("the read should have timed out")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.key == "slow")
        #expect(onLoop)
    }

    @Test("On the loop, an unreachable server fails with connectionFailed and nothing else breaks")
    func unreachableOnTheLoop() async throws {
        let port = try await freePort()
        let store = try RedisStore(configuration: .init(port: port, connectTimeout: .seconds(5)))
        defer { Task { await store.shutdown() } }

        let (first, second, onLoop) = await withTaskExecutorPreference(store.taskExecutor) {
            let first = await outcome { () async throws(RedisError) in try await store.entry(for: "k", in: "ns") }
            // (`set` also throws HoardError, for dates no store can keep.)
            let second = await outcome { () async throws in
                try await store.set(Data(), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
            }
            return (first, second, store.eventLoop.inEventLoop)
        }

        for result in [first.map { _ in () }.mapError { $0 as any Error }, second] {
            guard case .failure(let error) = result else {
                Issue.record("an operation against a closed port should fail")
                continue
            }
            #expect((error as? RedisError)?.code == .connectionFailed, "\(error)")
        }
        #expect(onLoop)
    }
}
#endif
