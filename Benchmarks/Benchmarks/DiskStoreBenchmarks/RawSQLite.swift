import BenchSQLite

/// The few calls the raw SQLite subjects make, each checked.
protocol RawSQLite: AnyObject {
    /// The open connection.
    var db: OpaquePointer? { get }
}

extension RawSQLite {
    /// Throws a ``SQLiteFailure`` unless `code` is `SQLITE_OK`, `SQLITE_DONE` or
    /// `SQLITE_ROW`.
    func check(_ code: Int32) throws {
        guard code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW else {
            throw SQLiteFailure(description: "SQLite error \(code): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    func exec(_ sql: String) throws {
        try check(sqlite3_exec(db, sql, nil, nil, nil))
    }

    /// A statement prepared once and kept for the subject's life.
    func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil))
        return statement
    }

    /// Steps `statement` once and resets it.
    func step(_ statement: OpaquePointer?) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        try check(code)
    }
}
