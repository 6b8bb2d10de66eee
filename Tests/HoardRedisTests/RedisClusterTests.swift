#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import NIOCore
import Testing

@testable import HoardRedis

/// The Redis Cluster the cluster tests use: the one `HOARD_REDIS_CLUSTER_URL` names
/// (`scripts/test` starts three primaries and three replicas on loopback).
enum RedisTestCluster {
    static let url = ProcessInfo.processInfo.environment["HOARD_REDIS_CLUSTER_URL"].flatMap { $0.isEmpty ? nil : $0 }

    static var isAvailable: Bool { url != nil }

    /// A configuration for the cluster with a prefix no other test uses.
    static func configuration(prefix: String = "hoard-cluster-\(UUID().uuidString.prefix(8))") throws
        -> RedisStore.Configuration
    {
        var configuration = try RedisStore.Configuration(url: url ?? "redis+cluster://127.0.0.1:7000")
        configuration.keyPrefix = prefix
        return configuration
    }
}

@Suite("Redis Cluster hash slots and configuration")
struct RedisClusterSlotTests {
    func slot(_ key: String) -> Int { _RedisHashSlot.slot(of: ByteBuffer(string: key)) }

    @Test("CRC16/XMODEM and slots match the Redis Cluster specification's examples")
    func specificationVectors() {
        #expect(Array("123456789".utf8).withUnsafeBytes { _RedisHashSlot.crc16($0) } == 0x31C3)
        #expect(slot("foo") == 12_182)
        #expect(slot("{user1000}.following") == slot("{user1000}.followers"))
        #expect(slot("{user1000}.following") == slot("user1000"))
        // An empty tag is no tag: the whole key is hashed.
        #expect(
            slot("foo{}{bar}") == Int(Array("foo{}{bar}".utf8).withUnsafeBytes { _RedisHashSlot.crc16($0) } & 0x3FFF))
        // The tag ends at the first "}" after the first "{".
        #expect(slot("foo{{bar}}zap") == slot("{bar"))
        #expect(slot("foo{bar}{zap}") == slot("bar"))
    }

    @Test("A redis+cluster:// URL gives the seeds, the credentials and database 0")
    func clusterURL() throws {
        let configuration = try RedisStore.Configuration(
            url: "redis+cluster://me:s%40cret@10.0.0.1:7000,[::1]:7001,cache:7002")
        #expect(
            configuration.clusterSeeds == [
                ServerAddress(host: "10.0.0.1", port: 7000), ServerAddress(host: "::1", port: 7001),
                ServerAddress(host: "cache", port: 7002),
            ])
        #expect(configuration.username == "me")
        #expect(configuration.password == "s@cret")
        #expect(configuration.host == "10.0.0.1" && configuration.port == 7000)
        #expect(try RedisStore.Configuration(url: "redis+cluster://h:1/0").clusterSeeds.count == 1)
    }

    @Test(
        "A cluster URL without a port, without nodes, or with another database is refused",
        arguments: ["redis+cluster://", "redis+cluster://host", "redis+cluster://h:1,", "redis+cluster://h:x"])
    func badClusterURL(_ url: String) {
        let error = #expect(throws: RedisError.self) { try RedisStore.Configuration(url: url) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("A cluster configuration with a database other than 0 is refused")
    func clusterDatabase() throws {
        let configuration = try RedisStore.Configuration(url: "redis+cluster://h:1/3")
        let error = #expect(throws: RedisError.self) { try RedisStore(configuration: configuration) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("CLUSTER SLOTS replies become a slot map; a malformed reply is a protocol error")
    func parseSlots() throws {
        let queried = _RedisCluster.Address(host: "10.0.0.9", port: 7000)
        func node(_ host: String, _ port: Int64) -> _RESPValue {
            .array([.bulkString(ByteBuffer(string: host)), .integer(port), .bulkString(ByteBuffer(string: "id"))])
        }
        let reply = _RESPValue.array([
            .array([.integer(0), .integer(99), node("10.0.0.1", 7000), node("10.0.0.4", 7003)]),
            .array([.integer(100), .integer(16_383), node("", 7001)]),
        ])
        let map = try _RedisCluster.parseSlots(reply, queried: queried)
        #expect(map.primaries == [.init(host: "10.0.0.1", port: 7000), .init(host: "10.0.0.9", port: 7001)])
        #expect(map.owners[0] == 0 && map.owners[99] == 0 && map.owners[100] == 1 && map.owners[16_383] == 1)
        let malformed = _RESPValue.array([.array([.integer(5), .integer(1), node("h", 1)])])
        let error = #expect(throws: RedisError.self) { try _RedisCluster.parseSlots(malformed, queried: queried) }
        #expect(error?.code == .protocolError)
        let refused = #expect(throws: RedisError.self) {
            try _RedisCluster.parseSlots(.error("ERR This instance has cluster support disabled"), queried: queried)
        }
        #expect(refused?.code == .serverError)
    }

    @Test("MOVED, ASK, TRYAGAIN and CLUSTERDOWN replies are read as redirections; other errors are not")
    func redirections() throws {
        #expect(
            try _RedisRedirection(.error("MOVED 3999 127.0.0.1:6381"))
                == .moved(slot: 3999, to: .init(host: "127.0.0.1", port: 6381)))
        #expect(
            try _RedisRedirection(.error("MOVED 16383 10.0.0.1:65535"))
                == .moved(slot: 16_383, to: .init(host: "10.0.0.1", port: 65_535)))
        #expect(try _RedisRedirection(.error("ASK 3999 [::1]:6381")) == .ask(to: .init(host: "::1", port: 6381)))
        #expect(try _RedisRedirection(.error("TRYAGAIN Multiple keys request during rehashing of slot")) == .tryAgain)
        #expect(try _RedisRedirection(.error("CLUSTERDOWN The cluster is down")) == .tryAgain)
        #expect(try _RedisRedirection(.error("ERR unknown command")) == nil)
        #expect(try _RedisRedirection(.simpleString("OK")) == nil)
    }

    @Test(
        "A MOVED or ASK whose slot is outside 0..<16384 or whose port is outside 1...65535 is a protocol error",
        arguments: [
            "MOVED 20000 127.0.0.1:6381", "MOVED 16384 127.0.0.1:6381", "MOVED -1 127.0.0.1:6381",
            "MOVED 99999999999999999999 127.0.0.1:6381", "ASK 20000 127.0.0.1:6381", "MOVED 1 127.0.0.1:0",
            "MOVED 1 127.0.0.1:65536", "ASK 1 127.0.0.1:-7000", "ASK 1 [::1]:9999999999999999999999", "MOVED 1 host",
            "MOVED nonsense", "ASK",
        ])
    func badRedirections(_ message: String) {
        let error = #expect(throws: RedisError.self) { try _RedisRedirection(.error(message), command: "GET") }
        #expect(error?.code == .protocolError)
        #expect(error?.command == "GET")
        #expect(error?.serverMessage == message)
    }

    @Test("A node answering MOVED to slot 20000 fails the read with a protocol error, and the store goes on")
    func movedOutsideTheSlots() async throws {
        let port = Locked(0)
        let server = try await ScriptedRedisServer { words in
            let port = Int64(port.withLock { $0 })
            guard words.first == "CLUSTER" else { return .reply(.error("MOVED 20000 127.0.0.1:\(port)")) }
            let node = _RESPValue.array([.bulkString(ByteBuffer(string: "127.0.0.1")), .integer(port)])
            return .reply(.array([.array([.integer(0), .integer(16_383), node])]))
        }
        port.withLock { $0 = server.port }
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(url: "redis+cluster://127.0.0.1:\(server.port)"))
        defer { Task { await store.shutdown() } }
        for _ in 0..<2 {
            let error = await #expect(throws: RedisError.self) { try await store.entry(for: "k", in: "ns") }
            #expect(error?.code == .protocolError, "\(String(describing: error))")
            #expect(error?.serverMessage == "MOVED 20000 127.0.0.1:\(server.port)")
        }
        #expect(server.commands.filter { $0.first == "GET" }.count == 2)
    }

    @Test("A CLUSTER SLOTS reply with a port outside 1...65535 or a slot in two ranges is a protocol error")
    func badSlotNumbers() throws {
        let queried = _RedisCluster.Address(host: "10.0.0.9", port: 7000)
        func node(_ port: Int64) -> _RESPValue {
            .array([.bulkString(ByteBuffer(string: "10.0.0.1")), .integer(port), .bulkString(ByteBuffer(string: "id"))])
        }
        func range(_ start: Int64, _ end: Int64, port: Int64 = 7000) -> _RESPValue {
            .array([.integer(start), .integer(end), node(port)])
        }
        let bad: [_RESPValue] = [
            .array([range(0, 10, port: 0)]), .array([range(0, 10, port: 65_536)]), .array([range(0, 10, port: -1)]),
            .array([range(0, 10, port: .max)]), .array([range(0, 16_384)]), .array([range(-1, 10)]),
            .array([range(.min, .max)]), .array([range(0, 10), range(10, 20, port: 7001)]),
            // More ranges than slots, each naming a new node, cannot be a slot map.
            .array((0..<20_000).map { range(0, 0, port: 1 + $0) }),
        ]
        for reply in bad {
            let error = #expect(throws: RedisError.self) { try _RedisCluster.parseSlots(reply, queried: queried) }
            #expect(error?.code == .protocolError)
        }
        let edges = try _RedisCluster.parseSlots(
            .array([range(0, 0, port: 1), range(1, 16_383, port: 65_535)]), queried: queried)
        #expect(edges.primaries.map(\.port) == [1, 65_535])
        #expect(edges.owners[0] == 0 && edges.owners[1] == 1 && edges.owners[16_383] == 1)
    }
}

