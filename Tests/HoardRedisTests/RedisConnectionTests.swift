#if Redis
import Foundation
import HoardRemoteTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import HoardRedis

@Suite("Redis connections: pipelining, timeouts, errors")
struct RedisConnectionTests {
    private func settings(port: Int, commandTimeout: Duration = .seconds(5), password: String? = nil)
        -> _RedisConnection.Settings
    {
        var configuration = RedisStore.Configuration(port: port, password: password, commandTimeout: commandTimeout)
        configuration.connectTimeout = .seconds(2)
        return configuration.connectionSettings
    }

    @Test(
        "A server that accepts and never answers: the command times out and the connection closes",
        .timeLimit(.minutes(10)))
    func timeoutAgainstSilentServer() async throws {
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        let connection = try await _RedisConnection.connect(
            settings: settings(port: server.port, commandTimeout: .milliseconds(200)),
            group: MultiThreadedEventLoopGroup.singleton)

        let started = ContinuousClock.now
        async let first = outcome { () async throws(RedisError) in try await connection.send(_RedisCommand("GET", "a"))
        }
        async let second = outcome { () async throws(RedisError) in
            try await connection.send(_RedisCommand("GET", "b"), timeout: .seconds(120))
        }
        let (firstResult, secondResult) = await (first, second)
        let elapsed = ContinuousClock.now - started

        #expect(throws: RedisError.self) { try firstResult.get() }
        if case .failure(let error) = firstResult {
            #expect(error.code == .timeout)
            #expect(error.command == "GET")
            #expect(error.description.contains("did not answer GET within 200 ms"))
        }
        // The command behind it fails too, at once, instead of waiting its own 30 s.
        if case .failure(let error) = secondResult {
            #expect(error.code == .connectionClosed)
            #expect(error.description.contains("timed out"))
        } else {
            Issue.record("the second command should have failed")
        }
        // (The codes show that nothing waited for the second command's own 120 s timeout;
        // elapsed time is only printed, since a busy machine can stall any task.)
        print("silent server: both commands failed after \(elapsed)")
        #expect(await eventually { !connection.isActive })
        // Later commands fail at once.
        await #expect(throws: RedisError.self) { try await connection.send(_RedisCommand("PING")) }
    }

    @Test("AUTH against a server that never answers times out while connecting", .timeLimit(.minutes(10)))
    func handshakeTimeout() async throws {
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        do {
            _ = try await _RedisConnection.connect(
                settings: settings(port: server.port, commandTimeout: .milliseconds(200), password: "pw"),
                group: MultiThreadedEventLoopGroup.singleton)
            Issue.record("connect should have failed")
        } catch {
            #expect(error.code == .timeout)
            #expect(error.command == "AUTH")
        }
    }

