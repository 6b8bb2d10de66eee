#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import Synchronization
import Testing

@testable import HoardRedis

/// A Redis Cluster of the test's own: three primaries and three replicas, child
/// processes on free loopback ports, so that a test may kill a node by its PID
/// without disturbing the cluster the other tests share.
final class RedisChildCluster: Sendable {
    /// `redis-cli`, next to `redis-server` or on `PATH`.
    static let cli: String? = {
        guard let server = RedisChildServer.executable else { return nil }
        let sibling = URL(fileURLWithPath: server).deletingLastPathComponent().appendingPathComponent("redis-cli").path
        if FileManager.default.isExecutableFile(atPath: sibling) { return sibling }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/redis-cli"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    static var isAvailable: Bool { RedisChildServer.isAvailable && cli != nil }

    let nodes: [RedisChildServer]

    /// Starts six nodes, joins them with `redis-cli --cluster create … --cluster-replicas 1`,
    /// and returns once every node says `cluster_state:ok` and every replica has
    /// synchronised with its primary.
    init(nodeTimeoutMilliseconds: Int = 1_000) async throws {
        var nodes: [RedisChildServer] = []
        do {
            for _ in 0..<6 {
                let busPort = try await freePort()
                nodes.append(
                    try await RedisChildServer(arguments: [
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                        String(nodeTimeoutMilliseconds), "--cluster-port", String(busPort),
                        "--repl-diskless-sync-delay", "0",
                    ]))
            }
            self.nodes = nodes
            let create = Process()
            create.executableURL = URL(fileURLWithPath: Self.cli!)
            create.arguments =
                ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + [
                    "--cluster-replicas", "1", "--cluster-yes",
                ]
            create.standardOutput = FileHandle.nullDevice
            create.standardError = FileHandle.nullDevice
            try create.run()
            create.waitUntilExit()
            guard create.terminationStatus == 0 else {
                throw RedisError(.connectionFailed, "redis-cli --cluster create failed")
            }
        } catch {
            for node in nodes { await node.shutdown() }
            throw error
        }
        let probe = try RedisStore(configuration: configuration())
        defer { Task { await probe.shutdown() } }
        let ready = await eventually(timeout: .seconds(60)) {
            for node in nodes {
                let info = try? await probe.cluster!.pool(for: .init(host: "127.0.0.1", port: node.port))
                    .withConnection { connection throws(RedisError) in
                        try await connection.send(_RedisCommand("CLUSTER", "INFO"))
                    }
                guard info?.string?.contains("cluster_state:ok") == true else { return false }
                // A replica that never synchronised with its primary cannot take over.
                let replication = try? await probe.cluster!.pool(for: .init(host: "127.0.0.1", port: node.port))
                    .withConnection { connection throws(RedisError) in
                        try await connection.send(_RedisCommand("INFO", "replication"))
                    }
                guard let text = replication?.string else { return false }
                if text.contains("role:slave"), !text.contains("master_link_status:up") { return false }
            }
            return true
        }
        guard ready else {
            await shutdown()
            throw RedisError(.clusterDown, "the child cluster did not reach cluster_state:ok")
        }
    }

    /// A configuration whose seeds are every node.
    func configuration(prefix: String = "failover") throws -> RedisStore.Configuration {
        var configuration = try RedisStore.Configuration(
            url: "redis+cluster://" + nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ","))
        configuration.keyPrefix = prefix
        return configuration
    }

    func node(at address: _RedisCluster.Address) -> RedisChildServer? {
        nodes.first { $0.port == address.port }
    }

    func shutdown() async {
        for node in nodes { await node.shutdown() }
    }
}

@Suite(
    "RedisStore through a Redis Cluster failover",
    .enabled(if: RedisChildCluster.isAvailable, "needs redis-server and redis-cli on PATH"),
    .timeLimit(.minutes(5)))
struct RedisClusterFailoverTests {
    /// What the load saw.
    struct Tally: Sendable {
        var attempted = 0
        var failed = 0
        var wrongValues = 0
    }