@Suite(
    "RedisStore on a Redis Cluster",
    .enabled(
        if: RedisTestCluster.isAvailable,
        "needs a Redis Cluster: set HOARD_REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:PORT,... (scripts/test starts one)"
    ),
    .serialized,
    .timeLimit(.minutes(5)))
struct RedisClusterTests {
    /// Sends a command to the node at `address`, outside any routing.
    static func send(
        _ store: RedisStore, to address: _RedisCluster.Address, _ arguments: _RedisArgument...
    ) async throws -> _RESPValue {
        guard case .string(let name) = arguments[0] else { fatalError("the first argument is the command's name") }
        let command = _RedisCommand(name, arguments: Array(arguments.dropFirst()))
        return try await store.cluster!.pool(for: address).withConnection { connection throws(RedisError) in
            try await connection.send(command)
        }
    }

    /// How many subscribers every node together counts on the namespace's channel.
    static func subscribers(_ store: RedisStore, namespace: String) async throws -> Int64 {
        let channel = String(buffer: store.keyspace.channel(for: namespace))
        var total: Int64 = 0
        for seed in store.cluster!.seeds {
            if case .integer(let count)? = try await send(store, to: seed, "PUBSUB", "NUMSUB", .string(channel))
                .elements?.last
            {
                total += count
            }
        }
        return total
    }

