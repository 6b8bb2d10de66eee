#if Postgres
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardPostgres

@Suite(
    "PostgresStore against a server",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(3)))
struct PostgresStoreTests {
    /// Runs `body` with a store on a fresh table, dropped afterwards.
    private func withStore(
        clock: any CacheClock = SystemClock(), _ change: (inout PostgresStore.Configuration) -> Void = { _ in },
        _ body: (PostgresStore) async throws -> Void
    ) async throws {
        var configuration = try PostgresTestServer.configuration()
        change(&configuration)
        let store = try PostgresStore(configuration: configuration, clock: clock)
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

    @Test("Set, get, overwrite and remove; bytes come back exactly, dates to the microsecond")
    func roundTrip() async throws {
        try await withStore { store in
            // Dates timestamptz holds exactly (whole microseconds, exact in binary).
            let storedAt = Date(timeIntervalSince1970: 1_700_000_000.5)
            let expiresAt = Date(timeIntervalSince1970: 4_000_000_000.25)
            let bytes = Data((0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            #expect(try await store.entry(for: "k", in: "ns") == nil)
            try await store.set(bytes, for: "k", in: "ns", storedAt: storedAt, expiresAt: expiresAt)
            #expect(
                try await store.entry(for: "k", in: "ns")
                    == StoredEntry(data: bytes, storedAt: storedAt, expiresAt: expiresAt))
            #expect(try await store.entry(for: "k", in: "other") == nil, "namespaces are separate")

            try await store.set(Data(), for: "k", in: "ns", storedAt: storedAt, expiresAt: nil)
            #expect(
                try await store.entry(for: "k", in: "ns")
                    == StoredEntry(data: Data(), storedAt: storedAt, expiresAt: nil))
            try await store.removeValue(for: "k", in: "ns")
            #expect(try await store.entry(for: "k", in: "ns") == nil)
            try await store.removeValue(for: "never-there", in: "ns")
        }
    }

    @Test("Any key: NUL, quotes, unicode, 10 KB; a 1 MiB value")
    func oddKeys() async throws {
        try await withStore { store in
            let keys = [
                "a\0b", "'; DROP TABLE x; --", "\"quoted\"", "ключ 🔑", String(repeating: "long", count: 2_500), "",
            ]
            for (index, key) in keys.enumerated() {
                try await store.set(Data([UInt8(index)]), for: key, in: "n\0s", storedAt: .now, expiresAt: nil)
            }
            for (index, key) in keys.enumerated() {
                #expect(try await store.entry(for: key, in: "n\0s")?.data == Data([UInt8(index)]))
            }
            #expect(try await store.entry(for: "a", in: "n\0s") == nil, "NUL is part of the key, not its end")
            let many = try await store.entries(for: keys, in: "n\0s")
            #expect(Set(many.keys) == Set(keys))
            let large = Data(repeating: 0xAB, count: 1 << 20)
            try await store.set(large, for: "large", in: "ns", storedAt: .now, expiresAt: nil)
            #expect(try await store.entry(for: "large", in: "ns")?.data == large)
        }
    }

    @Test("Multi-get of 100 keys in one statement: found ones by key, missing and expired ones absent, duplicates fine")
    func multiGet() async throws {
        let clock = ManualClock(start: wholeMilliseconds())
        try await withStore(clock: clock) { store in
            for index in 0..<100 where index % 3 != 0 {
                let expiry: Date? = index % 10 == 1 ? clock.now().addingTimeInterval(5) : nil
                try await store.set(
                    Data("v\(index)".utf8), for: "k\(index)", in: "ns", storedAt: clock.now(), expiresAt: expiry)
            }
            clock.advance(by: 10)
            let keys = (0..<100).map { "k\($0)" } + ["k1", "k2", "k2"]
            let found = try await store.entries(for: keys, in: "ns")
            let expected = Set((0..<100).filter { $0 % 3 != 0 && $0 % 10 != 1 }.map { "k\($0)" })
            #expect(Set(found.keys) == expected)
            for key in expected { #expect(found[key]?.data == Data("v\(key.dropFirst())".utf8)) }
            #expect(try await store.entries(for: [], in: "ns").isEmpty)
            #expect(try await store.entries(for: ["k2"], in: "other").isEmpty)
        }
    }

    @Test(
        "Expiry by the store's clock: expired rows are misses, removeExpired deletes them, an expired set removes the old value"
    )
    func expiry() async throws {
        let clock = ManualClock(start: wholeMilliseconds())
        try await withStore(clock: clock) { store in
            let start = clock.now()
            try await store.set(
                Data([1]), for: "short", in: "ns", storedAt: start, expiresAt: start.addingTimeInterval(10))
            try await store.set(
                Data([2]), for: "long", in: "ns", storedAt: start, expiresAt: start.addingTimeInterval(100))
            try await store.set(Data([3]), for: "forever", in: "ns", storedAt: start, expiresAt: nil)
            clock.advance(by: 9.999)
            #expect(try await store.entry(for: "short", in: "ns")?.data == Data([1]))
            clock.advance(by: 0.001)
            #expect(try await store.entry(for: "short", in: "ns") == nil, "expired exactly at expiresAt")
            #expect(try await store.usage().count == 3, "still in the table until swept")
            #expect(try await store.removeExpired() == 1)
            #expect(try await store.usage().count == 2)
            #expect(try await store.removeExpired() == 0)

            try await store.set(Data([4]), for: "forever", in: "ns", storedAt: clock.now(), expiresAt: clock.now())
            #expect(
                try await store.entry(for: "forever", in: "ns") == nil, "an already expired set removes the older value"
            )
            clock.advance(by: 1_000)
            #expect(try await store.entry(for: "long", in: "ns") == nil)
            #expect(try await store.removeExpired() == 1)
            #expect(try await store.usage() == StoreUsage(count: 0, bytes: 0))
        }
    }

    @Test("removeAll clears one namespace and no other")
    func clearNamespace() async throws {
        try await withStore { store in
            for namespace in ["a", "b", "a:", "A"] {
                for index in 0..<5 {
                    try await store.set(Data([1, 2]), for: "k\(index)", in: namespace, storedAt: .now, expiresAt: nil)
                }
            }
            try await store.removeAll(in: "a")
            #expect(try await store.entries(for: (0..<5).map { "k\($0)" }, in: "a").isEmpty)
            for namespace in ["b", "a:", "A"] {
                #expect(try await store.entries(for: (0..<5).map { "k\($0)" }, in: namespace).count == 5)
            }
            #expect(try await store.usage() == StoreUsage(count: 15, bytes: 30))
        }
    }

    @Test("Trimming deletes the oldest rows first, to a row budget and to a byte budget")
    func trimming() async throws {
        try await withStore { store in
            let start = wholeMilliseconds()
            // Written out of order: age, not insertion order, decides.
            for index in [5, 0, 9, 3, 7, 1, 8, 2, 6, 4] {
                try await store.set(
                    Data(repeating: 1, count: 100), for: "k\(index)", in: index % 2 == 0 ? "even" : "odd",
                    storedAt: start.addingTimeInterval(Double(index)), expiresAt: nil)
            }
            #expect(try await store.usage() == StoreUsage(count: 10, bytes: 1_000))
            #expect(try await store.trim(toRows: 7, bytes: nil) == 3)
            #expect(try await store.entries(for: ["k0", "k2"], in: "even").isEmpty)
            #expect(try await store.entry(for: "k1", in: "odd") == nil)
            #expect(try await store.entry(for: "k3", in: "odd") != nil)

            #expect(try await store.trim(toRows: nil, bytes: 450) == 3, "7 rows of 100 bytes down to 4")
            #expect(Set(try await store.entries(for: ["k6", "k8"], in: "even").keys) == ["k6", "k8"])
            #expect(Set(try await store.entries(for: ["k3", "k5", "k7", "k9"], in: "odd").keys) == ["k7", "k9"])
            #expect(try await store.trim(toRows: 10, bytes: 10_000) == 0)
            #expect(try await store.trim(toRows: nil, bytes: nil) == 0)
            #expect(try await store.trim(toRows: 0, bytes: nil) == 4)
            await #expect(throws: PostgresStoreError.self) { try await store.trim(toRows: -1, bytes: nil) }
        }
    }

    @Test("Maintenance runs every maintenanceInterval writes: sweeps expired rows, then trims to the budgets")
    func maintenance() async throws {
        let clock = ManualClock(start: wholeMilliseconds())
        try await withStore(
            clock: clock,
            {
                $0.maintenanceInterval = 10
                $0.maximumRows = 6
            }
        ) { store in
            try await store.set(
                Data([0]), for: "expiring", in: "ns", storedAt: clock.now(),
                expiresAt: clock.now().addingTimeInterval(1))
            clock.advance(by: 2)
            for index in 1..<10 {
                clock.advance(by: 1)
                try await store.set(
                    Data([UInt8(index)]), for: "k\(index)", in: "ns", storedAt: clock.now(), expiresAt: nil)
            }
            // The tenth write ran maintenance: the expired row went, then the 3 oldest of 9.
            #expect(try await store.usage().count == 6)
            #expect(
                Set(try await store.entries(for: (1..<10).map { "k\($0)" }, in: "ns").keys)
                    == Set((4..<10).map { "k\($0)" }))
            let nothingLeft = try await store.maintain()
            #expect(nothingLeft.expired == 0 && nothingLeft.trimmed == 0)
        }
    }

