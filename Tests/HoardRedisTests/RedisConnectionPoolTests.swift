#if Redis
import Foundation
import HoardNIOSupport
import HoardRemoteTestSupport
import Testing

@testable import HoardRedis

@Suite("Redis connection pool: bounds, waiting, backoff, replacing lost connections", .timeLimit(.minutes(10)))
struct RedisConnectionPoolTests {
    @Test("Ten concurrent operations on a pool of two connections open exactly two; the other eight wait in line")
    func boundedPoolQueuesWaiters() async throws {
        // Given a server that never answers, so every operation keeps its connection.
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        let store = try RedisStore(
            configuration: .init(
                port: server.port, maximumConnections: 2, pipeliningLimit: 1, commandTimeout: .seconds(120),
                connectionWaitTimeout: .seconds(120)))

        // When ten operations start at once.
        let operations = (0..<10).map { index in
            Task { await outcome { () async throws(RedisError) in try await store.entry(for: "k\(index)", in: "ns") } }
        }

        // Then two hold the two connections and eight wait; no third connection is opened.
        #expect(
            await eventually {
                let load = await store.pool.load
                return load.connections == 2 && load.operations == 2 && load.waiters == 8
            })
        #expect(server.accepted == 2)

        // Shutting down fails the waiters with shutdown and the two in flight with connectionClosed.
        await store.shutdown()
        var codes: [RedisError.Code: Int] = [:]
        for operation in operations {
            if case .failure(let error) = await operation.value { codes[error.code, default: 0] += 1 }
        }
        #expect(codes == [.shutdown: 8, .connectionClosed: 2])
        #expect(server.accepted == 2)
    }

    @Test(
        "Forty concurrent writes through two connections all succeed; the waiters reuse them instead of opening more",
        .enabled(
            if: RedisChildServer.isAvailable,
            "needs redis-server on PATH or HOARD_REDIS_SERVER (scripts/test installs it)"))
    func waitersAreServedByTheBoundedConnections() async throws {
        try await RedisChildServer.with { server in
            var configuration = server.configuration()
            configuration.maximumConnections = 2
            configuration.pipeliningLimit = 1
            // What is tested is reuse, not time: a waiter may wait as long as a
            // loaded CI machine stalls the test process (the default is 5 s).
            configuration.connectionWaitTimeout = .seconds(300)
            let store = try RedisStore(configuration: configuration)
            defer { Task { await store.shutdown() } }
            let before = try await connectionsReceived(store)

            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        try await store.set(
                            Data([UInt8(index)]), for: "k\(index)", in: "ns", storedAt: .now, expiresAt: nil)
                    }
                }
                try await group.waitForAll()
            }

            #expect(try await store.entries(for: (0..<40).map { "k\($0)" }, in: "ns").count == 40)
            // The server (this test's own) accepted one more connection, the pool's second.
            #expect(try await connectionsReceived(store) - before == 1)
            #expect(await store.pool.load.connections == 2)
        }
    }

    /// The server's `total_connections_received`.
    private func connectionsReceived(_ store: RedisStore) async throws -> Int {
        let info = try #require(try await store.command("INFO", "stats").string)
        let line = try #require(
            info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("total_connections_received:") })
        return try #require(Int(line.split(separator: ":")[1]))
    }

    @Test("After a failed attempt the pool waits out its backoff: operations fail at once, without new attempts")
    func backoffAfterFailedAttempt() async throws {
        // Given a server that closes every connection at once, and a password, so that
        // setting up a connection (AUTH) fails.
        let server = try await SilentServer(closesAtOnce: true)
        defer { Task { await server.close() } }
        var configuration = RedisStore.Configuration(port: server.port, password: "pw")
        configuration.initialReconnectDelay = .seconds(3_600)
        configuration.maximumReconnectDelay = .seconds(7_200)
        let store = try RedisStore(configuration: configuration)
        defer { Task { await store.shutdown() } }

        // When the first operation fails to connect.
        let first = await outcome { () async throws(RedisError) in try await store.entry(for: "k", in: "ns") }
        guard case .failure(let firstError) = first else {
            Issue.record("connecting to a server that hangs up should fail")
            return
        }
        #expect([.connectionClosed, .connectionFailed].contains(firstError.code), "\(firstError)")
        #expect(server.accepted == 1)

        // Then the next operations fail at once with connectionFailed, saying when the
        // next attempt is, and the server sees no new connection.
        for _ in 0..<5 {
            let result = await outcome { () async throws(RedisError) in try await store.entry(for: "k", in: "ns") }
            guard case .failure(let error) = result else {
                Issue.record("an operation during the backoff should fail")
                continue
            }
            #expect(error.code == .connectionFailed)
            #expect(error.description.contains("next attempt is in"), "\(error)")
            #expect(error.underlying != nil, "the last attempt's failure is attached")
        }
        #expect(server.accepted == 1)
    }

    @Test("The backoff starts at the initial delay, doubles after each failure, and stops at the maximum")
    func backoffSchedule() {
        let delays = (1...8).map {
            ReconnectBackoff.delay(afterFailures: $0, initial: .milliseconds(100), maximum: .seconds(2))
        }
        #expect(delays == [100, 200, 400, 800, 1_600, 2_000, 2_000, 2_000].map { .milliseconds($0) })
        // Huge failure counts do not overflow.
        #expect(
            ReconnectBackoff.delay(afterFailures: 10_000, initial: .milliseconds(100), maximum: .seconds(10))
                == .seconds(10))
        // The stateful form every connection uses: a success starts over.
        var backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(2))
        let first = backoff.fail()
        let second = backoff.fail()
        backoff.succeed()
        let afterSuccess = backoff.fail()
        #expect([first, second, afterSuccess] == [.milliseconds(100), .milliseconds(200), .milliseconds(100)])
    }

    @Test(
        "A connection the server drops is replaced: later operations succeed on a new connection",
        .enabled(
            if: RedisTestServer.isAvailable,
            "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"))
    func droppedConnectionIsReplaced() async throws {
        var configuration = try RedisTestServer.configuration()
        configuration.maximumConnections = 1
        let store = try RedisStore(configuration: configuration)
        let admin = try RedisStore(configuration: configuration)
        defer {
            Task {
                await store.shutdown()
                await admin.shutdown()
            }
        }
        try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
        guard case .integer(let id) = try await store.command("CLIENT", "ID") else {
            Issue.record("CLIENT ID should answer an integer")
            return
        }

        // When the server drops the store's only connection.
        #expect(try await admin.command("CLIENT", "KILL", "ID", String(id)) == .integer(1))

        // Then, at worst after one failed operation, the store answers on a new connection.
        #expect(await eventually { (try? await store.entry(for: "k", in: "ns"))??.data == Data([1]) })
        guard case .integer(let newID) = try await store.command("CLIENT", "ID") else {
            Issue.record("CLIENT ID should answer an integer")
            return
        }
        #expect(newID != id)
        #expect(await store.pool.load.connections == 1)
        try await store.removeAll(in: "ns")
    }
}
#endif
