#if Redis
import Foundation
import Hoard
import HoardLoggingTestSupport
import HoardRemoteTestSupport
import Testing

@testable import HoardRedis

/// Tests that run their own redis-server child process, to stop it or to configure
/// credentials.
@Suite(
    "RedisStore with its own redis-server: restarts and authentication",
    .enabled(
        if: RedisChildServer.isAvailable, "needs redis-server on PATH or HOARD_REDIS_SERVER (scripts/test installs it)"),
    .timeLimit(.minutes(10)))
struct RedisServerRestartTests {
    @Test(
        "Server stopped and restarted: operations fail with a RedisError, then the pool and the subscription come back")
    func reconnectsAfterRestart() async throws {
        try await RedisChildServer.with { server in try await reconnectsAfterRestart(server) }
    }

    private func reconnectsAfterRestart(_ server: RedisChildServer) async throws {
        var configuration = server.configuration()
        configuration.initialReconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(400)
        configuration.commandTimeout = .seconds(30)
        let log = RecordingLogHandler()
        configuration.logger = log.logger()
        let store = try RedisStore(configuration: configuration)
        configuration.logger = nil
        let other = try RedisStore(configuration: configuration)
        let seen = InvalidationRecorder(store.invalidations(in: "ns"))
        defer {
            Task {
                seen.cancel()
                await store.shutdown()
                await other.shutdown()
            }
        }

        try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
        #expect(try await store.entry(for: "k", in: "ns")?.data == Data([1]))
        try await other.set(Data([2]), for: "before", in: "ns", storedAt: .now, expiresAt: nil)
        // Publishing may race the first subscription; retry until it is seen.
        #expect(
            await eventually {
                try? await other.set(Data([2]), for: "before", in: "ns", storedAt: .now, expiresAt: nil)
                return seen.all.contains(.key("before"))
            })

        try await server.stop()
        do {
            _ = try await store.entry(for: "k", in: "ns")
            Issue.record("a read with the server stopped should fail")
        } catch {
            #expect([.connectionClosed, .connectionFailed].contains(error.code))
        }
        // While it is down, operations fail at once with connectionFailed (refused, or
        // waiting out the backoff), never by running into the 30 s command timeout.
        for _ in 0..<5 {
            let result = await outcome { () async throws(RedisError) in try await store.entry(for: "k", in: "ns") }
            if case .failure(let error) = result {
                #expect(error.code == .connectionFailed, "\(error)")
            } else {
                Issue.record("a read with the server stopped should fail")
            }
        }

        try await server.start()  // same port, empty (no persistence)
        let recovered = await eventually {
            (try? await store.set(Data([3]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)) != nil
        }
        #expect(recovered)
        #expect(try await store.entry(for: "k", in: "ns")?.data == Data([3]))

        // The subscription is back: `.missed` first (changes may have been missed), then keys again.
        #expect(await eventually { seen.all.contains(.missed) })
        try await other.set(Data([4]), for: "after", in: "ns", storedAt: .now, expiresAt: nil)
        #expect(await eventually { seen.all.last == .key("after") })

        // The logger heard of the lost connections and of the gap, once each,
        // with the store and the operation; nothing at info or above otherwise.
        let resubscribed = await log.record { $0.message.hasPrefix("resubscribed") }
        #expect(resubscribed.level == .notice)
        #expect(resubscribed.metadata["hoard.operation"] == "subscribe")
        #expect(resubscribed.metadata["hoard.store"] == "redis \(configuration.host):\(configuration.port)")
        #expect(log.records.filter { $0.message.hasPrefix("resubscribed") }.count == 1)
        #expect(log.records.contains { $0.message.contains("invalidation connection to Redis closed") })
        #expect(log.records.allSatisfy { $0.level >= .notice }, "no routine messages")
    }

    @Test("A first subscription that had to wait for the server reports .missed: changes made meanwhile went unheard")
    func firstSubscriptionAfterFailedAttempts() async throws {
        try await RedisChildServer.with { server in try await firstSubscriptionAfterFailedAttempts(server) }
    }