    @Test("Killing a primary under load: errors while its replica takes over, never a wrong value, then serving again")
    func primaryKilledUnderLoad() async throws {
        let cluster = try await RedisChildCluster()
        var configuration = try cluster.configuration()
        configuration.commandTimeout = .seconds(2)
        configuration.initialReconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(200)
        let store = try RedisStore(configuration: configuration)
        let keys = (0..<300).map { "k\($0)" }
        try await store.write(
            keys.map { .set(Data("\($0)=0".utf8), for: $0, in: "load", storedAt: .now, expiresAt: nil) })

        // The victim: the first seed, a primary, which the invalidation subscription
        // connects to first; a key of its slots
        let victim = cluster.nodes[0]
        let victimAddress = _RedisCluster.Address(host: "127.0.0.1", port: victim.port)
        var victimKey: String?
        for key in keys
        where try await store.cluster!.owner(of: _RedisHashSlot.slot(of: store.keyspace.key(key, in: "load")))
            == victimAddress
        {
            victimKey = key
            break
        }
        let victimSlot = _RedisHashSlot.slot(of: store.keyspace.key(try #require(victimKey), in: "load"))
        // The watcher also tracks writes by any client, on every primary
        var watcherConfiguration = configuration
        watcherConfiguration.serverAssistedInvalidation = true
        let watcher = try RedisStore(configuration: watcherConfiguration)
        let invalidations = InvalidationRecorder(watcher.invalidations(in: "load"))
        defer { invalidations.cancel() }
        try await store.set(Data("probe".utf8), for: "probe", in: "other", storedAt: .now, expiresAt: nil)
        #expect(
            await eventually {
                try? await store.set(Data("p".utf8), for: "probe", in: "load", storedAt: .now, expiresAt: nil)
                return !invalidations.all.isEmpty
            })

        // A load of sets and gets over every key; a read must return a value once
        // written for that key, never another key's or a damaged one.
        let tally = Mutex(Tally())
        let stop = Atomic(false)
        let load = Task {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                round += 1
                for key in keys.shuffled().prefix(20) {
                    do {
                        tally.withLock { $0.attempted += 1 }
                        try await store.set(
                            Data("\(key)=\(round)".utf8), for: key, in: "load", storedAt: .now, expiresAt: nil)
                        tally.withLock { $0.attempted += 1 }
                        let value = try await store.entry(for: key, in: "load").map {
                            String(decoding: $0.data, as: UTF8.self)
                        }
                        if let value, !value.hasPrefix("\(key)=") { tally.withLock { $0.wrongValues += 1 } }
                    } catch {
                        tally.withLock { $0.failed += 1 }
                    }
                }
            }
        }
        // Let the load run, then kill the primary (SIGKILL, by its PID)
        #expect(await eventually { tally.withLock { $0.attempted } > 500 })
        try await victim.stop()
        let failedBefore = tally.withLock { $0.failed }

        // The store serves the victim's slots again once a replica is promoted
        let served = await eventually(timeout: .seconds(60), every: .milliseconds(100)) {
            (try? await store.set(
                Data("\(victimKey!)=after".utf8), for: victimKey!, in: "load", storedAt: .now, expiresAt: nil)) != nil
        }
        #expect(served, "the cluster promoted a replica and the store found it")
        #expect(try await store.cluster!.owner(of: victimSlot) != victimAddress)
        // Let the load run on the new map, then stop it
        let attemptedAfter = tally.withLock { $0.attempted } + 200
        #expect(await eventually { tally.withLock { $0.attempted } > attemptedAfter })
        stop.store(true, ordering: .relaxed)
        await load.value

        // Tracking moved to the promoted replica: a plain client's DEL there is heard
        let newOwner = try await store.cluster!.owner(of: victimSlot)
        #expect(
            await eventually {
                let reply = try? await store.cluster!.pool(for: newOwner).withConnection {
                    connection throws(RedisError) in
                    try await connection.send(_RedisCommand("PUBSUB", "NUMSUB", "__redis__:invalidate"))
                }
                return reply?.elements?.last == .integer(1)
            }, "the watcher tracks the promoted replica")
        let heardBefore = invalidations.all.count
        let deleted = try await store.cluster!.pool(for: newOwner).withConnection { connection throws(RedisError) in
            try await connection.send(_RedisCommand("DEL", .bytes(store.keyspace.key(victimKey!, in: "load"))))
        }
        #expect(deleted == .integer(1))
        #expect(
            await eventually { invalidations.all.dropFirst(heardBefore).contains(.key(victimKey!)) },
            "the new primary's writes are tracked")

        // Every write acknowledged after the failover is there
        try await store.write(
            keys.map { .set(Data("\($0)=final".utf8), for: $0, in: "load", storedAt: .now, expiresAt: nil) })
        let found = try await store.entries(for: keys, in: "load")
        let lost = keys.filter { found[$0]?.data != Data("\($0)=final".utf8) }
        let final = tally.withLock { $0 }
        print(
            "failover: \(final.attempted) operations attempted, \(final.failed) failed with errors "
                + "(\(final.failed - failedBefore) after the kill), \(final.wrongValues) wrong values, "
                + "\(lost.count) acknowledged writes lost after the failover")
        #expect(final.wrongValues == 0)
        #expect(lost.isEmpty)
        #expect(final.failed > failedBefore, "operations on the killed primary's slots failed while it was away")
        // The subscription moved to another node and said that changes may have been missed
        #expect(
            await eventually { invalidations.all.contains(.missed) }, "the watcher heard 'changes may have been missed'"
        )
        await watcher.shutdown()

        await store.shutdown()
        await cluster.shutdown()
    }
}
#endif
