#if Postgres
import Foundation
import Hoard
import HoardNIOSupport
import Logging
import PostgresNIO
import Synchronization

/// A remote cache tier in a PostgreSQL table, over postgres-nio's connection pool,
/// with `LISTEN`/`NOTIFY` invalidations between instances.
///
/// ```swift
/// let store = try PostgresStore(configuration: .init(url: "postgres://app@db.internal/app"))
/// try await store.set(bytes, for: "user:42", in: "profiles", storedAt: .now, expiresAt: .now + 300)
/// let entry = try await store.entry(for: "user:42", in: "profiles")      // StoredEntry?
/// let many = try await store.entries(for: ["user:1", "user:2"], in: "profiles")  // one SELECT … ANY($2)
/// for await change in store.invalidations(in: "profiles") { … }         // other instances' writes
/// ```
///
/// What it guarantees:
/// - **Table.** Entries are rows `(namespace, key, value, stored_at, expires_at)` of
///   ``Configuration/table`` in ``Configuration/schema``, keyed by namespace and key
///   (both `bytea` holding UTF-8, so any string, NUL included, is a key, as long as
///   the primary-key index can hold the pair: at most 2,704 bytes an index row,
///   after compression; a longer one is refused with `HoardError` code
///   `valueTooLarge`). On first use
///   the store creates schema, table (`UNLOGGED` if configured) and indexes when
///   they are missing, under an advisory lock so concurrent first uses do not race.
///   Names are always quoted: a crafted name is a name, never SQL.
/// - **Expiry.** A row whose `expires_at` is not after the store's clock is a miss
///   (the clock's time is a parameter of every read). Expired rows are deleted by
///   ``removeExpired()`` and by maintenance, which runs every
///   ``Configuration/maintenanceInterval`` writes and also trims the table, oldest
///   `stored_at` first, to ``Configuration/maximumRows`` and
///   ``Configuration/maximumBytes``.
/// - **One round trip.** A get, a multi-get (`key = ANY($2)`), a set (an upsert),
///   a removal and a namespace clear are each one statement, a named prepared
///   statement that each connection parses and plans once; the writes carry their
///   `pg_notify` in the same statement. ``write(_:)`` applies up to
///   ``batchLimit`` changes in one statement.
/// - **Invalidations.** Every set, removal and clear notifies the table's channel
///   naming this instance, which ignores its own notifications;
///   ``invalidations(in:)`` delivers the others'. A key whose notification would pass
///   PostgreSQL's 8000-byte payload limit is announced as its whole namespace cleared.
/// - **Connections.** The first operation opens ``Configuration/maximumConnections``
///   connections, which stay open, plus one for `LISTEN`. A lost connection is
///   reopened at once (retrying with backoff while the server is down). Idle
///   connections are not pinged: one that died silently fails its next statement
///   with ``PostgresStoreError/Code/timeout`` and is replaced.
/// - **Bounds.** An operation waits at most ``Configuration/connectionWaitTimeout``
///   for a connection and ``Configuration/commandTimeout`` for the answer, each
///   plus up to one tick of the store's deadline timer (see
///   ``Configuration/commandTimeout``); after a failed wait, operations fail at once
///   for a backoff delay. No thread ever blocks.
/// - **Threads.** The pool's connections all run on ``eventLoop``, and so does the
///   decoding of every result; tasks that prefer ``taskExecutor`` run there too, and
///   their operations cost no thread hop.
/// - **Errors.** Every failure of the server, the connection or the configuration is
///   a ``PostgresStoreError``. A write whose dates no store can keep (a stored date
///   that is NaN or infinite, an expiry that is NaN) is refused before anything is
///   sent with `HoardError` code `invalidArgument`, as every store of the package
///   refuses it; a key too long for the index fails with `HoardError` code
///   `valueTooLarge`, so that a `Cache` batch goes on with its other changes.
///
/// A store needs no explicit shutdown; ``shutdown()`` closes its connections at once
/// and finishes its invalidation streams.
public final class PostgresStore: RemoteCacheStore {
    /// The configuration the store was created with.
    public let configuration: Configuration

    /// This instance's unique id, sent with every notification it makes so that it
    /// can ignore its own.
    public let instanceID: UUID

    /// The event loop every connection of the store's pool runs on: the one thread
    /// that writes its statements, reads their results and runs the work of each
    /// operation. Chosen from `eventLoopGroup` when the store is created (pass a single
    /// `EventLoop` to choose it yourself); the `LISTEN` connection of
    /// ``invalidations(in:)`` may run on another loop of the group.
    public let eventLoop: any EventLoop

