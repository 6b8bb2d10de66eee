import Foundation
import Hoard
import HoardPostgres
import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// The store and the baseline client, both on `public.hoard_bench`, opened once.
final class PostgresFixture: Sendable {
    static let table = "hoard_bench"
    static let namespace = "bench"
    static let keyCount = 10_000

    private struct Opened: Sendable {
        let store: PostgresStore
        let client: PostgresClient
        /// The floors, or why they could not be opened (the raw client speaks only
        /// trust authentication): then only the floor benchmarks fail, saying so.
        let floors: Result<Floors, any Error>
    }

    /// The floors under the store, each with its own connections: the raw wire client
    /// on one connection, on four connections sharing one event loop (as the store's
    /// pool does) and on four connections over four loops (as pgbench -j 4 runs four
    /// threads); and postgres-nio's EventLoopFuture API (`PreparedQuery`) on four
    /// connections over four loops, with no pool.
    private struct Floors: Sendable {
        let raw: RawPostgresClient
        let rawOneLoop: [RawPostgresClient]
        let rawFourLoops: [RawPostgresClient]
        let futuresFourLoops: [(PostgresConnection, PreparedQuery)]
    }

    /// The floors' event loops, four threads as pgbench -c 4 -j 4 has.
    private static let floorGroup = MultiThreadedEventLoopGroup(numberOfThreads: 4)

