#if Postgres
import Foundation
import Hoard
import HoardRemoteTestSupport
import NIOCore
import NIOPosix
import PostgresNIO
import Testing

@testable import HoardPostgres

/// `PostgresStore.taskExecutor`: the pool's connections and each operation's work run
/// on the store's event loop, and tasks that prefer the executor run there too.
@Suite("PostgresStore on its own event loop")
struct PostgresStoreTaskExecutorTests {
    @Test(
        "The pool's connections run on the store's loop, the one loop passed as the group",
        .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage))
    func connectionsRunOnTheStoresLoop() async throws {
        // Given a group of two loops, and a store given the second one.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { group.shutdownGracefully { _ in } }
        let loops = Array(group.makeIterator())
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration, eventLoopGroup: loops[1])

        // When an operation runs, from an ordinary task, Then its connection is on
        // that loop. (Where the work after the answer runs is not asserted: the task
        // starts on the caller's thread, and when the answer arrives before it waits
        // for it, it goes on there without a hop, which a loaded machine makes happen.)
        #expect(store.eventLoop === loops[1])
        let connectionLoop = try await store.run("probe", key: nil) { connection in
            _ = try await connection.query("SELECT 1", logger: PostgresStore.silentLogger).collect()
            return connection.eventLoop
        }
        #expect(connectionLoop === loops[1])
        #expect(!loops[1].inEventLoop, "the caller itself resumes on its own executor")
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }

    @Test(
        "Reads, writes and 8 concurrent child tasks preferring the executor all run on the loop and see their own results",
        .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage))
    func operationsOnTheLoop() async throws {
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        // Exactly representable both as a Double and as timestamptz microseconds.
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000.5)

        let result = try await withTaskExecutorPreference(store.taskExecutor) {
            () async throws -> (onLoop: [Bool], entries: [String: StoredEntry], read: StoredEntry?) in
            var onLoop = [store.eventLoop.inEventLoop]
            for index in 1...4 {
                try await store.set(
                    Data("v\(index)".utf8), for: "k\(index)", in: "ns", storedAt: storedAt, expiresAt: nil)
                onLoop.append(store.eventLoop.inEventLoop)
            }
            let read = try await store.entry(for: "k1", in: "ns")
            onLoop.append(store.eventLoop.inEventLoop)
            // Eight concurrent reads share the pool; child tasks inherit the preference.
            let children = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        let entry = try await store.entry(for: "k\(index % 4 + 1)", in: "ns")
                        return entry?.data == Data("v\(index % 4 + 1)".utf8) && store.eventLoop.inEventLoop
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            onLoop += children
            let entries = try await store.entries(for: ["k1", "k2", "k3", "k4", "missing"], in: "ns")
            onLoop.append(store.eventLoop.inEventLoop)
            try await store.removeValue(for: "k4", in: "ns")
            onLoop.append(store.eventLoop.inEventLoop)
            return (onLoop, entries, read)
        }

        #expect(result.onLoop.count == 16)
        #expect(result.onLoop.allSatisfy { $0 }, "every step ran on the store's loop: \(result.onLoop)")
        #expect(result.read == StoredEntry(data: Data("v1".utf8), storedAt: storedAt, expiresAt: nil))
        #expect(result.entries.keys.sorted() == ["k1", "k2", "k3", "k4"])
        #expect(result.entries["k3"]?.data == Data("v3".utf8))
        #expect(try await store.entry(for: "k4", in: "ns") == nil, "the removal on the loop took effect")
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }

    @Test(
        "On the loop, a statement past commandTimeout fails with timeout, and the loop and the pool go on",
        .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage))
    func timeoutOnTheLoop() async throws {
        var configuration = try PostgresTestServer.configuration()
        let creator = try PostgresStore(configuration: configuration)
        try await creator.set(Data([7]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
        await creator.shutdown()
        configuration.commandTimeout = .milliseconds(200)
        let store = try PostgresStore(configuration: configuration)

        let (stuck, next, onLoop) = await withTaskExecutorPreference(store.taskExecutor) {
            // A body that never hears back, as from a server that stopped answering;
            // it waits without holding the loop, so the deadline timer can fire.
            let stuck = await outcome { () async throws(PostgresStoreError) in
                try await store.run("stuck", key: "k") { _ in try await Task.sleep(for: .seconds(60)) }
            }
            let next = await outcome { () async throws(PostgresStoreError) in try await store.entry(for: "k", in: "ns")
            }
            return (stuck, next, store.eventLoop.inEventLoop)
        }

        guard case .failure(let error) = stuck else {
            Issue.record("the stuck operation must time out")
            return
        }
        #expect(error.code == .timeout, "\(error)")
        #expect(error.key == "k")
        #expect((try? next.get())??.data == Data([7]), "the next operation on the loop works")
        #expect(onLoop)
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }

    @Test("On the loop, an unreachable server fails with connectionFailed and nothing else breaks")
    func unreachableOnTheLoop() async throws {
        var configuration = try PostgresStore.Configuration(
            url: "postgres://postgres@127.0.0.1:\(try await freePort())/postgres")
        configuration.connectionWaitTimeout = .milliseconds(500)
        let store = try PostgresStore(configuration: configuration)

        let (first, second, onLoop) = await withTaskExecutorPreference(store.taskExecutor) {
            let first = await outcome { () async throws(PostgresStoreError) in try await store.entry(for: "k", in: "ns")
            }
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
            #expect((error as? PostgresStoreError)?.code == .connectionFailed, "\(error)")
        }
        #expect(onLoop)
        await store.shutdown()
    }
}
#endif