    /// An executor that runs tasks on ``eventLoop``, for callers that make many
    /// operations one after the other and want each to cost no thread hop.
    ///
    /// An operation called from an ordinary task costs two hand-offs between
    /// threads: the task hands its statement to the event loop, and the event loop
    /// hands the result back to the task's thread in the concurrency pool. Code that
    /// runs on the store's event loop hands nothing over: it sends the statement and
    /// is resumed on the same thread that read the result. To run there, prefer this
    /// executor; child tasks inherit the preference:
    ///
    /// ```swift
    /// let hits = try await withTaskExecutorPreference(store.taskExecutor) {
    ///     var hits = 0
    ///     for key in keys where try await store.entry(for: key, in: "profiles") != nil { hits += 1 }
    ///     return hits
    /// }
    /// ```
    ///
    /// What it guarantees: nonisolated code of a task that prefers it, the store's
    /// operations included, runs on ``eventLoop``, one job at a time, in the order the
    /// jobs became ready; actor-isolated code still runs on its actor. Everything such
    /// a task does between two awaits holds up the store's I/O (and that of any other
    /// channel on the loop), so keep it short and never block in it. The event loop
    /// group must outlive the tasks that prefer this executor: a shut-down loop runs
    /// nothing.
    public var taskExecutor: any TaskExecutor { pool.executor }

    let statements: _PostgresStatements
    let pool: _PostgresPool
    let channel: String
    let hub: _PostgresNotifications
    let listener: _PostgresListener
    private let clock: any CacheClock
    private let tableIsReady = Atomic<Bool>(false)
    /// Writes made so far, for ``Configuration/maintenanceInterval``.
    let writes = Atomic<Int>(0)

