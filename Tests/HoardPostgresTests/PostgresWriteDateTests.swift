#if Postgres
import Foundation
import Testing

@testable import Hoard
@testable import HoardPostgres

/// Writes made on a `PostgresStore` directly whose dates no store can keep (a NaN or
/// infinite stored date, a NaN expiry) are refused with `invalidArgument` before
/// anything is sent, as `DiskStore` and `InMemoryRemoteStore` refuse them.
@Suite(
    "PostgresStore refuses writes with dates no store can keep",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(3)))
struct PostgresWriteDateTests {
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

    /// Runs `body` with a store on a fresh table, dropped afterwards.
    private func withStore(_ body: (PostgresStore) async throws -> Void) async throws {
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        do {
            try await body(store)
        } catch {
            await store.shutdown()
            await PostgresTestServer.drop(configuration)
            throw error
        }
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }

    /// The rows of the store's table, as `key stored_at expires_at` in text.
    private func rows(of store: PostgresStore) async throws -> [String?] {
        try await PostgresTestServer.sql(
            """
            SELECT convert_from(key, 'UTF8') || ' ' || stored_at::text || ' ' || coalesce(expires_at::text, 'never') \
            FROM \(store.statements.qualifiedTable) ORDER BY key
            """)
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

    @Test("set refuses a NaN or infinite stored date and a NaN expiry with invalidArgument; the older value stays")
    func setRefusesBadDates() async throws {
        try await withStore { store in
            let old = StoredEntry(data: Data("old".utf8), storedAt: Self.stored, expiresAt: nil)
            try await store.set(old.data, for: "k", in: "ns", storedAt: old.storedAt, expiresAt: old.expiresAt)
            let before = try await rows(of: store)
            for (storedAt, expiresAt) in Self.refused {
                await #expect(Self.describe(storedAt, expiresAt)) {
                    try await store.set(
                        Data("new".utf8), for: "k", in: "ns", storedAt: storedAt, expiresAt: expiresAt)
                } throws: { error in
                    Self.isInvalidArgument(error, key: "k")
                }
                await #expect {
                    try await store.set(
                        Data("new".utf8), for: "fresh", in: "ns", storedAt: storedAt, expiresAt: expiresAt)
                } throws: { error in
                    Self.isInvalidArgument(error, key: "fresh")
                }
            }
            #expect(Self.summary(try await store.entry(for: "k", in: "ns")) == Self.summary(old))
            // No row was written or changed, not even one no read returns.
            #expect(try await rows(of: store) == before)
            // An infinite expiry is a valid "never".
            try await store.set(
                Data("forever".utf8), for: "k", in: "ns", storedAt: Self.stored,
                expiresAt: Date(timeIntervalSinceReferenceDate: .infinity))
            let forever = try await store.entry(for: "k", in: "ns")?.data
            #expect(forever == Data("forever".utf8))
        }
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
        "write stops at a change with such a date, as InMemoryRemoteStore's does: the changes before it are applied, it and those after are not"
    )
    func batchStopsAtRefusedChange() async throws {
        try await withStore { store in
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
            // The refused change and the one after it left no row.
            #expect(try await rows(of: store).compactMap { $0?.split(separator: " ").first } == ["a", "k"])
        }
    }

    @Test(
        "A cache writer's share of a batch: only the change with such a date fails, and every other change is applied"
    )
    func shareFailsOnlyTheRefusedChange() async throws {
        try await withStore { store in
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
                try await Self.contents(of: store) == [
                    "a": Data("a".utf8), "k": Data("old".utf8), "c": Data("c".utf8),
                ])
        }
    }
}
#endif