    @Test("Keys spread over every primary; each reads back, one by one and with entries(for:)")
    func routing() async throws {
        let store = try RedisStore(configuration: try RedisTestCluster.configuration())
        let keys = (0..<300).map { "user:\($0)" }
        try await store.write(keys.map { .set(Data($0.utf8), for: $0, in: "users", storedAt: .now, expiresAt: nil) })
        for key in keys.prefix(50) {
            #expect(try await store.entry(for: key, in: "users")?.data == Data(key.utf8))
        }
        let asked = keys + ["missing-1", "missing-2"]
        let found = try await store.entries(for: asked, in: "users")
        #expect(found.count == 300)
        #expect(found.allSatisfy { $0.value.data == Data($0.key.utf8) })

        // Every primary holds some of them: the slot decides, not the namespace.
        let primaries = try await store.cluster!.primaries()
        #expect(primaries.count == 3)
        for primary in primaries {
            let reply = try await Self.send(store, to: primary, "DBSIZE")
            guard case .integer(let count) = reply else {
                Issue.record("DBSIZE answered \(reply)")
                continue
            }
            #expect(count > 0, "primary \(primary) holds none of the keys")
        }
        // The server agrees with the slot of every key.
        for key in keys.prefix(20) {
            let redisKey = store.keyspace.key(key, in: "users")
            let reply = try await Self.send(store, to: primaries[0], "CLUSTER", "KEYSLOT", .bytes(redisKey))
            #expect(reply == .integer(Int64(_RedisHashSlot.slot(of: redisKey))))
        }
        try await store.removeAll(in: "users")
        await store.shutdown()
    }