    /// Where postgres-nio logs when the configuration gives no logger: nowhere.
    static let silentLogger = Logger(label: "hoard.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The configuration's logger (or a silent one), given to postgres-nio for
    /// every statement.
    var logger: Logger { pool.logger }

    /// Creates a store. It connects, and creates its table if needed, when it is first used.
    ///
    /// - Parameters:
    ///   - configuration: The server, credentials, table, budgets and timeouts.
    ///   - clock: Where the store reads the time, to tell live entries from expired
    ///     ones. Defaults to `SystemClock`.
    ///   - eventLoopGroup: Where its connections run: the pool's on one loop of the
    ///     group (``eventLoop``), the `LISTEN` connection on any. Defaults to
    ///     postgres-nio's default group.
    /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` when a setting is out of
    ///   range or a name is not allowed.
    public init(
        configuration: Configuration,
        clock: any CacheClock = SystemClock(),
        eventLoopGroup: any EventLoopGroup = PostgresClient.defaultEventLoopGroup
    ) throws(PostgresStoreError) {
        try configuration.validate()
        self.configuration = configuration
        self.clock = clock
        instanceID = UUID()
        channel = configuration.channel
        statements = _PostgresStatements(
            schema: configuration.schema, table: configuration.table, isUnlogged: configuration.isUnlogged)
        eventLoop = eventLoopGroup.next()
        pool = _PostgresPool(
            configuration: configuration.clientConfiguration(
                connections: configuration.maximumConnections, keepsConnectionsOpen: true),
            eventLoop: eventLoop,
            settings: .init(
                host: configuration.host, port: configuration.port,
                connectionWaitTimeout: configuration.connectionWaitTimeout,
                commandTimeout: configuration.commandTimeout + .seconds(1),
                initialReconnectDelay: configuration.initialReconnectDelay,
                maximumReconnectDelay: configuration.maximumReconnectDelay,
                logger: configuration.logger ?? Self.silentLogger))
        hub = _PostgresNotifications(instanceID: instanceID.uuidString)
        listener = _PostgresListener(
            configuration: configuration.clientConfiguration(connections: 1, keepsConnectionsOpen: false),
            eventLoopGroup: eventLoopGroup, logger: configuration.logger ?? Self.silentLogger,
            hub: hub, channel: channel, initialDelay: configuration.initialReconnectDelay,
            maximumDelay: configuration.maximumReconnectDelay)
    }

    deinit {
        pool.shutdown()
        listener.shutdown()
        hub.finishAll()
    }

    /// Closes every connection and finishes every invalidation stream. Operations
    /// after it fail with ``PostgresStoreError/Code/shutdown``.
    public func shutdown() async {
        pool.shutdown()
        listener.shutdown()
        hub.finishAll()
    }

    // MARK: Reading

    /// The entry stored for `key` in `namespace`, if there is a live one: one `SELECT`.
    ///
    /// - Returns: The entry; `nil` when there is none or it has expired by the
    ///   store's clock.
    /// - Throws: ``PostgresStoreError`` when the server cannot answer.
    public func entry(for key: String, in namespace: String) async throws(PostgresStoreError) -> StoredEntry? {
        var binds = PostgresBindings(capacity: 3)
        binds.append(ByteBuffer(string: namespace))
        binds.append(ByteBuffer(string: key))
        binds.append(_PostgresTimestamp(clock.now()))
        let statement = statements.get
        let bindings = binds
        return try await run("get", key: key) { connection in
            let rows = try await _PostgresPreparedStatement.execute(
                statement, bindings, on: connection, logger: self.logger)
            var entry: StoredEntry?
            for try await row in rows {
                let (value, storedAt, expiresAt) = try row.decode(
                    (ByteBuffer, _PostgresTimestamp, _PostgresTimestamp?).self)
                entry = StoredEntry(
                    data: Data(value.readableBytesView), storedAt: storedAt.date, expiresAt: expiresAt?.date)
            }
            return entry
        }
    }

    /// The live entries for many keys of one namespace: one `SELECT … key = ANY($2)`,
    /// one round trip.
    ///
    /// - Returns: The entries found, by key; expired entries are absent.
    /// - Throws: ``PostgresStoreError`` when the server cannot answer.
    public func entries(for keys: [String], in namespace: String) async throws(PostgresStoreError) -> [String:
        StoredEntry]
    {
        guard !keys.isEmpty else { return [:] }
        var binds = PostgresBindings(capacity: 3)
        binds.append(ByteBuffer(string: namespace))
        binds.append(keys.map { ByteBuffer(string: $0) })
        binds.append(_PostgresTimestamp(clock.now()))
        let statement = statements.multiGet
        let bindings = binds
        let capacity = keys.count
        return try await run("multi-get", key: nil) { connection in
            let rows = try await _PostgresPreparedStatement.execute(
                statement, bindings, on: connection, logger: self.logger)
            var entries: [String: StoredEntry] = [:]
            entries.reserveCapacity(capacity)
            for try await row in rows {
                let (key, value, storedAt, expiresAt) = try row.decode(
                    (ByteBuffer, ByteBuffer, _PostgresTimestamp, _PostgresTimestamp?).self)
                entries[String(buffer: key)] = StoredEntry(
                    data: Data(value.readableBytesView), storedAt: storedAt.date, expiresAt: expiresAt?.date)
            }
            return entries
        }
    }

    // MARK: Invalidations

    /// Keys other instances changed or removed in `namespace` (never this instance's
    /// own writes), for cross-instance invalidation.
    ///
    /// The first stream makes the store `LISTEN` on its channel over a connection of
    /// its own, opened on first use and reopened, with backoff, whenever it is lost;
    /// the last stream to end stops it. After a lost connection is reopened every
    /// stream receives `RemoteInvalidation.missed`, since changes made meanwhile
    /// may have been missed; so it does when the first `LISTEN` comes only after
    /// failed attempts to connect (the server was down when the stream started).
    /// Changes made while the first attempt is under way, before the server
    /// confirmed the first `LISTEN`, are not reported. The stream buffers without limit and ends when the consumer stops
    /// iterating or the store shuts down.
    ///
    /// - Parameter namespace: The namespace to watch.
    /// - Returns: A stream of `RemoteInvalidation`s.
    public func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        guard let id = hub.add(continuation, namespace: namespace) else { return stream }
        let hub = self.hub
        let listener = self.listener
        continuation.onTermination = { _ in
            hub.remove(id: id, namespace: namespace)
            listener.sync()
        }
        listener.sync()
        return stream
    }

    /// Whether the store is listening for other instances' notifications right now.
    public var isListening: Bool { hub.isListening }

    /// Why the invalidation listener last failed to listen, while it waits to try
    /// again (a failed attempt to connect included); `nil` while it listens or
    /// before it first tried.
    public var invalidationError: PostgresStoreError? { listener.lastError }

    // MARK: Running statements

    /// Runs `body` on a pooled connection, within the timeouts, once the table exists.
    func run<T: Sendable>(
        _ operation: String, key: String?, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(PostgresStoreError) -> T {
        if configuration.createsTable, !tableIsReady.load(ordering: .relaxed) {
            do { try await createTable() } catch { throw error.with(key: key) }
        }
        return try await pool.run(operation, key: key, body)
    }

    /// Runs one statement whose rows do not matter.
    func execute(
        _ operation: String, key: String?, _ statement: _PostgresPreparedStatement.Text, _ binds: PostgresBindings
    ) async throws(PostgresStoreError) {
        try await run(operation, key: key) { connection in
            let rows = try await _PostgresPreparedStatement.execute(
                statement, binds, on: connection, logger: self.logger)
            for try await _ in rows {}
        }
    }

    /// Runs one statement answering one `bigint`.
    func count(
        _ operation: String, _ statement: _PostgresPreparedStatement.Text, _ binds: PostgresBindings
    ) async throws(PostgresStoreError) -> Int {
        try await run(operation, key: nil) { connection in
            let rows = try await _PostgresPreparedStatement.execute(
                statement, binds, on: connection, logger: self.logger)
            var count = 0
            for try await row in rows { count = Int(try row.decode(Int64.self)) }
            return count
        }
    }

    private func createTable() async throws(PostgresStoreError) {
        let statements = self.statements
        let lockName = "hoard:" + statements.qualifiedTable
        try await pool.run("create table", key: nil) { connection in
            try await connection.withTransaction(logger: self.logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(lockName)))", logger: self.logger)
                for sql in [
                    statements.createSchema, statements.createTable, statements.createStoredAtIndex,
                    statements.createExpiresAtIndex,
                ].compactMap({ $0 }) {
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: self.logger)
                }
            }
        }
        tableIsReady.store(true, ordering: .relaxed)
    }

    func clockNow() -> Date { clock.now() }
}
#endif
