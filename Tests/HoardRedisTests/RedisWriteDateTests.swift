#if Redis
import Foundation
import NIOCore
import Testing

@testable import Hoard
@testable import HoardRedis

/// Writes made on a `RedisStore` directly whose dates no store can keep (a NaN or
/// infinite stored date, a NaN expiry) are refused with `invalidArgument` before
/// anything is sent, as `DiskStore` and `InMemoryRemoteStore` refuse them.
@Suite(
    "RedisStore refuses writes with dates no store can keep",
    .enabled(
        if: RedisTestServer.isAvailable,
        "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
    .timeLimit(.minutes(10)))
struct RedisWriteDateTests {
    static let stored = Date(timeIntervalSince1970: 1_700_000_000)
    static let nan = Date(timeIntervalSinceReferenceDate: .nan)

    /// The dates of the writes refused: a NaN, infinite or minus infinite stored date
    /// (with no expiry, a later one, or one already past, which would otherwise make
    /// the write a removal), a NaN expiry.
    static let refused: [(storedAt: Date, expiresAt: Date?)] = [
        (nan, nil), (Date(timeIntervalSinceReferenceDate: .infinity), nil),
        (Date(timeIntervalSinceReferenceDate: -.infinity), nil), (nan, .distantFuture), (nan, stored + 3_600),
        (stored, nan),
    ]

    /// A single server, and a cluster when `HOARD_REDIS_CLUSTER_URL` names one.
    enum Target: String, CustomTestStringConvertible, CaseIterable {
        case server, cluster

        var testDescription: String { rawValue }

        static var available: [Target] { RedisTestCluster.isAvailable ? allCases : [.server] }

        func store() throws -> RedisStore {
            switch self {
            case .server: try RedisStore(configuration: RedisTestServer.configuration())
            case .cluster: try RedisStore(configuration: RedisTestCluster.configuration())
            }
        }
    }

    /// The dates of a write, in seconds since 2001: a `Date` that is not finite
    /// cannot describe itself.
    static func describe(_ storedAt: Date, _ expiresAt: Date?) -> Comment {
        let expiry = expiresAt.map { "\($0.timeIntervalSinceReferenceDate)" } ?? "never"
        return "stored at \(storedAt.timeIntervalSinceReferenceDate), expiring at \(expiry)"
    }

    /// An entry as its bytes and dates in seconds since 2001, for comparing entries
    /// whose dates may be far beyond what a `Date` can describe.
    static func summary(_ entry: StoredEntry?) -> String? {
        entry.map { entry in
            let expiry = entry.expiresAt.map { "\($0.timeIntervalSinceReferenceDate)" } ?? "never"
            let stored = entry.storedAt.timeIntervalSinceReferenceDate
            return "\(String(decoding: entry.data, as: UTF8.self)) \(stored) \(expiry)"
        }
    }

    static func isInvalidArgument(_ error: any Error, key: String) -> Bool {
        (error as? HoardError)?.code == .invalidArgument && (error as? HoardError)?.key == key
    }

    @Test(
        "set refuses a NaN or infinite stored date and a NaN expiry with invalidArgument; the older value stays",
        arguments: Target.available)
    func setRefusesBadDates(target: Target) async throws {
        let store = try target.store()
        defer { Task { await store.shutdown() } }
        let old = StoredEntry(data: Data("old".utf8), storedAt: Self.stored, expiresAt: nil)
        try await store.set(old.data, for: "k", in: "ns", storedAt: old.storedAt, expiresAt: old.expiresAt)
        for (storedAt, expiresAt) in Self.refused {
            await #expect(Self.describe(storedAt, expiresAt)) {
                try await store.set(Data("new".utf8), for: "k", in: "ns", storedAt: storedAt, expiresAt: expiresAt)
            } throws: { error in
                Self.isInvalidArgument(error, key: "k")
            }
            await #expect {
                try await store.set(Data("new".utf8), for: "fresh", in: "ns", storedAt: storedAt, expiresAt: expiresAt)
            } throws: { error in
                Self.isInvalidArgument(error, key: "fresh")
            }
        }
        #expect(Self.summary(try await store.entry(for: "k", in: "ns")) == Self.summary(old))
        #expect(Self.summary(try await store.entry(for: "fresh", in: "ns")) == nil)
        if target == .server {
            // Nothing was written for the key, not even a value no read returns.
            let redisKey = String(buffer: store.keyspace.key("fresh", in: "ns"))
            #expect(try await store.command("EXISTS", redisKey) == .integer(0))
        }
        // An infinite expiry is a valid "never".
        try await store.set(
            Data("forever".utf8), for: "k", in: "ns", storedAt: Self.stored,
            expiresAt: Date(timeIntervalSinceReferenceDate: .infinity))
        let forever = try await store.entry(for: "k", in: "ns")?.data
        #expect(forever == Data("forever".utf8))
    }

    /// A batch with a change whose stored date is NaN between other changes.
    static let batch: [CacheStoreWrite] = [
        .set(Data("a".utf8), for: "a", in: "ns", storedAt: stored, expiresAt: nil),
        .removeValue(for: "r", in: "ns"),
        .set(Data("new".utf8), for: "k", in: "ns", storedAt: nan, expiresAt: nil),
        .set(Data("c".utf8), for: "c", in: "ns", storedAt: stored, expiresAt: nil),
    ]

    /// Writes `k` and `r`, which `batch` changes.
    static func prepare(_ store: any RemoteCacheStore) async throws {
        try await store.set(Data("old".utf8), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
        try await store.set(Data("r".utf8), for: "r", in: "ns", storedAt: stored, expiresAt: nil)
    }

    /// What `store` holds for the keys `batch` changes.
    static func contents(of store: any RemoteCacheStore) async throws -> [String: Data] {
        try await store.entries(for: ["a", "r", "k", "c"], in: "ns").mapValues(\.data)
    }

    @Test(
        "write stops at a change with such a date, as InMemoryRemoteStore's does: the changes before it are applied, it and those after are not",
        arguments: Target.available)
    func batchStopsAtRefusedChange(target: Target) async throws {
        let store = try target.store()
        defer { Task { await store.shutdown() } }
        let reference = InMemoryRemoteStore()
        for remote in [store, reference] as [any RemoteCacheStore] {
            try await Self.prepare(remote)
            await #expect {
                try await remote.write(Self.batch)
            } throws: { error in
                Self.isInvalidArgument(error, key: "k")
            }
        }
        let held = try await Self.contents(of: store)
        #expect(held == (try await Self.contents(of: reference)))
        #expect(held == ["a": Data("a".utf8), "k": Data("old".utf8)])
    }

    @Test(
        "A cache writer's share of a batch: only the change with such a date fails, and every other change is applied",
        arguments: Target.available)
    func shareFailsOnlyTheRefusedChange(target: Target) async throws {
        let store = try target.store()
        defer { Task { await store.shutdown() } }
        try await Self.prepare(store)
        var share = _StoreBatch(count: Self.batch.count)
        while let range = share.next {
            do {
                try await store.write(Array(Self.batch[range]))
                share.finish(range, error: nil)
            } catch {
                share.finish(range, error: error)
            }
        }
        #expect(share.failures.map(\.position) == [2])
        #expect(share.failures.allSatisfy { Self.isInvalidArgument($0.error, key: "k") })
        // The writer removes the refused change's key, so the older value is not served.
        #expect(share.staleKeys(of: Self.batch) == [2])
        #expect(
            try await Self.contents(of: store) == ["a": Data("a".utf8), "k": Data("old".utf8), "c": Data("c".utf8)])
    }

    @Test("Nothing of a refused change is sent: the server sees the changes before it and no other command")
    func refusedChangeIsNotSent() async throws {
        let server = try await ScriptedRedisServer { words in
            switch words.first {
            case "SET": .reply(.simpleString("OK"))
            default: .reply(.integer(0))
            }
        }
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(port: server.port, keyPrefix: "dates"))
        defer { Task { await store.shutdown() } }
        let changes = { server.commands.filter { ["SET", "UNLINK", "PUBLISH"].contains($0.first) } }
        await #expect(throws: HoardError.self) {
            try await store.set(Data("new".utf8), for: "k", in: "ns", storedAt: Self.nan, expiresAt: nil)
        }
        #expect(changes().isEmpty, "\(changes())")
        await #expect(throws: HoardError.self) { try await store.write(Self.batch) }
        let sent = changes()
        #expect(
            sent.map { Array($0.prefix(2)) } == [
                ["SET", "dates:2:ns:a"], ["UNLINK", "dates:2:ns:r"], ["PUBLISH", "dates:invalidate:2:ns"],
            ], "\(sent)")
        // The announcement names the keys changed, a and r, and no other.
        #expect(sent.last?.last?.hasSuffix(" m1:a1:r") == true, "\(sent)")
    }

    @Test(
        "When a change before the refused one fails on the server, the RedisError names that change, the refused one and those after it as not applied"
    )
    func serverFailureBeforeRefusedChange() async throws {
        let server = try await ScriptedRedisServer { words in
            switch words.first {
            case "SET" where words.dropFirst().first?.hasSuffix(":a") == true:
                .reply(.error("ERR refused by the script"))
            case "SET": .reply(.simpleString("OK"))
            default: .reply(.integer(0))
            }
        }
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(port: server.port, keyPrefix: "dates"))
        defer { Task { await store.shutdown() } }
        // Taken apart here, not by #expect: the error holds a NaN date, which cannot
        // describe itself (and is equal to no date, so the changes are compared by key).
        var thrown: (any Error)?
        do {
            try await store.write(Self.batch)
        } catch {
            thrown = error
        }
        let error = thrown as? RedisError
        let (code, message) = (error?.code, thrown.map { "\($0)" } ?? "nothing thrown")
        let unapplied = error?.unappliedChanges.map { $0.changedKey?.key }
        #expect(code == .serverError, "\(message)")
        #expect(unapplied == ["a", "k", "c"])
        // The change between them was applied; the refused one and the next were not sent.
        let keys = server.commands.filter { ["SET", "UNLINK"].contains($0.first) }.map { Array($0.prefix(2)) }
        #expect(keys == [["SET", "dates:2:ns:a"], ["UNLINK", "dates:2:ns:r"]], "\(keys)")
    }
}
#endif