    @Test("write(_:) keeps the order of changes to a key; removeAll(in:) clears one namespace on every primary")
    func batchesAndClearing() async throws {
        let store = try RedisStore(configuration: try RedisTestCluster.configuration())
        try await store.write([
            .set(Data([1]), for: "a", in: "ns", storedAt: .now, expiresAt: nil),
            .set(Data([2]), for: "a", in: "ns", storedAt: .now, expiresAt: nil),
            .set(Data([3]), for: "b", in: "ns", storedAt: .now, expiresAt: nil),
            .removeValue(for: "b", in: "ns"),
            .set(Data([4]), for: "kept", in: "other", storedAt: .now, expiresAt: nil),
        ])
        #expect(try await store.entry(for: "a", in: "ns")?.data == Data([2]))
        #expect(try await store.entry(for: "b", in: "ns") == nil)
        try await store.write(
            (0..<200).map { .set(Data([5]), for: "k\($0)", in: "ns", storedAt: .now, expiresAt: nil) })
        #expect(try await store.entries(for: (0..<200).map { "k\($0)" }, in: "ns").count == 200)

        try await store.removeAll(in: "ns")
        #expect(try await store.entries(for: (0..<200).map { "k\($0)" } + ["a"], in: "ns").isEmpty)
        #expect(try await store.entry(for: "kept", in: "other")?.data == Data([4]))
        try await store.removeAll(in: "other")
        await store.shutdown()
    }