    private let url: String
    private let opened = Mutex<Opened?>(nil)
    let value = Data((0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    init(url: String) {
        self.url = url
    }

    /// Opens the store and the baseline client, and fills the table, once.
    func open() async throws {
        if opened.withLock({ $0 != nil }) { return }
        var configuration = try PostgresStore.Configuration(url: url)
        configuration.table = Self.table
        configuration.maintenanceInterval = 0
        let store = try PostgresStore(configuration: configuration)
        var clientConfiguration = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: .disable)
        // Tuned as the store tunes its own client: all connections open, no idle or
        // keep-alive timers, which postgres-nio otherwise schedules and cancels
        // around every statement. The baseline is then the library at its best.
        clientConfiguration.options.maximumConnections = configuration.maximumConnections
        clientConfiguration.options.minimumConnections = configuration.maximumConnections
        clientConfiguration.options.keepAliveBehavior = nil
        let client = PostgresClient(configuration: clientConfiguration)
        Task { await client.run() }
        let existing = try await store.entries(for: (0..<Self.keyCount).map { Self.key($0) }, in: Self.namespace)
        if existing.count < Self.keyCount {
            for index in 0..<Self.keyCount {
                try await store.set(value, for: Self.key(index), in: Self.namespace, storedAt: Date(), expiresAt: nil)
            }
        }
        let floors: Result<Floors, any Error>
        do { floors = .success(try await openFloors(configuration)) } catch { floors = .failure(error) }
        opened.withLock { $0 = Opened(store: store, client: client, floors: floors) }
    }

    private func openFloors(_ configuration: PostgresStore.Configuration) async throws -> Floors {
        let (host, port, user, database) = (
            configuration.host, configuration.port, configuration.username,
            configuration.database ?? configuration.username
        )
        func raw(on loop: any EventLoop) async throws -> RawPostgresClient {
            try await RawPostgresClient.connect(host: host, port: port, user: user, database: database, on: loop)
        }
        let oneLoop = Self.floorGroup.next()
        var rawOneLoop: [RawPostgresClient] = []
        var rawFourLoops: [RawPostgresClient] = []
        var futures: [(PostgresConnection, PreparedQuery)] = []
        for index in 0..<4 {
            rawOneLoop.append(try await raw(on: oneLoop))
            rawFourLoops.append(try await raw(on: Self.floorGroup.next()))
            let connection = try await PostgresConnection.connect(
                on: Self.floorGroup.next(),
                configuration: .init(
                    host: host, port: port, username: user, password: configuration.password, database: database,
                    tls: .disable),
                id: index, logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
            futures.append((connection, try await connection.prepare(query: GetStatement.sql).get()))
        }
        return Floors(
            raw: try await raw(on: oneLoop), rawOneLoop: rawOneLoop, rawFourLoops: rawFourLoops,
            futuresFourLoops: futures)
    }

    static func key(_ index: Int) -> String { "key-\(index)" }

    private var store: PostgresStore { opened.withLock { $0!.store } }
    private var client: PostgresClient { opened.withLock { $0!.client } }
    private var floors: Floors {
        get throws { try opened.withLock { $0!.floors }.get() }
    }

    // MARK: Floors

    /// `count` gets on the raw wire client's one connection.
    func rawGets(_ count: Int) async throws {
        try await floors.raw.runGets(count)
    }

    /// `perClient` gets on each of four raw connections at once, on one event loop or four.
    func rawGetsX4(_ perClient: Int, fourLoops: Bool) async throws {
        let clients = fourLoops ? try floors.rawFourLoops : try floors.rawOneLoop
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in clients { group.addTask { try await client.runGets(perClient) } }
            try await group.waitForAll()
        }
    }

    /// `perClient` gets through postgres-nio's EventLoopFuture API on each of four
    /// connections (four loops) at once, each get chained on its connection's loop.
    func futuresGetsX4(_ perClient: Int) async throws {
        let namespace = PostgresData(bytes: Array(Self.namespace.utf8))
        @Sendable func gets(_ query: PreparedQuery, on loop: any EventLoop, _ left: Int) -> EventLoopFuture<Void> {
            guard left > 0 else { return loop.makeSucceededVoidFuture() }
            let key = PostgresData(bytes: Array(Self.key(Int.random(in: 0..<Self.keyCount)).utf8))
            return query.execute([namespace, key, PostgresData(date: Date())]).flatMapThrowing { rows in
                guard rows.count == 1 else { throw BenchmarkFailure("postgres-nio futures: \(rows.count) rows") }
            }.flatMap { gets(query, on: loop, left - 1) }
        }
        let all = try floors.futuresFourLoops.map { connection, query in
            connection.eventLoop.flatSubmit { gets(query, on: connection.eventLoop, perClient) }
        }
        for future in all { try await future.get() }
    }

    // MARK: PostgresStore

    func storeGet() async throws {
        let entry = try await store.entry(for: Self.key(Int.random(in: 0..<Self.keyCount)), in: Self.namespace)
        precondition(entry?.data.count == 1_024)
    }

    func storeSet() async throws {
        try await store.set(
            value, for: Self.key(Int.random(in: 0..<Self.keyCount)), in: Self.namespace, storedAt: Date(),
            expiresAt: nil)
    }

    /// `write(_:)` of `count` sets of consecutive keys from a random start.
    func storeWriteBatch(count: Int) async throws {
        let start = Int.random(in: 0...(Self.keyCount - count))
        let now = Date()
        try await store.write(
            (start..<(start + count)).map {
                .set(value, for: Self.key($0), in: Self.namespace, storedAt: now, expiresAt: nil)
            })
    }

    func storeMultiGet() async throws {
        let start = Int.random(in: 0...(Self.keyCount - 100))
        let entries = try await store.entries(for: (start..<(start + 100)).map { Self.key($0) }, in: Self.namespace)
        precondition(entries.count == 100)
    }

    // MARK: Baseline: postgres-nio prepared statements, same SQL

    func baselineGet() async throws {
        let statement = GetStatement(key: ByteBuffer(string: Self.key(Int.random(in: 0..<Self.keyCount))), now: Date())
        var found = 0
        for try await row in try await client.execute(statement) {
            precondition(row.0.readableBytes == 1_024)
            found += 1
        }
        precondition(found == 1)
    }

    func baselineSet() async throws {
        let key = Self.key(Int.random(in: 0..<Self.keyCount))
        let statement = SetStatement(
            key: ByteBuffer(string: key), value: ByteBuffer(bytes: value), storedAt: Date(),
            payload: "baseline k 5:bench\(key)")
        for try await _ in try await client.execute(statement) {}
    }

    /// The baseline's upsert of `count` consecutive keys from a random start, one
    /// statement each.
    func baselineSetBatch(count: Int) async throws {
        let start = Int.random(in: 0...(Self.keyCount - count))
        let now = Date()
        for index in start..<(start + count) {
            let key = Self.key(index)
            let statement = SetStatement(
                key: ByteBuffer(string: key), value: ByteBuffer(bytes: value), storedAt: now,
                payload: "baseline k 5:bench\(key)")
            for try await _ in try await client.execute(statement) {}
        }
    }

    func baselineMultiGet() async throws {
        let start = Int.random(in: 0...(Self.keyCount - 100))
        let statement = MultiGetStatement(
            keys: (start..<(start + 100)).map { ByteBuffer(string: Self.key($0)) }, now: Date())
        var found = 0
        for try await _ in try await client.execute(statement) { found += 1 }
        precondition(found == 100)
    }

    /// Runs `operation` `count` times in a task that prefers the store's
    /// `taskExecutor`, so that each operation runs on the event loop of the store's
    /// connections and costs no thread hop.
    func onStoreLoop(_ count: Int, _ operation: @escaping @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(store.taskExecutor) {
            for _ in 0..<count { try await operation() }
        }
    }

    /// Runs `operation` `perClient` times on each of `clients` tasks at once, on the
    /// store's event loop (the tasks inherit the preference).
    func concurrentlyOnStoreLoop(
        _ clients: Int, _ perClient: Int, _ operation: @escaping @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(store.taskExecutor) {
            try await concurrently(clients, perClient, operation)
        }
    }

    /// Runs `operation` `perClient` times on each of `clients` tasks at once.
    func concurrently(_ clients: Int, _ perClient: Int, _ operation: @escaping @Sendable () async throws -> Void)
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask { for _ in 0..<perClient { try await operation() } }
            }
            try await group.waitForAll()
        }
    }
}

