import Foundation

// The one file that imports SQLite. Apple platforms ship it as the `SQLite3` module;
// on Linux the `CSQLite` system-library target wraps the distribution's libsqlite3.
// Every other file talks to SQLite only through `_SQLiteConnection`.
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// One SQLite database connection and the statements prepared on it.
///
/// Not thread-safe by itself: its owner (``DiskStore``) reaches it only inside a
/// `Mutex`, so it is opened with `SQLITE_OPEN_NOMUTEX` (SQLite's "multi-thread"
/// mode: any thread may use the connection, never two at once). SQLite's own
/// per-connection mutex would only repeat the lock the owner already holds.
///
/// Errors are ``HoardError`` values whose code says what a caller can do
/// (``HoardError/Code/storageFull``, ``HoardError/Code/busy``, …) and whose
/// `underlying` is a ``_SQLiteError`` with SQLite's own code and message.
final class _SQLiteConnection {
    private var handle: OpaquePointer?
    /// The database file's identity while the connection is open, counted in
    /// ``_SQLiteOpenFiles``.
    private var openFile: _SQLiteOpenFiles.FileID?
    /// The database file, for error messages.
    let path: String
    /// Statements prepared on this connection; finalized before it closes.
    private var statements: [Statement] = []

    /// Opens the database at `path`, which must exist unless `create` is true.
    ///
    /// - Throws: ``HoardError`` when SQLite cannot open the file.
    init(path: String, create: Bool = false) throws(HoardError) {
        self.path = path
        guard sqlite3_threadsafe() != 0 else {
            throw HoardError(
                .invalidConfiguration, "the SQLite library was built without thread support (SQLITE_THREADSAFE=0)",
                path: path)
        }
        try Self.checkVersion(sqlite3_libversion_number(), path: path)
        // Extended result codes are turned on after opening rather than with
        // SQLITE_OPEN_EXRESCODE, a flag SQLite has only since 3.37.
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        if create { flags |= SQLITE_OPEN_CREATE }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        if rc != SQLITE_OK {
            let error = Self.error(rc, db: db, "could not open the store's index", path: path)
            sqlite3_close_v2(db)
            handle = nil
            throw error
        }
        sqlite3_extended_result_codes(db, 1)
        openFile = _SQLiteOpenFiles.opened(path)
    }

    /// The oldest SQLite library the store runs on, as `sqlite3_libversion_number()`
    /// gives it: 3.24.0, the first with upserts (`INSERT … ON CONFLICT … DO
    /// UPDATE`), which writes and the totals' trigger use. The store uses nothing
    /// newer: no `DELETE … RETURNING` or `DROP COLUMN` (3.35), no `FULL OUTER JOIN`
    /// (3.39), no `SQLITE_OPEN_EXRESCODE` (3.37).
    static let minimumVersion: Int32 = 3_024_000

    /// A version number (`3_035_000`) as SQLite writes it: `3.35.0`.
    static func versionString(_ number: Int32) -> String {
        "\(number / 1_000_000).\(number / 1_000 % 1_000).\(number % 1_000)"
    }

    /// Refuses an SQLite library older than ``minimumVersion``.
    ///
    /// - Parameters:
    ///   - number: The library's version, as `sqlite3_libversion_number()` gives it.
    ///   - path: The database the caller was about to open, for the error.
    /// - Throws: ``HoardError/Code/invalidConfiguration`` naming both versions.
    static func checkVersion(_ number: Int32, path: String) throws(HoardError) {
        guard number < minimumVersion else { return }
        throw HoardError(
            .invalidConfiguration,
            "the SQLite library this process loaded is version \(versionString(number)); Hoard's disk store needs "
                + "SQLite \(versionString(minimumVersion)) or later: install a newer libsqlite3 (on Linux, the "
                + "distribution's libsqlite3-dev and libsqlite3-0 packages)",
            path: path)
    }

    deinit {
        close()
    }

    /// Finalizes every statement and closes the connection. Later calls throw.
    func close() {
        for statement in statements { statement.finalize() }
        statements = []
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
        if let openFile { _SQLiteOpenFiles.closed(openFile) }
        openFile = nil
    }