    @Test("A slot moved to another primary: ASK while it migrates, MOVED after; every read finds its value")
    func redirectionsDuringResharding() async throws {
        let store = try RedisStore(configuration: try RedisTestCluster.configuration())
        let observer = try RedisStore(configuration: store.configuration)
        // Two keys of one slot (same hash tag in the key), on their source primary
        let migrated = "{moving}migrated"
        let staying = "{moving}staying"
        try await store.set(Data("m".utf8), for: migrated, in: "ns", storedAt: .now, expiresAt: nil)
        try await store.set(Data("s".utf8), for: staying, in: "ns", storedAt: .now, expiresAt: nil)
        let migratedKey = store.keyspace.key(migrated, in: "ns")
        let slot = _RedisHashSlot.slot(of: migratedKey)
        let source = try await store.cluster!.owner(of: slot)
        let target = try #require(try await store.cluster!.primaries().first { $0 != source })
        guard case .bulkString(let sourceID?) = try await Self.send(store, to: source, "CLUSTER", "MYID"),
            case .bulkString(let targetID?) = try await Self.send(store, to: target, "CLUSTER", "MYID")
        else {
            Issue.record("CLUSTER MYID did not answer with an id")
            return
        }

        // While the slot migrates and one key has moved: ASK
        #expect(
            try await Self.send(
                store, to: target, "CLUSTER", "SETSLOT", .string(String(slot)), "IMPORTING", .bytes(sourceID))
                == .simpleString("OK"))
        #expect(
            try await Self.send(
                store, to: source, "CLUSTER", "SETSLOT", .string(String(slot)), "MIGRATING", .bytes(targetID))
                == .simpleString("OK"))
        let moved = try await Self.send(
            store, to: source, "MIGRATE", .string(target.host), .string(String(target.port)), .bytes(migratedKey), "0",
            "5000")
        #expect(moved == .simpleString("OK"))
        #expect(try await store.entry(for: migrated, in: "ns")?.data == Data("m".utf8))
        #expect(try await store.entry(for: staying, in: "ns")?.data == Data("s".utf8))

        // Once the slot belongs to the target: MOVED, and the map follows
        let rest = try await Self.send(
            store, to: source, "MIGRATE", .string(target.host), .string(String(target.port)),
            .bytes(store.keyspace.key(staying, in: "ns")), "0", "5000")
        #expect(rest == .simpleString("OK"))
        for primary in [target, source]
            + (try await store.cluster!.primaries()).filter({ $0 != source && $0 != target })
        {
            _ = try await Self.send(
                store, to: primary, "CLUSTER", "SETSLOT", .string(String(slot)), "NODE", .bytes(targetID))
        }
        #expect(try await observer.entry(for: staying, in: "ns")?.data == Data("s".utf8))
        #expect(try await store.entry(for: migrated, in: "ns")?.data == Data("m".utf8))
        #expect(try await store.cluster!.owner(of: slot) == target)
        try await store.set(Data("after".utf8), for: staying, in: "ns", storedAt: .now, expiresAt: nil)
        #expect(try await observer.entries(for: [staying, migrated], in: "ns").count == 2)

        // Give the slot back, so that the cluster stays as the other tests expect it
        #expect(
            try await Self.send(
                store, to: source, "CLUSTER", "SETSLOT", .string(String(slot)), "IMPORTING", .bytes(targetID))
                == .simpleString("OK"))
        #expect(
            try await Self.send(
                store, to: target, "CLUSTER", "SETSLOT", .string(String(slot)), "MIGRATING", .bytes(sourceID))
                == .simpleString("OK"))
        for key in [migrated, staying] {
            let back = try await Self.send(
                store, to: target, "MIGRATE", .string(source.host), .string(String(source.port)),
                .bytes(store.keyspace.key(key, in: "ns")), "0", "5000")
            #expect(back == .simpleString("OK"))
        }
        for primary in [source, target]
            + (try await store.cluster!.primaries()).filter({ $0 != source && $0 != target })
        {
            _ = try await Self.send(
                store, to: primary, "CLUSTER", "SETSLOT", .string(String(slot)), "NODE", .bytes(sourceID))
        }
        #expect(try await store.entry(for: staying, in: "ns")?.data == Data("after".utf8))
        await store.shutdown()
        await observer.shutdown()
    }

    @Test("A write through one Cache drops the key from another Cache's memory, across the cluster")
    func invalidationAcrossCaches() async throws {
        let configuration = try RedisTestCluster.configuration()
        func makeCache() throws -> (Cache<String, String>, RedisStore) {
            let store = try RedisStore(configuration: configuration)
            var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
            cacheConfiguration.localStores = .none
            cacheConfiguration.remoteStores = [store]
            return (try Cache<String, String>(configuration: cacheConfiguration), store)
        }
        let (first, firstStore) = try makeCache()
        let (second, secondStore) = try makeCache()
        #expect(try await eventually { try await Self.subscribers(firstStore, namespace: "profiles") == 2 })

        try await second.set("v1", for: "k")
        #expect(second["k"] == "v1")
        #expect(try await first.value(for: "k") == "v1")
        let events = second.events
        try await first.set("v2", for: "k")
        #expect(await firstEvent(in: events) { if case .invalidated("k") = $0 { true } else { false } } != nil)
        #expect(second["k"] == nil)
        #expect(try await second.value(for: "k") == "v2")

        try await first.clear()
        await firstStore.shutdown()
        await secondStore.shutdown()
    }

    @Test("A child process's write and removal on the cluster drop the key from this process's Cache memory")
    func twoProcesses() async throws {
        let prefix = "hoard-cluster-2p-\(UUID().uuidString.prefix(8))"
        let store = try RedisStore(configuration: try RedisTestCluster.configuration(prefix: prefix))
        try await RedisTwoProcessTests.childWritesDropParentMemory(
            store: store, url: RedisTestCluster.url!, prefix: prefix
        ) { try await Self.subscribers(store, namespace: "profiles") == 1 }
    }

    @Test(
        "With server-assisted invalidation, a plain client's write on any primary drops the key from a Cache's memory")
    func trackingOnEveryPrimary() async throws {
        var configuration = try RedisTestCluster.configuration()
        configuration.serverAssistedInvalidation = true
        let store = try RedisStore(configuration: configuration)
        var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
        cacheConfiguration.localStores = .none
        cacheConfiguration.remoteStores = [store]
        let cache = try Cache<String, String>(configuration: cacheConfiguration)
        let primaries = try await store.cluster!.primaries()
        // Every primary counts one tracking subscriber: this store's
        #expect(
            try await eventually {
                for primary in primaries {
                    let reply = try await Self.send(store, to: primary, "PUBSUB", "NUMSUB", "__redis__:invalidate")
                    guard reply.elements?.last == .integer(1) else { return false }
                }
                return true
            })

        // One key on each primary, in the cache's memory
        var keyOn: [_RedisCluster.Address: String] = [:]
        for index in 0..<200 where keyOn.count < primaries.count {
            let key = "user:\(index)"
            let owner = try await store.cluster!.owner(
                of: _RedisHashSlot.slot(of: store.keyspace.key(key, in: "profiles")))
            if keyOn[owner] == nil { keyOn[owner] = key }
        }
        #expect(keyOn.count == primaries.count)
        for (owner, key) in keyOn {
            try await cache.set("cached", for: key)
            // Its own write comes back too; wait for it, then read the key into memory again
            #expect(await eventually { cache[key] == nil })
            #expect(try await cache.value(for: key) == "cached")
            #expect(cache[key] == "cached")

            // A plain client deletes it on its primary
            let events = cache.events
            let reply = try await Self.send(store, to: owner, "DEL", .bytes(store.keyspace.key(key, in: "profiles")))
            #expect(reply == .integer(1))
            #expect(await firstEvent(in: events) { if case .invalidated(key) = $0 { true } else { false } } != nil)
            #expect(cache[key] == nil, "memory dropped \(key), written on \(owner)")
            #expect(try await cache.value(for: key) == nil)
        }
        try await cache.clear()
        await store.shutdown()
    }

    @Test("With keepsNamespaceInOneSlot, a namespace's keys share one slot; reads, batches and clearing work")
    func namespaceInOneSlot() async throws {
        var configuration = try RedisTestCluster.configuration()
        configuration.keepsNamespaceInOneSlot = true
        let store = try RedisStore(configuration: configuration)
        let keys = (0..<100).map { "item:\($0)" }
        try await store.write(keys.map { .set(Data($0.utf8), for: $0, in: "catalog", storedAt: .now, expiresAt: nil) })
        try await store.set(Data("o".utf8), for: "item:0", in: "orders", storedAt: .now, expiresAt: nil)
        let slots = Set(keys.map { _RedisHashSlot.slot(of: store.keyspace.key($0, in: "catalog")) })
        #expect(slots.count == 1)
        let primary = try await store.cluster!.primaries()[0]
        let serverSlot = try await Self.send(
            store, to: primary, "CLUSTER", "KEYSLOT", .bytes(store.keyspace.key("item:7", in: "catalog")))
        #expect(serverSlot == .integer(Int64(slots.first!)))
        #expect(serverSlot == .integer(Int64(_RedisHashSlot.slot(of: ByteBuffer(string: "catalog")))))

        let found = try await store.entries(for: keys, in: "catalog")
        #expect(found.count == 100 && found.allSatisfy { $0.value.data == Data($0.key.utf8) })
        try await store.removeAll(in: "catalog")
        #expect(try await store.entries(for: keys, in: "catalog").isEmpty)
        #expect(try await store.entry(for: "item:0", in: "orders")?.data == Data("o".utf8))
        try await store.removeAll(in: "orders")
        await store.shutdown()
    }
}
#endif
