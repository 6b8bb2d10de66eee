#if Postgres
import Foundation
import Hoard
import PostgresNIO

extension PostgresStore {
    /// Deletes every row that has expired by the store's clock: one `DELETE`, using the
    /// partial index on `expires_at`. Reads never return such rows anyway; this
    /// frees their space.
    ///
    /// - Returns: The number of rows deleted.
    /// - Throws: ``PostgresStoreError`` when the server cannot answer.
    @discardableResult
    public func removeExpired() async throws(PostgresStoreError) -> Int {
        var binds = PostgresBindings(capacity: 1)
        binds.append(_PostgresTimestamp(clockNow()))
        return try await count("sweep", statements.sweep, binds)
    }

    /// Deletes the oldest rows (by `stored_at`, across namespaces) until at most
    /// `rows` rows and `bytes` value bytes remain: one `DELETE` ranking the rows
    /// newest first. A row written again while it runs is
    /// kept.
    ///
    /// - Parameters:
    ///   - rows: The most rows to keep; `nil` for no limit.
    ///   - bytes: The most value bytes (`octet_length(value)`) to keep; `nil` for no limit.
    /// - Returns: The number of rows deleted.
    /// - Complexity: One pass over the table, in `stored_at` order.
    /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` for a negative budget;
    ///   ``PostgresStoreError`` when the server cannot answer.
    @discardableResult
    public func trim(toRows rows: Int?, bytes: Int?) async throws(PostgresStoreError) -> Int {
        guard (rows ?? 0) >= 0, (bytes ?? 0) >= 0 else {
            throw PostgresStoreError(.invalidConfiguration, "trim budgets must not be negative", operation: "trim")
        }
        guard rows != nil || bytes != nil else { return 0 }
        var binds = PostgresBindings(capacity: 2)
        binds.append(Int64(rows ?? Int(Int64.max)))
        binds.append(Int64(bytes ?? Int(Int64.max)))
        return try await count("trim", statements.trim, binds)
    }

    /// The rows in the table, across namespaces, and their value bytes, expired rows
    /// not yet deleted included.
    ///
    /// - Complexity: One pass over the table.
    /// - Throws: ``PostgresStoreError`` when the server cannot answer.
    public func usage() async throws(PostgresStoreError) -> StoreUsage {
        let statement = statements.usage
        return try await run("usage", key: nil) { connection in
            let rows = try await _PostgresPreparedStatement.execute(
                statement, PostgresBindings(), on: connection, logger: self.logger)
            var usage = StoreUsage()
            for try await row in rows {
                let (count, bytes) = try row.decode((Int64, Int64).self)
                usage = StoreUsage(count: Int(count), bytes: Int(bytes))
            }
            return usage
        }
    }

    /// Runs the maintenance a store runs every ``Configuration/maintenanceInterval``
    /// writes: ``removeExpired()``, then, when ``Configuration/maximumRows`` or
    /// ``Configuration/maximumBytes`` is set and ``usage()`` exceeds it,
    /// ``trim(toRows:bytes:)``.
    ///
    /// - Returns: The rows deleted because they had expired, and those trimmed.
    /// - Throws: ``PostgresStoreError`` when the server cannot answer; some rows may have
    ///   been deleted.
    @discardableResult
    public func maintain() async throws(PostgresStoreError) -> (expired: Int, trimmed: Int) {
        let expired = try await removeExpired()
        let rows = configuration.maximumRows
        let bytes = configuration.maximumBytes
        guard rows != nil || bytes != nil else { return (expired, 0) }
        let usage = try await usage()
        guard usage.count > rows ?? .max || usage.bytes > bytes ?? .max else { return (expired, 0) }
        return (expired, try await trim(toRows: rows, bytes: bytes))
    }
}
#endif