    @Test("write(_:) counts every change toward maintenance, and runs it once a batch passes a multiple")
    func batchMaintenance() async throws {
        let clock = ManualClock(start: wholeMilliseconds())
        try await withStore(
            clock: clock,
            {
                $0.maintenanceInterval = 10
                $0.maximumRows = 6
            }
        ) { store in
            let first: [CacheStoreWrite] = (1...8).map { index in
                clock.advance(by: 1)
                return .set(Data([UInt8(index)]), for: "k\(index)", in: "ns", storedAt: clock.now(), expiresAt: nil)
            }
            try await store.write(first)
            #expect(try await store.usage().count == 8, "8 writes: no maintenance yet")
            clock.advance(by: 1)
            try await store.write([
                .set(Data([9]), for: "k9", in: "ns", storedAt: clock.now(), expiresAt: nil),
                .removeValue(for: "absent", in: "ns"),
                .set(Data([10]), for: "k10", in: "ns", storedAt: clock.now(), expiresAt: nil),
            ])
            // Writes 9 to 11 passed 10: trimmed to the 6 newest of 10 rows.
            #expect(try await store.usage().count == 6)
            #expect(
                Set(try await store.entries(for: (1...10).map { "k\($0)" }, in: "ns").keys)
                    == Set((5...10).map { "k\($0)" }))
        }
    }

    @Test(
        "UNLOGGED is honoured; an existing table is reused; without createsTable a missing table is a serverError 42P01"
    )
    func tableCreation() async throws {
        try await withStore({ $0.isUnlogged = true }) { store in
            try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
            let persistence = try await PostgresTestServer.sql(
                "SELECT relpersistence::text FROM pg_class WHERE oid = '\(store.statements.qualifiedTable)'::regclass")
            #expect(persistence == ["u"])
            // A second store on the same table finds the row.
            let again = try PostgresStore(configuration: store.configuration)
            #expect(try await again.entry(for: "k", in: "ns")?.data == Data([1]))
            await again.shutdown()
        }
        try await withStore { store in
            try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
            let persistence = try await PostgresTestServer.sql(
                "SELECT relpersistence::text FROM pg_class WHERE oid = '\(store.statements.qualifiedTable)'::regclass")
            #expect(persistence == ["p"])
        }
        try await withStore({ $0.createsTable = false }) { store in
            let result = await outcome { () async throws(PostgresStoreError) in
                try await store.entry(for: "k", in: "ns")
            }
            guard case .failure(let error) = result else {
                Issue.record("a missing table must fail")
                return
            }
            #expect(error.code == .serverError)
            #expect(error.sqlState == "42P01")
            #expect(error.operation == "get")
            #expect(error.key == "k")
        }
    }

    @Test("A statement that failed to prepare (missing table) works on the same store once the table exists")
    func failedPreparationIsNotKept() async throws {
        try await withStore({
            $0.createsTable = false
            $0.maximumConnections = 1
        }) { store in
            // Given a store whose one connection failed to prepare its get and its set
            for _ in 0..<2 {
                let get = await outcome { () async throws(PostgresStoreError) in
                    try await store.entry(for: "k", in: "ns")
                }
                // (`set` also throws HoardError, for dates no store can keep.)
                let set = await outcome { () async throws in
                    try await store.set(Data([1]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
                }
                for result in [get.map { _ in () }.mapError { $0 as any Error }, set] {
                    guard case .failure(let error) = result else {
                        Issue.record("a missing table must fail")
                        continue
                    }
                    #expect((error as? PostgresStoreError)?.sqlState == "42P01", "\(error)")
                }
            }
            // When another store creates the table and writes a row
            let creator = try PostgresStore(
                configuration: {
                    var c = store.configuration
                    c.createsTable = true
                    return c
                }())
            try await creator.set(Data([7]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
            await creator.shutdown()
            // Then the first store reads and writes it
            #expect(try await store.entry(for: "k", in: "ns")?.data == Data([7]))
            try await store.set(Data([8]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
            #expect(try await store.entry(for: "k", in: "ns")?.data == Data([8]))
        }
    }

    @Test(
        "A prepared statement the server will no longer run (its result type changed) fails once with 0A000, then the store prepares it afresh"
    )
    func spoiledStatementIsPreparedAgain() async throws {
        try await withStore({ $0.maximumConnections = 1 }) { store in
            try await store.set(Data("v".utf8), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
            #expect(try await store.entry(for: "k", in: "ns")?.data == Data("v".utf8))
            // Given the get's prepared plan, when the value column changes type under it
            _ = try await PostgresTestServer.sql(
                "ALTER TABLE \(store.statements.qualifiedTable) ALTER COLUMN value TYPE text USING convert_from(value, 'UTF8')"
            )
            // Then the first get fails with the server's 0A000 ("cached plan must not change result type")
            let first = await outcome { () async throws(PostgresStoreError) in try await store.entry(for: "k", in: "ns")
            }
            guard case .failure(let error) = first else {
                Issue.record("the server refuses the old plan once")
                return
            }
            #expect(error.code == .serverError)
            #expect(error.sqlState == "0A000", "\(error)")
            // and the next get prepares the statement again (on a new connection: the pool
            // closed the one holding the spoiled statement) and reads the text's bytes
            #expect(try await store.entry(for: "k", in: "ns")?.data == Data("v".utf8))
        }
    }

    @Test("Crafted schema and table names are names, not SQL")
    func craftedIdentifiers() async throws {
        let victim = "hoard_victim_\(UUID().uuidString.prefix(8).lowercased())"
        _ = try await PostgresTestServer.sql("CREATE TABLE \(victim) (x int)")
        let schema = "evil\"; DROP TABLE \(victim); --"
        let table = "t\"); DROP TABLE \(victim); --"
        var configuration = try PostgresTestServer.configuration()
        configuration.schema = schema
        configuration.table = table
        let store = try PostgresStore(configuration: configuration)
        try await store.set(Data([9]), for: "k", in: "ns", storedAt: .now, expiresAt: nil)
        #expect(try await store.entry(for: "k", in: "ns")?.data == Data([9]))
        #expect(try await store.removeExpired() == 0)
        #expect(try await store.trim(toRows: 10, bytes: nil) == 0)
        try await store.removeAll(in: "ns")
        await store.shutdown()

        let tables = try await PostgresTestServer.sql(
            "SELECT schemaname || '|' || tablename FROM pg_tables WHERE tablename IN ('\(victim)', '\(table.replacingOccurrences(of: "'", with: "''"))') ORDER BY 1"
        )
        #expect(tables.contains("\(schema)|\(table)"), "the table has exactly the crafted name, in the crafted schema")
        #expect(tables.contains("public|\(victim)"), "nothing was dropped")
        _ = try await PostgresTestServer.sql("DROP SCHEMA \(_PostgresStatements.quote(schema)) CASCADE")
        _ = try await PostgresTestServer.sql("DROP TABLE \(victim)")
    }

    #if ServiceLifecycle
    @Test(
        "In a ServiceGroup with a Cache, every write acknowledged before graceful shutdown is in PostgreSQL afterwards")
    func gracefulShutdown() async throws {
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        let reopened = try PostgresStore(configuration: configuration)
        let lost = try await writesLostAcrossGracefulShutdown(of: store, reopened: reopened)
        #expect(lost.isEmpty, "\(lost.count) lost, first \(lost.prefix(5))")
        await #expect(throws: PostgresStoreError.self) { _ = try await store.entry(for: "k0", in: "lifecycle") }
        await reopened.shutdown()
        await PostgresTestServer.drop(configuration)
    }
    #endif
}
#endif