    private func open() throws(HoardError) -> OpaquePointer {
        guard let handle else {
            throw HoardError(.ioFailed, "the store's index connection is closed", path: path)
        }
        return handle
    }

    /// Sets how long a statement waits for another connection's lock before it
    /// fails with ``HoardError/Code/busy``.
    func setBusyTimeout(milliseconds: Int) throws(HoardError) {
        let db = try open()
        sqlite3_busy_timeout(db, Int32(clamping: milliseconds))
    }

    /// Runs one or more SQL statements that return no rows the caller needs.
    func execute(_ sql: String) throws(HoardError) {
        let db = try open()
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        if rc != SQLITE_OK { throw error(rc, "could not run \(sql.prefix(60))") }
    }

    /// Prepares `sql` once; the statement lives as long as the connection.
    func prepare(_ sql: String) throws(HoardError) -> Statement {
        let db = try open()
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw error(rc, "could not prepare \(sql.prefix(60))")
        }
        let prepared = Statement(statement, connection: self)
        statements.append(prepared)
        return prepared
    }

    /// Copies every page of the write-ahead log into the database and truncates the
    /// log to zero bytes (`SQLITE_CHECKPOINT_TRUNCATE`), waiting up to the busy
    /// timeout for other connections' readers and writers.
    ///
    /// - Returns: `false` when another connection kept it from finishing
    ///   (`SQLITE_BUSY`): the log was copied as far as it could be, and kept.
    /// - Throws: ``HoardError/Code/storageFull`` when the database cannot grow to
    ///   take the log's pages; another ``HoardError`` when the copy fails. Nothing
    ///   is lost either way: the log keeps every page until a checkpoint finishes.
    func checkpointAndTruncate() throws(HoardError) -> Bool {
        let db = try open()
        let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        if rc == SQLITE_OK { return true }
        if rc & 0xFF == SQLITE_BUSY || rc & 0xFF == SQLITE_LOCKED { return false }
        throw error(rc, "could not checkpoint the index's write-ahead log")
    }

    /// How many rows the last finished `INSERT`, `UPDATE` or `DELETE` changed.
    var changes: Int {
        guard let handle else { return 0 }
        return Int(sqlite3_changes(handle))
    }

    /// The most bytes a string, a BLOB or a row may have on this connection
    /// (`SQLITE_LIMIT_LENGTH`: 1,000,000,000 unless SQLite was built with
    /// another). Setting it can only lower it below the limit SQLite was built with.
    var lengthLimit: Int {
        get { handle.map { Int(sqlite3_limit($0, SQLITE_LIMIT_LENGTH, -1)) } ?? 0 }
        set {
            if let handle { _ = sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, Int32(clamping: max(0, newValue))) }
        }
    }

    /// Whether a transaction is open on this connection.
    var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// The error for result code `rc`, with the connection's message.
    func error(_ rc: Int32, _ what: String) -> HoardError {
        Self.error(rc, db: handle, what, path: path)
    }

    static func error(_ rc: Int32, db: OpaquePointer?, _ what: String, path: String) -> HoardError {
        let extended = db.map { sqlite3_extended_errcode($0) } ?? rc
        let message =
            db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
        let systemErrno = db.map { sqlite3_system_errno($0) } ?? 0
        let cause = _SQLiteError(code: extended, message: message, systemErrno: systemErrno)
        let code: HoardError.Code
        switch rc & 0xFF {
        case SQLITE_FULL:
            code = .storageFull
        case SQLITE_BUSY, SQLITE_LOCKED:
            code = .busy
        case SQLITE_TOOBIG:
            code = .valueTooLarge
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            code = .storeDamaged
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH:
            code = .permissionDenied
        default:
            code = _FileSystem.code(forErrno: systemErrno) ?? .ioFailed
        }
        var text = "\(what): \(message)"
        if code == .storeDamaged {
            text +=
                ". The index database is damaged; a store holds only cached data, so deleting its directory repairs it"
        }
        return HoardError(code, text, path: path, underlying: cause)
    }

    /// A prepared statement: bind, step, read columns, reset.
    ///
    /// Byte parameters are bound without copying (`SQLITE_STATIC`): the caller keeps
    /// the bytes alive until it calls ``reset()``, which also clears the bindings.
    final class Statement {
        private var handle: OpaquePointer?
        private unowned let connection: _SQLiteConnection

        fileprivate init(_ handle: OpaquePointer, connection: _SQLiteConnection) {
            self.handle = handle
            self.connection = connection
        }

        fileprivate func finalize() {
            sqlite3_finalize(handle)
            handle = nil
        }

        func bind(_ value: Int64, at index: Int32) {
            sqlite3_bind_int64(handle, index, value)
        }

        func bind(_ value: Double, at index: Int32) {
            sqlite3_bind_double(handle, index, value)
        }

        func bind(_ value: Double?, at index: Int32) {
            if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
        }

        func bindNull(at index: Int32) {
            sqlite3_bind_null(handle, index)
        }

        /// Binds bytes as a BLOB without copying them; keep them alive until ``reset()``.
        ///
        /// - Throws: ``HoardError/Code/valueTooLarge`` when they are over the
        ///   connection's ``_SQLiteConnection/lengthLimit``; the statement is reset.
        func bind(bytes: UnsafeRawBufferPointer, at index: Int32) throws(HoardError) {
            let rc: Int32
            if let base = bytes.baseAddress, bytes.count > 0 {
                rc = sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), nil)
            } else {
                rc = sqlite3_bind_zeroblob(handle, index, 0)
            }
            if rc != SQLITE_OK {
                throw failure(rc, "could not bind \(bytes.count) bytes to a statement on the store's index")
            }
        }

        /// Binds text, copying it (for statements off the hot path).
        ///
        /// - Throws: As ``bind(bytes:at:)``.
        func bind(text: String, at index: Int32) throws(HoardError) {
            let count = text.utf8.count
            let rc = sqlite3_bind_text(handle, index, text, Int32(clamping: count), hoard_sqlite_transient())
            if rc != SQLITE_OK {
                throw failure(rc, "could not bind \(count) bytes of text to a statement on the store's index")
            }
        }

        /// The error for a failed bind; resets the statement, dropping the bindings
        /// made so far.
        private func failure(_ rc: Int32, _ what: String) -> HoardError {
            let error = connection.error(rc, what)
            reset()
            return error
        }

        /// Runs the statement one step.
        ///
        /// - Returns: `true` when a row is ready to read, `false` when done.
        /// - Throws: ``HoardError`` on any failure; the statement is reset.
        func step() throws(HoardError) -> Bool {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_ROW { return true }
            if rc == SQLITE_DONE { return false }
            let error = connection.error(rc, "a statement on the store's index failed")
            reset()
            throw error
        }

        /// Resets the statement for its next use and drops its bindings.
        func reset() {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }

        func int64(at column: Int32) -> Int64 {
            sqlite3_column_int64(handle, column)
        }

        func double(at column: Int32) -> Double {
            sqlite3_column_double(handle, column)
        }

        func type(at column: Int32) -> _SQLiteType {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: return .integer
            case SQLITE_FLOAT: return .float
            case SQLITE_TEXT: return .text
            case SQLITE_BLOB: return .blob
            default: return .null
            }
        }

        /// The column's bytes, valid until the next step or reset.
        func bytes(at column: Int32) -> UnsafeRawBufferPointer {
            let base = sqlite3_column_blob(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            guard let base, count > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
            return UnsafeRawBufferPointer(start: base, count: count)
        }

        /// The column's bytes, copied.
        func data(at column: Int32) -> Data {
            let bytes = bytes(at: column)
            return bytes.isEmpty ? Data() : Data(bytes)
        }

        /// The column as a string if it is TEXT or BLOB holding valid UTF-8, else `nil`.
        func string(at column: Int32) -> String? {
            let bytes = bytes(at: column)
            return String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self)
        }
    }
}

/// SQLite's fundamental column types.
enum _SQLiteType: Sendable {
    case integer, float, text, blob, null
}

/// A failure reported by SQLite: its extended result code, its message, and the
/// operating system's `errno` when an I/O call failed.
struct _SQLiteError: Error, Sendable, CustomStringConvertible {
    var code: Int32
    var message: String
    var systemErrno: Int32

    var description: String {
        var text = "SQLite error \(code): \(message)"
        if systemErrno != 0 { text += " (errno \(systemErrno): \(String(cString: strerror(systemErrno))))" }
        return text
    }
}