    @Test("Nothing listening: connectionFailed naming the address", .timeLimit(.minutes(10)))
    func connectionRefused() async throws {
        let port = try await freePort()
        do {
            _ = try await _RedisConnection.connect(
                settings: settings(port: port), group: MultiThreadedEventLoopGroup.singleton)
            Issue.record("connect should have failed")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.description.contains("127.0.0.1:\(port)"))
            #expect(error.underlying != nil)
        }
    }

    @Test("A store against a silent server: the timeout names the command and the key", .timeLimit(.minutes(10)))
    func storeTimeout() async throws {
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(port: server.port, commandTimeout: .milliseconds(200)))
        defer { Task { await store.shutdown() } }
        do {
            _ = try await store.entry(for: "slow", in: "ns")
            Issue.record("the read should have timed out")
        } catch {
            #expect(error.code == .timeout)
            #expect(error.key == "slow")
            #expect(error.command == "GET")
        }
        // Every other operation is bounded too; each opens a new connection, since a
        // timeout closes the one it happened on.
        // (`set` also throws HoardError, for dates no store can keep.)
        let operations: [(command: String, run: () async throws -> Void)] = [
            ("MGET", { _ = try await store.entries(for: ["a", "b"], in: "ns") }),
            ("SET", { try await store.set(Data([1]), for: "a", in: "ns", storedAt: .now, expiresAt: nil) }),
            ("UNLINK", { try await store.removeValue(for: "a", in: "ns") }),
            ("SCAN", { try await store.removeAll(in: "ns") }),
        ]
        for operation in operations {
            if case .failure(let failure) = await outcome(operation.run) {
                let error = failure as? RedisError
                #expect(error?.code == .timeout, "\(operation.command): \(failure)")
                #expect(error?.command == operation.command)
            } else {
                Issue.record("\(operation.command) against a silent server should have timed out")
            }
        }
    }

    @Test("A full pool makes the next caller wait, then fail with poolExhausted", .timeLimit(.minutes(10)))
    func poolExhaustion() async throws {
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        // The command timeout is far longer than the wait, so poolExhausted can only come from the wait.
        let store = try RedisStore(
            configuration: .init(
                port: server.port, maximumConnections: 1, pipeliningLimit: 1, commandTimeout: .seconds(120),
                connectionWaitTimeout: .milliseconds(200)))

        async let slow = outcome { () async throws(RedisError) in try await store.entry(for: "slow", in: "ns") }
        // Let the first operation take the only connection.
        #expect(await eventually { await store.pool.load.operations == 1 })
        let started = ContinuousClock.now
        do {
            _ = try await store.entry(for: "waiting", in: "ns")
            Issue.record("the second operation should not have found room")
        } catch {
            #expect(error.code == .poolExhausted)
            #expect(error.key == "waiting")
            #expect(error.description.contains("busy"))
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(150), "it waited the 200 ms before giving up")

        // Shutting down fails the operation still in flight at once.
        await store.shutdown()
        if case .failure(let error) = await slow {
            #expect(error.code == .connectionClosed)
        } else {
            Issue.record("the first operation should have failed")
        }
    }

    @Test("Cancelling a caller that waits for a connection ends its wait with cancelled", .timeLimit(.minutes(10)))
    func cancelledWaiter() async throws {
        let server = try await SilentServer()
        defer { Task { await server.close() } }
        let store = try RedisStore(
            configuration: .init(
                port: server.port, maximumConnections: 1, pipeliningLimit: 1, commandTimeout: .seconds(120),
                connectionWaitTimeout: .seconds(120)))
        async let slow = outcome { () async throws(RedisError) in try await store.entry(for: "slow", in: "ns") }
        #expect(await eventually { await store.pool.load.operations == 1 })

        let waiter = Task {
            await outcome { () async throws(RedisError) in try await store.entry(for: "waiting", in: "ns") }
        }
        #expect(await eventually { await store.pool.load.waiters == 1 })
        waiter.cancel()
        if case .failure(let error) = await waiter.value {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("the cancelled caller should have failed")
        }
        #expect(await store.pool.load.waiters == 0)
        await store.shutdown()
        _ = await slow
    }

    @Test(
        "1,000 concurrent commands pipelined on one connection each get their own reply",
        .enabled(
            if: RedisTestServer.isAvailable,
            "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
        .timeLimit(.minutes(10)))
    func pipelining() async throws {
        let configuration = try RedisTestServer.configuration()
        let marker = "pipeline-\(UUID().uuidString)"
        let monitor = try await CommandMonitor(configuration: configuration, marker: marker)
        defer { monitor.close() }
        let connection = try await _RedisConnection.connect(
            settings: configuration.connectionSettings, group: MultiThreadedEventLoopGroup.singleton)
        defer { connection.close() }

        let mismatches = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    let reply = try await connection.send(_RedisCommand("ECHO", .string("\(marker)-\(index)")))
                    return reply.string == "\(marker)-\(index)"
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 0 : 1) }
        }
        #expect(mismatches == 0)
        // The server saw all of them, from one client address.
        #expect(await eventually { monitor.seen.count >= 1_000 })
        let clients = Set(
            monitor.seen.compactMap { line in line.split(separator: "]").first?.split(separator: " ").last })
        #expect(clients.count == 1)
    }
}
#endif
