#if Redis
import Foundation
import Hoard
import HoardLoggingTestSupport
import HoardRemoteTestSupport
import NIOCore
import Testing

@testable import HoardRedis

/// RedisStore against the server `HOARD_REDIS_URL` names; every test uses its own key prefix.
@Suite(
    "RedisStore against a server",
    .enabled(
        if: RedisTestServer.isAvailable,
        "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
    .timeLimit(.minutes(10)))
struct RedisStoreTests {
    private func makeStore(clock: any CacheClock = SystemClock()) throws -> RedisStore {
        try RedisStore(configuration: RedisTestServer.configuration(), clock: clock)
    }

    private func pttl(_ store: RedisStore, _ key: String, in namespace: String) async throws -> Int64 {
        let redisKey = String(buffer: store.keyspace.key(key, in: namespace))
        guard case .integer(let milliseconds) = try await store.command("PTTL", redisKey) else {
            Issue.record("PTTL did not answer an integer")
            return .min
        }
        return milliseconds
    }

    @Test("Set then get returns the bytes and dates; a missing key is nil; a set replaces")
    func setAndGet() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000.5)
        let binary = Data([0x00, 0x0D, 0x0A, 0xFF, 0x24, 0x2A])

        #expect(try await store.entry(for: "missing", in: "ns") == nil)
        try await store.set(binary, for: "k", in: "ns", storedAt: storedAt, expiresAt: nil)
        #expect(
            try await store.entry(for: "k", in: "ns") == StoredEntry(data: binary, storedAt: storedAt, expiresAt: nil))

        try await store.set(Data(), for: "k", in: "ns", storedAt: storedAt + 1, expiresAt: nil)
        #expect(
            try await store.entry(for: "k", in: "ns")
                == StoredEntry(data: Data(), storedAt: storedAt + 1, expiresAt: nil))
        #expect(try await store.entry(for: "k", in: "other") == nil)
    }

    @Test("Namespaces and keys containing ':' and any character never collide on the server")
    func injectiveOnServer() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }
        let pairs: [(namespace: String, key: String)] = [
            ("a:b", "c"), ("a", "b:c"), ("a:b:c", ""), ("", "a:b:c"), ("1", "a:b"), ("1:a", "b"), ("é", "\u{0}🦊"),
            ("*", "?"),
        ]
        for (index, pair) in pairs.enumerated() {
            try await store.set(Data([UInt8(index)]), for: pair.key, in: pair.namespace, storedAt: .now, expiresAt: nil)
        }
        for (index, pair) in pairs.enumerated() {
            #expect(try await store.entry(for: pair.key, in: pair.namespace)?.data == Data([UInt8(index)]), "\(pair)")
        }
    }

    @Test("entries(for:) reads many keys with one MGET, the only command the server sees")
    func multiGetIsOneRoundTrip() async throws {
        let configuration = try RedisTestServer.configuration()
        let store = try RedisStore(configuration: configuration)
        defer { Task { await store.shutdown() } }
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000)
        for index in stride(from: 0, to: 500, by: 2) {
            try await store.set(
                Data("v\(index)".utf8), for: "k\(index)", in: "many", storedAt: storedAt, expiresAt: nil)
        }
        let monitor = try await CommandMonitor(configuration: configuration, marker: configuration.keyPrefix)
        defer { monitor.close() }

        let keys = (0..<500).map { "k\($0)" } + ["k0"]
        let entries = try await store.entries(for: keys, in: "many")

        #expect(entries.count == 250)
        #expect(entries["k42"]?.data == Data("v42".utf8))
        #expect(entries["k41"] == nil)
        #expect(entries["k498"]?.storedAt == storedAt)
        #expect(try await store.entries(for: [], in: "many").isEmpty)
        // MONITOR reports commands in order; a PING through the store after it marks the end.
        _ = try await store.command("ECHO", configuration.keyPrefix + "-done")
        #expect(await eventually { monitor.seen.contains { $0.contains("-done") } })
        let commands = monitor.seen.filter { !$0.contains("-done") }
        #expect(commands.count == 1)
        #expect(commands.first?.contains("\"MGET\"") == true)
    }

    @Test("A reply of many large values, spread over many reads, comes back whole and in order")
    func largeReplyAcrossReads() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }
        // 200 values of 8 KiB: a 1.6 MiB MGET reply, far more than one read.
        let values = (0..<200).map { index in Data((0..<8_192).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }) }
        for (index, value) in values.enumerated() {
            try await store.set(value, for: "big\(index)", in: "large", storedAt: .now, expiresAt: nil)
        }

        let entries = try await store.entries(for: (0..<200).map { "big\($0)" }, in: "large")

        #expect(entries.count == 200)
        for (index, value) in values.enumerated() {
            #expect(entries["big\(index)"]?.data == value, "big\(index)")
        }
        // The connection is still in step: a single read after it gets its own value.
        #expect(try await store.entry(for: "big7", in: "large")?.data == values[7])
        try await store.removeAll(in: "large")
    }

    @Test("An expiry becomes a PX lifetime; the server drops the entry by itself")
    func expiryViaPX() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }

        try await store.set(Data([1]), for: "hour", in: "ttl", storedAt: .now, expiresAt: .now + 3_600)
        let hour = try await pttl(store, "hour", in: "ttl")
        #expect(hour > 3_000_000 && hour <= 3_600_000)
        #expect(try await store.entry(for: "hour", in: "ttl")?.expiresAt != nil)

        try await store.set(Data([2]), for: "forever", in: "ttl", storedAt: .now, expiresAt: nil)
        #expect(try await pttl(store, "forever", in: "ttl") == -1)

        // A short lifetime: poll the server until the key is gone, no fixed sleep.
        try await store.set(Data([3]), for: "short", in: "ttl", storedAt: .now, expiresAt: .now + 0.3)
        let short = try await pttl(store, "short", in: "ttl")
        // Positive and at most 300 ms, or already gone (-2) on a very busy machine; never -1 (no lifetime).
        #expect((short > 0 && short <= 300) || short == -2)
        #expect(try await eventually { try await pttl(store, "short", in: "ttl") == -2 })
        #expect(try await store.entry(for: "short", in: "ttl") == nil)
    }

    @Test("An entry already expired is not stored, and the older value is removed")
    func alreadyExpired() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }
        try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
        try await store.set(Data([2]), for: "k", in: "ns", storedAt: .now, expiresAt: .now - 1)
        #expect(try await store.entry(for: "k", in: "ns") == nil)
        #expect(try await pttl(store, "k", in: "ns") == -2)
    }

    @Test("An entry expired by the store's clock is a miss even while the server still holds it")
    func expiredByClock() async throws {
        let clock = ManualClock(start: Date())
        let store = try makeStore(clock: clock)
        defer { Task { await store.shutdown() } }
        try await store.set(Data([1]), for: "k", in: "ns", storedAt: clock.now(), expiresAt: clock.now() + 3_600)
        #expect(try await store.entries(for: ["k"], in: "ns").count == 1)
        clock.advance(by: 3_601)
        #expect(try await store.entry(for: "k", in: "ns") == nil)
        #expect(try await store.entries(for: ["k"], in: "ns").isEmpty)
        #expect(try await pttl(store, "k", in: "ns") > 0)
    }

    @Test("removeValue removes one key")
    func removeValue() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }
        try await store.set(Data([1]), for: "a", in: "ns", storedAt: .now, expiresAt: nil)
        try await store.set(Data([2]), for: "b", in: "ns", storedAt: .now, expiresAt: nil)
        try await store.removeValue(for: "a", in: "ns")
        try await store.removeValue(for: "never-there", in: "ns")
        #expect(try await store.entry(for: "a", in: "ns") == nil)
        #expect(try await store.entry(for: "b", in: "ns")?.data == Data([2]))
    }

    @Test("removeAll clears one namespace and no other, glob characters included")
    func removeAllLeavesOtherNamespaces() async throws {
        let store = try makeStore()
        defer { Task { await store.shutdown() } }
        let namespaces = ["a", "a*", "ab", "a:b", "[a]", "", "b"]
        for namespace in namespaces {
            for index in 0..<1_200 where namespace == "a*" || index < 3 {
                try await store.set(Data([1]), for: "k\(index)", in: namespace, storedAt: .now, expiresAt: nil)
            }
        }
        try await store.removeAll(in: "a*")  // 1,200 keys: more than one SCAN page
        #expect(try await store.entries(for: (0..<1_200).map { "k\($0)" }, in: "a*").isEmpty)
        for namespace in namespaces where namespace != "a*" {
            #expect(try await store.entries(for: ["k0", "k1", "k2"], in: namespace).count == 3, "\(namespace)")
        }
        try await store.removeAll(in: "a")
        #expect(try await store.entry(for: "k0", in: "a") == nil)
        #expect(try await store.entry(for: "k0", in: "ab") != nil)
        #expect(try await store.entry(for: "k0", in: "a:b") != nil)
        for namespace in namespaces { try await store.removeAll(in: namespace) }
    }

    @Test("removeAll walks the keyspace with SCAN and removes pages with UNLINK; KEYS is never sent")
    func removeAllNeverUsesKeys() async throws {
        let configuration = try RedisTestServer.configuration()
        let store = try RedisStore(configuration: configuration)
        defer { Task { await store.shutdown() } }
        for index in 0..<50 {
            try await store.set(Data([1]), for: "k\(index)", in: "clear", storedAt: .now, expiresAt: nil)
        }
        let monitor = try await CommandMonitor(configuration: configuration, marker: configuration.keyPrefix)
        defer { monitor.close() }

        try await store.removeAll(in: "clear")

        _ = try await store.command("ECHO", configuration.keyPrefix + "-done")
        #expect(await eventually { monitor.seen.contains { $0.contains("-done") } })
        let names = monitor.seen.compactMap { line in
            line.split(separator: "]", maxSplits: 1).last?.split(separator: " ").first.map { $0.uppercased() }
        }
        #expect(names.contains("\"SCAN\""))
        #expect(names.contains("\"UNLINK\""))
        #expect(!names.contains("\"KEYS\""), "\(names)")
        #expect(Set(names).isSubset(of: ["\"SCAN\"", "\"UNLINK\"", "\"PUBLISH\"", "\"ECHO\""]), "\(names)")
        #expect(try await store.entries(for: (0..<50).map { "k\($0)" }, in: "clear").isEmpty)
    }

    @Test("A value in another format is a miss, kept and reported; server errors are serverError")
    func foreignValueAndServerErrors() async throws {
        let recorder = RecordingLogHandler()
        var configuration = try RedisTestServer.configuration()
        configuration.logger = recorder.logger()
        let store = try RedisStore(configuration: configuration)
        defer { Task { await store.shutdown() } }
        let redisKey = String(buffer: store.keyspace.key("foreign", in: "ns"))
        #expect(try await store.command("SET", redisKey, "written by something else") == .simpleString("OK"))
        #expect(try await store.entry(for: "foreign", in: "ns") == nil)
        #expect(try await store.entries(for: ["foreign"], in: "ns").isEmpty)
        // Kept: another instance may have written a valid value since the read.
        let kept = try await store.command("GET", redisKey)
        #expect(kept == .bulkString(ByteBuffer(string: "written by something else")))
        let report = await recorder.record { $0.metadata["hoard.key"] == "foreign" }
        #expect(report.level == .warning)
        #expect(report.metadata["hoard.namespace"] == "ns")
        #expect(report.metadata["hoard.operation"] == "GET")
        #expect(recorder.records.filter { $0.metadata["hoard.key"] == "foreign" }.count == 2)
        _ = try await store.command("DEL", redisKey)

        // A key of the wrong type: the server's error comes back as serverError.
        #expect(try await store.command("RPUSH", redisKey, "x") == .integer(1))
        do {
            _ = try await store.entry(for: "foreign", in: "ns")
            Issue.record("GET on a list should fail")
        } catch {
            #expect(error.code == .serverError)
            #expect(error.serverMessage?.hasPrefix("WRONGTYPE") == true)
            #expect(error.key == "foreign")
        }
        _ = try await store.command("DEL", redisKey)
    }

    @Test("Concurrent operations through a one-connection pool share it, pipelined")
    func poolPipelines() async throws {
        var configuration = try RedisTestServer.configuration()
        configuration.maximumConnections = 1
        configuration.pipeliningLimit = 1_000
        let store = try RedisStore(configuration: configuration)
        defer { Task { await store.shutdown() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    try await store.set(
                        Data("\(index)".utf8), for: "k\(index)", in: "p", storedAt: .now, expiresAt: nil)
                }
            }
            try await group.waitForAll()
        }
        let entries = try await store.entries(for: (0..<1_000).map { "k\($0)" }, in: "p")
        #expect(entries.count == 1_000)
        #expect(entries["k999"]?.data == Data("999".utf8))
        #expect(await store.pool.load.connections == 1)
        try await store.removeAll(in: "p")
    }

    #if ServiceLifecycle
    @Test("In a ServiceGroup with a Cache, every write acknowledged before graceful shutdown is in Redis afterwards")
    func gracefulShutdown() async throws {
        let configuration = try RedisTestServer.configuration()
        let store = try RedisStore(configuration: configuration)
        let reopened = try RedisStore(configuration: configuration)
        let lost = try await writesLostAcrossGracefulShutdown(of: store, reopened: reopened)
        #expect(lost.isEmpty, "\(lost.count) lost, first \(lost.prefix(5))")
        await #expect(throws: RedisError.self) { _ = try await store.entry(for: "k0", in: "lifecycle") }
        await reopened.shutdown()
    }
    #endif
}
#endif
