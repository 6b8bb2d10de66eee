#if Postgres
import PostgresNIO

/// One of a store's statements, run as a named prepared statement of postgres-nio:
/// each connection parses and plans it once, then every execution sends only its
/// parameters (`Bind`, `Execute`, `Sync`), in one round trip.
///
/// An unnamed statement (postgres-nio's `query`) is parsed and planned by the
/// server on every execution, which costs about as much as the execution itself on
/// a key lookup. postgres-nio, though, takes a prepared statement's name and SQL
/// from *static* properties, while a store's SQL names its configured schema and
/// table, known only at run time. So the static properties read ``current``, a
/// task-local value that ``execute(_:_:on:)`` binds around the one call that reads
/// them; nothing else runs this type.
///
/// A name stands for one SQL text on a connection: every connection of a pool
/// belongs to one store, and a store always sends the same text under one name.
/// postgres-nio keeps a failed preparation's error for the connection's life, so a
/// statement that failed to prepare (a missing table, say) would keep failing there
/// after the cause is gone; ``spoilsConnection(_:)`` tells the pool which errors
/// make it close the connection instead.
struct _PostgresPreparedStatement: PostgresPreparedStatement {
    /// A statement's name on its connections, and its SQL.
    struct Text: Sendable, Equatable {
        let name: String
        let sql: String
    }

    /// The statement ``execute(_:_:on:)`` is running in this task. Outside it, a
    /// statement that fails with a message saying so.
    @TaskLocal static var current = Text(
        name: "hoard_unbound", sql: "SELECT 'a PostgresStore statement was run without its SQL'::int")

    static var name: String { current.name }
    static var sql: String { current.sql }

    typealias Row = PostgresRow

    private let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }

    /// Runs `text` with `bindings` on `connection`, preparing it first if this
    /// connection has not yet, and answers its rows.
    ///
    /// A connection already closed is refused here: postgres-nio would write the
    /// statement to its closed channel with a write whose failure nobody hears, and
    /// wait for an answer forever (the pool ends the operation, but not that wait).
    static func execute(
        _ text: Text, _ bindings: PostgresBindings, on connection: PostgresConnection, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        if connection.isClosed {
            throw PostgresStoreError(
                .connectionClosed, "The connection to the PostgreSQL server closed before the statement was sent.")
        }
        return try await $current.withValue(text) {
            try await connection.execute(Self(bindings: bindings), logger: logger)
        }
    }

    /// Whether `error` may have left a prepared statement on its connection that keeps
    /// failing: an error of the statement's analysis (SQLSTATE class 42: a missing
    /// table or column, a type mismatch; class 3F: a missing schema), which postgres-nio
    /// keeps when it happens while preparing, or a plan the server refuses to reuse
    /// after the table changed (`0A000`, "cached plan must not change result type").
    static func spoilsConnection(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server,
            let sqlState = error.serverInfo?[.sqlState]
        else { return false }
        return sqlState.hasPrefix("42") || sqlState.hasPrefix("3F") || sqlState == "0A000"
    }
}
#endif
