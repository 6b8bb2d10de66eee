#if Postgres
/// The SQL a ``PostgresStore`` sends, built once from its schema and table names;
/// the statements it runs for each operation are named, to be prepared once per
/// connection (``_PostgresPreparedStatement``).
///
/// Identifiers are always double-quoted with embedded quotes doubled, so any name
/// (the configuration rules out NUL and lengths PostgreSQL would truncate) is taken
/// literally and cannot end the identifier; every value travels as a bind parameter.
///
/// The table:
///
/// ```sql
/// CREATE [UNLOGGED] TABLE "<schema>"."<table>" (
///     namespace  bytea       NOT NULL,
///     key        bytea       NOT NULL,
///     value      bytea       NOT NULL,
///     stored_at  timestamptz NOT NULL,
///     expires_at timestamptz,          -- NULL: never
///     PRIMARY KEY (namespace, key))
/// ```
///
/// with an index on `stored_at` (trimming, oldest first) and a partial index on
/// `expires_at` (sweeping). Namespace and key are `bytea` holding UTF-8, because a
/// Swift string may contain NUL, which `text` cannot.
struct _PostgresStatements: Sendable {
    let qualifiedTable: String
    let createSchema: String?
    let createTable: String
    let createStoredAtIndex: String
    let createExpiresAtIndex: String
    /// `$1` namespace, `$2` key, `$3` now.
    let get: _PostgresPreparedStatement.Text
    /// `$1` namespace, `$2` keys (`bytea[]`), `$3` now.
    let multiGet: _PostgresPreparedStatement.Text
    /// `$1` namespace, `$2` key, `$3` value, `$4` stored at, `$5` expires at,
    /// `$6` channel, `$7` payload.
    let set: _PostgresPreparedStatement.Text
    /// `$1` namespace, `$2` key, `$3` channel, `$4` payload.
    let remove: _PostgresPreparedStatement.Text
    /// Many changes in one statement, to distinct keys: `$1`…`$6` the rows to upsert
    /// (namespaces, keys, values, stored-at times, expiry times, and whether each
    /// expires: `bytea[]`, `bytea[]`, `bytea[]`, `timestamptz[]`, `timestamptz[]`,
    /// `bool[]`), `$7`, `$8` the rows to delete (namespaces and keys), `$9` channel,
    /// `$10` payloads (`text[]`), one notification each.
    let writeMany: _PostgresPreparedStatement.Text
    /// `$1` namespace, `$2` channel, `$3` payload.
    let clear: _PostgresPreparedStatement.Text
    /// `$1` now; answers the number of rows deleted.
    let sweep: _PostgresPreparedStatement.Text
    /// Answers the row count and the value bytes.
    let usage: _PostgresPreparedStatement.Text
    /// `$1` rows to keep, `$2` bytes to keep; answers the number of rows deleted.
    let trim: _PostgresPreparedStatement.Text

    /// `identifier` as a quoted SQL identifier.
    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    init(schema: String, table: String, isUnlogged: Bool) {
        let t = Self.quote(schema) + "." + Self.quote(table)
        qualifiedTable = t
        createSchema = schema == "public" ? nil : "CREATE SCHEMA IF NOT EXISTS \(Self.quote(schema))"
        createTable = """
            CREATE \(isUnlogged ? "UNLOGGED " : "")TABLE IF NOT EXISTS \(t) (
                namespace bytea NOT NULL,
                key bytea NOT NULL,
                value bytea NOT NULL,
                stored_at timestamptz NOT NULL,
                expires_at timestamptz,
                PRIMARY KEY (namespace, key))
            """
        createStoredAtIndex = "CREATE INDEX IF NOT EXISTS \(Self.quote(table + "_stored_at")) ON \(t) (stored_at)"
        createExpiresAtIndex =
            "CREATE INDEX IF NOT EXISTS \(Self.quote(table + "_expires_at")) ON \(t) (expires_at) WHERE expires_at IS NOT NULL"
        get = .init(
            name: "hoard_get",
            sql: """
                SELECT value, stored_at, expires_at FROM \(t)
                WHERE namespace = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)
                """)
        multiGet = .init(
            name: "hoard_multi_get",
            sql: """
                SELECT key, value, stored_at, expires_at FROM \(t)
                WHERE namespace = $1 AND key = ANY($2) AND (expires_at IS NULL OR expires_at > $3)
                """)
        set = .init(
            name: "hoard_set",
            sql: """
                WITH written AS (
                    INSERT INTO \(t) (namespace, key, value, stored_at, expires_at) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (namespace, key) DO UPDATE
                    SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at
                    RETURNING 1)
                SELECT pg_notify($6, $7)
                """)
        remove = .init(
            name: "hoard_remove",
            sql: """
                WITH removed AS (DELETE FROM \(t) WHERE namespace = $1 AND key = $2 RETURNING 1)
                SELECT pg_notify($3, $4)
                """)
        // The two data-modifying CTEs run to completion whether or not the query reads
        // them, on disjoint keys, in the same snapshot and transaction as the notifications.
        writeMany = .init(
            name: "hoard_write_many",
            sql: """
                WITH upserted AS (
                    INSERT INTO \(t) (namespace, key, value, stored_at, expires_at)
                    SELECT namespace, key, value, stored_at, CASE WHEN expires THEN expires_at END
                    FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::timestamptz[], $5::timestamptz[], $6::bool[])
                        AS change(namespace, key, value, stored_at, expires_at, expires)
                    ON CONFLICT (namespace, key) DO UPDATE
                    SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at
                    RETURNING 1),
                removed AS (
                    DELETE FROM \(t) AS entry USING unnest($7::bytea[], $8::bytea[]) AS gone(namespace, key)
                    WHERE entry.namespace = gone.namespace AND entry.key = gone.key
                    RETURNING 1)
                SELECT pg_notify($9, payload) FROM unnest($10::text[]) AS payload
                """)
        clear = .init(
            name: "hoard_clear",
            sql: """
                WITH removed AS (DELETE FROM \(t) WHERE namespace = $1 RETURNING 1)
                SELECT pg_notify($2, $3)
                """)
        sweep = .init(
            name: "hoard_sweep",
            sql: """
                WITH removed AS (DELETE FROM \(t) WHERE expires_at <= $1 RETURNING 1)
                SELECT count(*) FROM removed
                """)
        usage = .init(
            name: "hoard_usage", sql: "SELECT count(*), coalesce(sum(octet_length(value)), 0)::bigint FROM \(t)")
        // Newest first, each row's running count and byte total; rows past either
        // budget are the oldest, and go. A row written again since the ranking has a
        // later stored_at and survives (the DELETE re-checks it).
        trim = .init(
            name: "hoard_trim",
            sql: """
                WITH ranked AS (
                    SELECT namespace, key, stored_at,
                        row_number() OVER newest AS kept_rows,
                        sum(octet_length(value)) OVER newest AS kept_bytes
                    FROM \(t)
                    WINDOW newest AS (ORDER BY stored_at DESC, namespace DESC, key DESC)),
                removed AS (
                    DELETE FROM \(t) AS entry USING ranked
                    WHERE entry.namespace = ranked.namespace AND entry.key = ranked.key
                        AND entry.stored_at <= ranked.stored_at
                        AND (ranked.kept_rows > $1 OR ranked.kept_bytes > $2)
                    RETURNING 1)
                SELECT count(*) FROM removed
                """)
    }
}
#endif