private let namespaceBytes = ByteBuffer(string: PostgresFixture.namespace)

/// The store's get, as a named prepared statement.
struct GetStatement: PostgresPreparedStatement {
    static let sql = """
        SELECT value, stored_at, expires_at FROM "public"."hoard_bench"
        WHERE namespace = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)
        """
    typealias Row = (ByteBuffer, Date, Date?)
    var key: ByteBuffer
    var now: Date

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(namespaceBytes)
        bindings.append(key)
        bindings.append(now)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The store's multi-get, as a named prepared statement.
struct MultiGetStatement: PostgresPreparedStatement {
    static let sql = """
        SELECT key, value, stored_at, expires_at FROM "public"."hoard_bench"
        WHERE namespace = $1 AND key = ANY($2) AND (expires_at IS NULL OR expires_at > $3)
        """
    typealias Row = (ByteBuffer, ByteBuffer, Date, Date?)
    var keys: [ByteBuffer]
    var now: Date

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(namespaceBytes)
        bindings.append(keys)
        bindings.append(now)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The store's set (upsert and `pg_notify` in one statement), as a named prepared statement.
struct SetStatement: PostgresPreparedStatement {
    static let sql = """
        WITH written AS (
            INSERT INTO "public"."hoard_bench" (namespace, key, value, stored_at, expires_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (namespace, key) DO UPDATE
            SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at
            RETURNING 1)
        SELECT pg_notify($6, $7)
        """
    typealias Row = ()
    var key: ByteBuffer
    var value: ByteBuffer
    var storedAt: Date
    var payload: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(namespaceBytes)
        bindings.append(key)
        bindings.append(value)
        bindings.append(storedAt)
        bindings.append(Date?.none)
        bindings.append("hoard:public.hoard_bench")
        bindings.append(payload)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}