    private func firstSubscriptionAfterFailedAttempts(_ server: RedisChildServer) async throws {
        var configuration = server.configuration()
        configuration.initialReconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(200)
        let log = RecordingLogHandler()
        configuration.logger = log.logger()
        let store = try RedisStore(configuration: configuration)
        configuration.logger = nil
        let other = try RedisStore(configuration: configuration)
        defer {
            Task {
                await store.shutdown()
                await other.shutdown()
            }
        }

        // The stream starts while the server is down: its subscription waits, and
        // whatever the store reads meanwhile may change unheard.
        try await server.stop()
        let seen = InvalidationRecorder(store.invalidations(in: "ns"))
        defer { seen.cancel() }
        _ = await log.record { $0.message.hasPrefix("could not connect to Redis for invalidations") }
        try await server.start()

        #expect(
            await eventually {
                try? await other.set(Data([1]), for: "after", in: "ns", storedAt: .now, expiresAt: nil)
                return seen.all.contains(.key("after"))
            })
        #expect(seen.all.first == .missed, "\(seen.all)")
    }

    @Test("A subscription the server refuses is logged and tried again; once accepted, it reports .missed")
    func refusedSubscription() async throws {
        // bob may use every key but no channel (Redis 7's default for a new ACL user).
        let arguments = ["--user", "bob", "on", ">pw", "~*", "resetchannels", "+@all"]
        try await RedisChildServer.with(arguments: arguments) { server in try await refusedSubscription(server) }
    }

    private func refusedSubscription(_ server: RedisChildServer) async throws {
        var configuration = server.configuration()
        configuration.username = "bob"
        configuration.password = "pw"
        configuration.initialReconnectDelay = .milliseconds(20)
        configuration.maximumReconnectDelay = .milliseconds(100)
        let log = RecordingLogHandler()
        configuration.logger = log.logger()
        let store = try RedisStore(configuration: configuration)
        let writer = try RedisStore(configuration: server.configuration())  // the default user: every channel
        let seen = InvalidationRecorder(store.invalidations(in: "ns"))
        defer {
            seen.cancel()
            Task {
                await store.shutdown()
                await writer.shutdown()
            }
        }

        let refusal = { (record: RecordingLogHandler.Record) in
            record.metadata["hoard.operation"] == "subscribe"
                && record.metadata["hoard.error"]?.contains("NOPERM") == true
        }
        #expect(await eventually { log.records.contains(where: refusal) }, "the refusal was not reported")
        #expect(log.records.first(where: refusal)?.level == .warning)

        _ = try await writer.command("ACL", "SETUSER", "bob", "allchannels")
        #expect(
            await eventually {
                try? await writer.set(Data([1]), for: "after", in: "ns", storedAt: .now, expiresAt: nil)
                return seen.all.contains(.key("after"))
            }, "the subscription was not tried again")
        #expect(seen.all.first == .missed, "\(seen.all)")
    }

    @Test(
        "A frozen server that keeps the connection open: the invalidation connection's PING goes unanswered, it is closed, and once the server answers again the stream reports .missed and hears changes"
    )
    func frozenServer() async throws {
        try await RedisChildServer.with { server in try await frozenServer(server) }
    }

    private func frozenServer(_ server: RedisChildServer) async throws {
        var configuration = server.configuration()
        configuration.initialReconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(400)
        configuration.invalidationPingInterval = .milliseconds(200)
        configuration.invalidationPingTimeout = .milliseconds(500)
        let log = RecordingLogHandler()
        configuration.logger = log.logger()
        let store = try RedisStore(configuration: configuration)
        configuration.logger = nil
        let other = try RedisStore(configuration: configuration)
        let seen = InvalidationRecorder(store.invalidations(in: "ns"))
        defer {
            seen.cancel()
            Task {
                await store.shutdown()
                await other.shutdown()
            }
        }
        #expect(
            await eventually {
                try? await other.set(Data([1]), for: "before", in: "ns", storedAt: .now, expiresAt: nil)
                return seen.all.contains(.key("before"))
            })

        // Frozen, the server answers nothing, but its connections stay open: only a
        // health check tells the subscriber that its connection is dead.
        let logged = log.records.count
        try server.freeze()
        let noticed = await eventually(timeout: .seconds(30)) {
            log.records.dropFirst(logged).contains { $0.message.contains("invalidation connection to Redis closed") }
        }
        try server.thaw()
        #expect(noticed, "the subscriber did not notice in 30 s that the server stopped answering")
        let unanswered = log.records.dropFirst(logged).first { $0.message.contains("did not answer PING") }
        #expect(unanswered?.level == .warning)
        #expect(unanswered?.metadata["hoard.operation"] == "subscribe")
        #expect(unanswered?.metadata["hoard.error"]?.contains("PING") == true)

        // Answering again, the server confirms a new subscription: changes made while
        // it was frozen may have been missed, and later ones are heard.
        let missedBefore = seen.all.count
        #expect(await eventually { seen.all.dropFirst(missedBefore).contains(.missed) }, "\(seen.all)")
        #expect(
            await eventually {
                try? await other.set(Data([2]), for: "after", in: "ns", storedAt: .now, expiresAt: nil)
                return seen.all.contains(.key("after"))
            }, "\(seen.all)")
    }

    @Test("A server that answers keeps the invalidation connection: PING's answer counts, and no .missed is reported")
    func answeredPingsKeepTheConnection() async throws {
        try await RedisChildServer.with { server in try await answeredPingsKeepTheConnection(server) }
    }

    private func answeredPingsKeepTheConnection(_ server: RedisChildServer) async throws {
        var configuration = server.configuration()
        configuration.invalidationPingInterval = .milliseconds(100)
        // Generous, so that a loaded machine cannot make a healthy connection look
        // dead; each PING after the first waits for the check of the one before.
        configuration.invalidationPingTimeout = .seconds(2)
        let log = RecordingLogHandler()
        configuration.logger = log.logger()
        let store = try RedisStore(configuration: configuration)
        configuration.logger = nil
        let other = try RedisStore(configuration: configuration)
        let monitor = try await CommandMonitor(configuration: configuration, marker: "PING")
        let seen = InvalidationRecorder(store.invalidations(in: "ns"))
        defer {
            seen.cancel()
            monitor.close()
            Task {
                await store.shutdown()
                await other.shutdown()
            }
        }
        #expect(
            await eventually {
                try? await other.set(Data([1]), for: "before", in: "ns", storedAt: .now, expiresAt: nil)
                return seen.all.contains(.key("before"))
            })
        // The subscriber pings while subscribed (the server answers ["pong", ""]); a
        // third PING comes only after two checks, each of which would have closed a
        // connection whose answers did not count (and logged it before reconnecting).
        #expect(await eventually { monitor.seen.count >= 3 }, "the subscriber sent \(monitor.seen.count) PINGs")
        #expect(!log.records.contains { $0.message.contains("did not answer PING") })
        #expect(!log.records.contains { $0.message.contains("invalidation connection to Redis closed") })
        try await other.set(Data([2]), for: "after", in: "ns", storedAt: .now, expiresAt: nil)
        #expect(await eventually { seen.all.contains(.key("after")) })
        #expect(!seen.all.contains(.missed), "\(seen.all)")
    }

    @Test(
        "With invalidationPingInterval nil, a server whose ACL forbids PING keeps the invalidation connection: no PING is sent, nothing reconnects and no .missed is reported, while a store that checks reconnects at every check"
    )
    func pingCheckOff() async throws {
        // Both users may use every key and channel, but not PING.
        let forbidsPing = ["on", ">pw", "~*", "&*", "+@all", "-ping"]
        let arguments = ["--user", "quiet"] + forbidsPing + ["--user", "pinging"] + forbidsPing
        try await RedisChildServer.with(arguments: arguments) { server in try await pingCheckOff(server) }
    }

    private func pingCheckOff(_ server: RedisChildServer) async throws {
        var quietConfiguration = server.configuration()
        quietConfiguration.username = "quiet"
        quietConfiguration.password = "pw"
        quietConfiguration.invalidationPingInterval = nil
        let quietLog = RecordingLogHandler()
        quietConfiguration.logger = quietLog.logger()
        let quiet = try RedisStore(configuration: quietConfiguration)
        var pingingConfiguration = server.configuration()
        pingingConfiguration.username = "pinging"
        pingingConfiguration.password = "pw"
        pingingConfiguration.invalidationPingInterval = .milliseconds(50)
        pingingConfiguration.initialReconnectDelay = .milliseconds(20)
        pingingConfiguration.maximumReconnectDelay = .milliseconds(100)
        let pingingLog = RecordingLogHandler()
        pingingConfiguration.logger = pingingLog.logger()
        let pinging = try RedisStore(configuration: pingingConfiguration)
        let writer = try RedisStore(configuration: server.configuration())  // the default user
        let quietSeen = InvalidationRecorder(quiet.invalidations(in: "ns"))
        var pingingSeen: InvalidationRecorder?
        defer {
            quietSeen.cancel()
            pingingSeen?.cancel()
            Task {
                await quiet.shutdown()
                await pinging.shutdown()
                await writer.shutdown()
            }
        }

        // Given a store without the check, subscribed and hearing changes
        #expect(
            await eventually {
                try? await writer.set(Data([1]), for: "before", in: "ns", storedAt: .now, expiresAt: nil)
                return quietSeen.all.contains(.key("before"))
            })
        #expect(await quiet.subscriber.checksHealth == false)

        // When a store that checks, subscribed after it, has had its PING refused and
        // its connection replaced twice
        pingingSeen = InvalidationRecorder(pinging.invalidations(in: "ns"))
        let refusedPing = { (record: RecordingLogHandler.Record) in
            record.metadata["hoard.error"].map { $0.contains("NOPERM") && $0.lowercased().contains("ping") } == true
        }
        #expect(
            await eventually { pingingLog.records.filter(refusedPing).count >= 2 },
            "the store that checks was not refused twice: \(pingingLog.records.map(\.message))")
        #expect(await eventually { pingingSeen?.all.contains(.missed) == true })

        // Then the server refused no PING of the store without the check: it sent none
        let denied = try await writer.command("ACL", "LOG")
        let users = (denied.elements ?? []).compactMap { entry -> String? in
            let fields = entry.elements ?? []
            guard let index = fields.firstIndex(where: { $0.string == "username" }), index + 1 < fields.count else {
                return nil
            }
            return fields[index + 1].string
        }
        #expect(users.contains("pinging"), "\(denied)")
        #expect(!users.contains("quiet"), "\(denied)")
        // and its connection stayed: nothing was refused, closed or resubscribed
        #expect(quietLog.records.isEmpty, "\(quietLog.records.map(\.message))")
        #expect(!quietSeen.all.contains(.missed), "\(quietSeen.all)")
        #expect(
            await eventually {
                try? await writer.set(Data([2]), for: "after", in: "ns", storedAt: .now, expiresAt: nil)
                return quietSeen.all.contains(.key("after"))
            }, "\(quietSeen.all)")
        #expect(!quietSeen.all.contains(.missed), "\(quietSeen.all)")
    }

    @Test("AUTH with a password, with a username and password, SELECT; wrong ones are authenticationFailed")
    func authentication() async throws {
        let arguments = ["--requirepass", "s3cret", "--user", "alice", "on", ">wonderland", "~*", "&*", "+@all"]
        try await RedisChildServer.with(arguments: arguments) { server in try await authentication(server) }
    }

    private func authentication(_ server: RedisChildServer) async throws {

        var password = server.configuration()
        password.password = "s3cret"
        password.database = 3
        let store = try RedisStore(configuration: password)
        defer { Task { await store.shutdown() } }
        try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
        #expect(try await store.entry(for: "k", in: "ns")?.data == Data([1]))
        #expect(try await store.command("CLIENT", "INFO").string?.contains("db=3") == true)

        var user = try RedisStore.Configuration(url: "redis://alice:wonderland@127.0.0.1:\(server.port)/3")
        user.keyPrefix = server.configuration().keyPrefix
        let aliceStore = try RedisStore(configuration: user)
        defer { Task { await aliceStore.shutdown() } }
        #expect(try await aliceStore.entry(for: "k", in: "ns")?.data == Data([1]))
        #expect(try await aliceStore.command("ACL", "WHOAMI").string == "alice")

        for (configuration, what) in [
            (RedisStore.Configuration(port: server.port, password: "wrong"), "wrong password"),
            (RedisStore.Configuration(port: server.port, username: "alice", password: "wrong"), "wrong user password"),
            (RedisStore.Configuration(port: server.port, password: "s3cret", database: 99), "no such database"),
            (RedisStore.Configuration(port: server.port), "no password"),
        ] {
            let refused = try RedisStore(configuration: configuration)
            do {
                _ = try await refused.entry(for: "k", in: "ns")
                Issue.record("\(what): should have failed")
            } catch {
                // Without AUTH the connection opens and the first command is refused instead.
                #expect(
                    error.code == (what == "no password" ? .serverError : .authenticationFailed), "\(what): \(error)")
                #expect(error.serverMessage != nil, "\(what)")
            }
            await refused.shutdown()
        }
    }
}
#endif
