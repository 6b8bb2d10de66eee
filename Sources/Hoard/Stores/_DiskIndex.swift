import Foundation

/// The SQL side of a ``DiskStore``: the schema of `index.sqlite` and every query
/// the store runs, each prepared once per connection and reused.
///
/// Schema (format version 7):
///
/// ```sql
/// meta(name TEXT PRIMARY KEY, value TEXT)      -- format = hoard.diskstore, version = 7
/// entries(id INTEGER PRIMARY KEY,
///         namespace BLOB, key BLOB,            -- UTF-8 bytes; UNIQUE (namespace, key)
///         stored_at REAL, expires_at REAL,     -- seconds since 1970; expires_at NULL = never
///         size INTEGER,                        -- the value's byte count
///         value BLOB,                          -- the value when inline, else NULL
///         blob TEXT,                           -- its file in blobs/ when spilled, else NULL
///         crc INTEGER)                         -- CRC-32C of value, namespace, 0xFF, key (version 2)
/// access(id INTEGER PRIMARY KEY,               -- = entries.id; deleted with the entry, and when the
///        accessed_at REAL)                     -- entry is rewritten, by triggers; last access, for
///                                              -- least-recently-accessed eviction (version 3);
///                                              -- no index on accessed_at (version 6)
/// namespaces(namespace BLOB PRIMARY KEY, count INTEGER, bytes INTEGER)  -- rows up to the watermark
/// totals_watermark(id INTEGER)                 -- one row (version 5), at most max(entries.id) (version 7)
/// ```
///
/// Access times live in a narrow table of their own (version 3) so that recording
/// a read rewrites a row of about 20 bytes, not the entry's row with its value:
/// in versions 1 and 2 `accessed_at` was a column of `entries`, and recording
/// reads to the second made random 1 KiB reads about five times slower.
///
/// An entry with no row in `access` was last accessed when it was stored
/// (`stored_at`), so that a write whose stored date is its write time (within the
/// access resolution) writes one row, not two (version 4). A write of an entry
/// deletes its access row (a trigger); one with another stored date (a copy of an
/// older value) writes its access time. Trimming first gives every entry without
/// an access row its stored date, then evicts in `access` order.
///
/// `access` has no index on `accessed_at` (version 6). A flush of recorded reads
/// rewrites access rows of random entries; with a time index each row also moved
/// in that index, from its old time's page to the end, so a flush changed about
/// twice the pages: in a store whose entries had all been read before, a flush of
/// 10,000 accesses over 100,000 entries took about 2.5 times as long with the
/// index (`DiskStoreBenchmarks`' flush row). A trim costs about 1.13 times as much
/// without it: it reads the access order in one pass over `access`, the
/// oldest first, as many entries as the trim is estimated to evict, and evicts
/// them over several transactions (see `_TrimQueue`).
///
/// The totals in `namespaces` count the entries whose row id is at most the one
/// in `totals_watermark` (version 5). A new entry gets a row id above the
/// watermark (SQLite's next row id: the watermark never exceeds the last row id,
/// version 7) and costs the totals nothing; a read of the totals adds the rows above
/// it (a row-id range, a few dozen rows), and every ``foldInterval``-th write of a
/// connection (``limitedFoldInterval``-th in a store with a limit, which reads the
/// totals after every write) folds them into the totals and moves the watermark, in
/// that write's transaction. Triggers keep the totals of the rows at or below the
/// watermark when they are deleted or resized, and bring the watermark down when
/// the rows at the top of the table go. Through version 4 a trigger updated the
/// totals on every insert, which wrote the totals' page in every commit and cost
/// a new 1 KiB key about a quarter of its insert time. Every step is a statement
/// in the write's transaction, so the totals are exact for every connection at
/// every moment, and a crash loses nothing.
///
/// The database's `application_id` header field is ``applicationID``, so a store
/// is recognised by its first 100 bytes before SQLite opens it.
///
/// Version 1 had no `crc` column; versions 1 and 2 kept `accessed_at` in
/// `entries`; version 3 gave every entry an access row on every write; versions 1
/// to 4 kept the totals by a trigger on every insert; versions 3 to 5 indexed
/// `access` by time; versions 5 and 6 left the watermark above the last row id when
/// the rows at the top were deleted. ``migrate(blobs:)`` turns any of them into a
/// version 7 index in one
/// transaction (``DiskStore`` does so when it opens one and no other instance has
/// the store open).
///
/// Not thread-safe: used only inside the store's `Mutex`.
final class _DiskIndex {
    /// `PRAGMA application_id`: "HORD".
    static let applicationID: UInt32 = 0x484F_5244
    static let formatName = "hoard.diskstore"
    static let formatVersion = 7
    /// How many writes of one connection leave their rows above the totals'
    /// watermark before the transaction of the last one folds them in, in a store
    /// with no limit.
    static let foldInterval = 64
    /// ``foldInterval`` in a store with a byte or count limit, which sums the rows
    /// above the watermark after every write: fewer rows to sum, for a fold (the
    /// totals' page in the log) every 16 writes instead of 64.
    static let limitedFoldInterval = 16
    /// The oldest format version ``migrate(blobs:)`` upgrades.
    static let oldestMigratableVersion = 1

    let connection: _SQLiteConnection
    private var statements: [_SQLiteConnection.Statement?]
    /// The format version recorded in `meta` (``formatVersion`` once migrated).
    private(set) var storedVersion: Int
    /// Entries written through this connection since its last fold of the totals
    /// (see ``foldTotals()``).
    private var writesSinceFold = 0
    /// How many writes this connection leaves above the watermark before a fold:
    /// ``foldInterval`` or ``limitedFoldInterval``.
    var writesPerFold = foldInterval

    // MARK: Creating and opening

    /// Builds the schema in the (empty, existing) database file at `path`.
    static func createDatabase(at path: String, now: Date) throws(HoardError) {
        let connection = try _SQLiteConnection(path: path)
        defer { connection.close() }
        try connection.execute(
            """
            PRAGMA application_id = \(Int32(bitPattern: applicationID));
            PRAGMA journal_mode = WAL;
            BEGIN IMMEDIATE;
            CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
            INSERT INTO meta (name, value) VALUES
                ('format', '\(formatName)'),
                ('version', '\(formatVersion)'),
                ('created', '\(now.timeIntervalSince1970)');
            \(entriesTableSQL(named: "entries"))
            CREATE TABLE namespaces (
                namespace BLOB PRIMARY KEY NOT NULL,
                count INTEGER NOT NULL,
                bytes INTEGER NOT NULL
            ) WITHOUT ROWID;
            \(entriesIndexesSQL)
            \(watermarkTableSQL)
            \(totalsTriggersSQL)
            \(accessTableSQL)
            \(rewriteTriggerSQL)
            COMMIT;
            """)
    }

    /// The `entries` table of format version 3, under `name`.
    private static func entriesTableSQL(named name: String) -> String {
        """
        CREATE TABLE \(name) (
            id INTEGER PRIMARY KEY,
            namespace BLOB NOT NULL,
            key BLOB NOT NULL,
            stored_at REAL NOT NULL,
            expires_at REAL,
            size INTEGER NOT NULL,
            value BLOB,
            blob TEXT,
            crc INTEGER
        );
        """
    }

    /// The indexes of `entries`.
    private static let entriesIndexesSQL = """
        CREATE UNIQUE INDEX entries_by_key ON entries (namespace, key);
        CREATE INDEX entries_by_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX entries_with_files ON entries (blob) WHERE blob IS NOT NULL;
        """

    /// The row id up to which `namespaces` counts the entries (format version 5),
    /// starting at every row there is.
    private static let watermarkTableSQL = """
        CREATE TABLE totals_watermark (id INTEGER NOT NULL);
        INSERT INTO totals_watermark (id) SELECT coalesce(max(id), 0) FROM entries;
        """

    /// The triggers that keep `namespaces` up to date for the rows it counts, those
    /// at or below the watermark (format version 5; through version 4 every row,
    /// with a third trigger on insert), and the watermark at or below the table's
    /// last row id (version 7).
    private static let totalsTriggersSQL = """
        \(deletionTriggersSQL)
        CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries
        WHEN OLD.size IS NOT NEW.size AND OLD.id <= (SELECT id FROM totals_watermark) BEGIN
            UPDATE namespaces SET bytes = bytes - OLD.size + NEW.size WHERE namespace = NEW.namespace;
        END;
        """

    /// The triggers on deleting an entry (format version 7): a counted row leaves
    /// the totals, and the watermark comes down to the last row id still in the
    /// table when the rows at and above it are gone, so that it never exceeds it.
    ///
    /// That keeps a new entry above the watermark with the row id SQLite gives it
    /// (the last one plus one), which ``_Query/upsert`` leaves to SQLite. Through
    /// version 6 the watermark stayed where it was and the upsert computed each new
    /// id as the larger of the last id and the watermark, plus one: two subqueries
    /// on every write (their cost: `Benchmarks/README.md`, "inserts with the row id
    /// SQLite gives"). Lowering the watermark is always safe: no row
    /// lies between the last row and the watermark, so it counts the same rows.
    ///
    /// Each trigger's `WHEN` reads the watermark before either changes it, so
    /// their order does not matter: a counted row is `OLD.id <= watermark`, and
    /// only the deletion of the row at the watermark itself, or of a row above it,
    /// can leave the watermark above the last row.
    private static let deletionTriggersSQL = """
        CREATE TRIGGER entries_deleted AFTER DELETE ON entries
        WHEN OLD.id <= (SELECT id FROM totals_watermark) BEGIN
            UPDATE namespaces SET count = count - 1, bytes = bytes - OLD.size WHERE namespace = OLD.namespace;
            DELETE FROM namespaces WHERE namespace = OLD.namespace AND count <= 0;
            UPDATE totals_watermark SET id = \(lastRowIDSQL) WHERE id = OLD.id AND id > \(lastRowIDSQL);
        END;
        CREATE TRIGGER entries_deleted_above_watermark AFTER DELETE ON entries
        WHEN OLD.id > (SELECT id FROM totals_watermark) BEGIN
            \(lowerWatermarkSQL);
        END;
        """

    /// The last row id of `entries`, 0 when it is empty, as an SQL expression: the
    /// highest the totals' watermark may be (format version 7).
    static let lastRowIDSQL = "coalesce((SELECT max(id) FROM entries), 0)"

    /// Brings the totals' watermark down to ``lastRowIDSQL`` when it is above it.
    private static let lowerWatermarkSQL = "UPDATE totals_watermark SET id = \(lastRowIDSQL) WHERE id > \(lastRowIDSQL)"

    /// Opens an existing index: WAL, `synchronous = NORMAL`, the busy timeout (at
    /// most `Int32.max` milliseconds, about 24.8 days: SQLite's limit), the page
    /// cache size, the length limit when one is given (see
    /// ``_SQLiteConnection/lengthLimit``), and a check of the format recorded in
    /// `meta`.
    ///
    /// - Throws: ``HoardError/Code/notAStore`` or ``HoardError/Code/unsupportedFormat``
    ///   when `meta` does not describe a store this version can use; nothing is
    ///   written before that check passes.
    init(path: String, busyTimeout: TimeInterval, pageCacheBytes: Int = 0, lengthLimit: Int? = nil)
        throws(HoardError)
    {
        connection = try _SQLiteConnection(path: path)
        statements = Array(repeating: nil, count: _Query.allCases.count)
        storedVersion = 0
        if let lengthLimit { connection.lengthLimit = lengthLimit }
        try connection.setBusyTimeout(milliseconds: Int(min(busyTimeout * 1000, Double(Int32.max))))
        storedVersion = try checkFormat()
        try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        if pageCacheBytes > 0 {
            // A negative cache_size is in KiB.
            try connection.execute("PRAGMA cache_size = -\(max(1, pageCacheBytes >> 10))")
        }
        // Checkpoints (each ends in an fsync) every 10,000 pages of log instead of
        // SQLite's 1,000: recorded access times rewrite the same pages again and
        // again, and a checkpoint copies each page once however often it changed.
        try connection.execute("PRAGMA wal_autocheckpoint = 10000")
    }

    /// Opens a read connection to an index the store's write connection has already
    /// opened and checked (so of the current format): the busy timeout and page
    /// cache as for the writer, and `query_only`, so that nothing it runs can write.
    init(readerAt path: String, busyTimeout: TimeInterval, pageCacheBytes: Int, lengthLimit: Int?) throws(HoardError) {
        connection = try _SQLiteConnection(path: path)
        statements = Array(repeating: nil, count: _Query.allCases.count)
        storedVersion = Self.formatVersion
        if let lengthLimit { connection.lengthLimit = lengthLimit }
        try connection.setBusyTimeout(milliseconds: Int(min(busyTimeout * 1000, Double(Int32.max))))
        if pageCacheBytes > 0 {
            try connection.execute("PRAGMA cache_size = -\(max(1, pageCacheBytes >> 10))")
        }
        try connection.execute("PRAGMA query_only = 1")
    }

    /// The format version `meta` records, when this version of Hoard can use it
    /// (``formatVersion``, or an older one ``migrate(blobs:)`` upgrades).
    private func checkFormat() throws(HoardError) -> Int {
        var format: String?
        var version: String?
        do {
            let statement = try self.statement(.readMeta)
            defer { statement.reset() }
            while try statement.step() {
                switch statement.string(at: 0) {
                case "format": format = statement.string(at: 1)
                case "version": version = statement.string(at: 1)
                default: break
                }
            }
        } catch  where error.code == .permissionDenied {
            throw HoardError(
                .permissionDenied,
                "the store cannot be opened by this user: its index (and the directory its journal goes in) must be "
                    + "writable, even to read it, as SQLite's WAL mode writes beside the database; open it as the user "
                    + "who owns it, or copy it",
                path: connection.path, underlying: error)
        } catch  where error.code == .storeDamaged || error.code == .busy {
            throw HoardError(
                error.code, "the index database has Hoard's application id but its format record cannot be read",
                path: connection.path, underlying: error)
        } catch {
            throw HoardError(
                .notAStore, "the index database has Hoard's application id but no format record; nothing was changed",
                path: connection.path, underlying: error)
        }
        guard format == Self.formatName, let version, let number = Int(version) else {
            throw HoardError(
                .notAStore, "the index database does not record the format \(Self.formatName)",
                path: connection.path)
        }
        guard number <= Self.formatVersion else {
            throw HoardError(
                .unsupportedFormat,
                "the store has format version \(number); this version of Hoard reads up to \(Self.formatVersion)",
                path: connection.path)
        }
        guard number >= Self.oldestMigratableVersion else {
            throw HoardError(
                .unsupportedFormat,
                "the store has format version \(number); this version of Hoard reads versions \(Self.oldestMigratableVersion) to \(Self.formatVersion)",
                path: connection.path)
        }
        return number
    }

    /// The access table and the trigger that deletes an entry's access time with
    /// the entry (format version 3; version 6 without the time index).
    private static let accessTableSQL = """
        CREATE TABLE access (id INTEGER PRIMARY KEY, accessed_at REAL NOT NULL);
        \(accessTriggerSQL)
        """

    /// The trigger that deletes an entry's access time with the entry.
    private static let accessTriggerSQL = """
        CREATE TRIGGER entries_deleted_access AFTER DELETE ON entries BEGIN
            DELETE FROM access WHERE id = OLD.id;
        END;
        """

    /// The trigger that deletes an entry's access time when the entry is written
    /// again, so that it reads as accessed when stored (format version 4).
    static let rewriteTriggerSQL = """
        CREATE TRIGGER entries_rewritten_access AFTER UPDATE OF stored_at ON entries BEGIN
            DELETE FROM access WHERE id = NEW.id;
        END;
        """

    /// Upgrades a version 1 to 6 index to version 7 in one transaction. Call
    /// only when no other instance has the store open: an older version of Hoard
    /// would go on writing rows of its own format (and, before version 4, would
    /// never evict an entry without an access row).
    ///
    /// - Complexity: O(entries), plus the bytes in value files from version 1;
    ///   O(1) from version 3.
    func migrate(blobs: _BlobFiles) throws(HoardError) {
        guard storedVersion < Self.formatVersion else { return }
        try transaction { () throws(HoardError) in
            if storedVersion < 2 { try addChecksums(blobs: blobs) }
            if storedVersion < 3 { try moveAccessTimes() }
            if storedVersion < 4 { try connection.execute(Self.rewriteTriggerSQL) }
            // Version 4 → 5: the totals, kept by triggers, count every row so far.
            if storedVersion < 5 { try connection.execute(Self.watermarkMigrationSQL) }
            // Version 5 → 6: access order without the time index.
            try connection.execute("DROP INDEX IF EXISTS access_by_time")
            // Version 5 or 6 → 7 (from 4, the watermark migration made them already).
            if storedVersion >= 5 { try connection.execute(Self.deletionTriggersMigrationSQL) }
            try connection.execute("UPDATE meta SET value = '\(Self.formatVersion)' WHERE name = 'version'")
        }
        storedVersion = Self.formatVersion
    }

    /// Version 1 → 2: adds the `crc` column and stores every entry's checksum,
    /// reading each value file. An entry whose file is missing or of the wrong size
    /// gets no checksum, so it reads as damaged (as it did before).
    private func addChecksums(blobs: _BlobFiles) throws(HoardError) {
        try connection.execute("ALTER TABLE entries ADD COLUMN crc INTEGER")
        var checksums: [(id: Int64, crc: UInt32)] = []
        let rows = try connection.prepare("SELECT id, namespace, key, value, blob, size FROM entries")
        defer { rows.reset() }
        while try rows.step() {
            guard let namespace = rows.string(at: 1), let key = rows.string(at: 2) else { continue }
            switch (rows.type(at: 3), rows.type(at: 4)) {
            case (.blob, .null):
                let crc = Self.checksum(rows.bytes(at: 3), namespace: namespace, key: key)
                checksums.append((rows.int64(at: 0), crc))
            case (.null, .text):
                guard let name = rows.string(at: 4), _BlobFiles.isValidName(name),
                    case .data(let data) = try blobs.read(name, size: Int(rows.int64(at: 5)))
                else { continue }
                let crc = data.withUnsafeBytes { Self.checksum($0, namespace: namespace, key: key) }
                checksums.append((rows.int64(at: 0), crc))
            default:
                continue  // a malformed row stays malformed: reads remove it
            }
        }
        let update = try connection.prepare("UPDATE entries SET crc = ?2 WHERE id = ?1")
        for (id, crc) in checksums {
            update.bind(id, at: 1)
            update.bind(Int64(crc), at: 2)
            _ = try update.step()
            update.reset()
        }
    }

    /// Version 2 → 3: moves `accessed_at` out of `entries` into `access` (a time
    /// that is not a number becomes 0, the first to be evicted).
    ///
    /// `entries` is rebuilt without the column rather than altered with
    /// `ALTER TABLE … DROP COLUMN`, which SQLite has only since 3.35: a new table
    /// takes the rows (ids, and so access times, unchanged), the old one is dropped
    /// with its indexes and triggers (the triggers first, so that dropping it does
    /// not touch the totals), and the indexes and triggers are made anew.
    private func moveAccessTimes() throws(HoardError) {
        try connection.execute(Self.moveAccessTimesSQL)
    }

    /// Version 4 → 5: the watermark at the last row (the totals count every row),
    /// and the totals' triggers of version 5 instead of the three of version 4.
    static let watermarkMigrationSQL = """
        DROP TRIGGER IF EXISTS entries_inserted;
        DROP TRIGGER IF EXISTS entries_deleted;
        DROP TRIGGER IF EXISTS entries_resized;
        \(watermarkTableSQL)
        \(totalsTriggersSQL)
        """

    /// Version 5 or 6 → 7: the deletion triggers of version 7, and the watermark
    /// down to the last row id (an earlier version left it above when the rows at
    /// the top of the table were deleted after a fold).
    static let deletionTriggersMigrationSQL = """
        DROP TRIGGER IF EXISTS entries_deleted;
        DROP TRIGGER IF EXISTS entries_deleted_above_watermark;
        \(deletionTriggersSQL)
        \(lowerWatermarkSQL);
        """

    /// The statements of ``moveAccessTimes()`` (the totals' triggers come after, in
    /// ``watermarkMigrationSQL``).
    static let moveAccessTimesSQL = """
        CREATE TABLE access (id INTEGER PRIMARY KEY, accessed_at REAL NOT NULL);
        INSERT INTO access (id, accessed_at)
            SELECT id, CASE WHEN typeof(accessed_at) IN ('real', 'integer') THEN accessed_at ELSE 0 END
            FROM entries;
        \(entriesTableSQL(named: "entries_v3"))
        INSERT INTO entries_v3 (id, namespace, key, stored_at, expires_at, size, value, blob, crc)
            SELECT id, namespace, key, stored_at, expires_at, size, value, blob, crc FROM entries;
        DROP TRIGGER IF EXISTS entries_inserted;
        DROP TRIGGER IF EXISTS entries_deleted;
        DROP TRIGGER IF EXISTS entries_resized;
        DROP TABLE entries;
        ALTER TABLE entries_v3 RENAME TO entries;
        \(entriesIndexesSQL)
        \(accessTriggerSQL)
        """

    /// The checksum stored with an entry: CRC-32C of the value's bytes, then of the
    /// namespace's UTF-8, one 0xFF byte (never part of UTF-8), and the key's UTF-8.
    /// Binding the name means a row that answers for another key does not pass.
    static func checksum(_ value: UnsafeRawBufferPointer, namespace: String, key: String) -> UInt32 {
        var crc = _CRC32C.update(_CRC32C.update(0, value), namespace)
        crc = withUnsafeBytes(of: UInt8(0xFF)) { _CRC32C.update(crc, $0) }
        return _CRC32C.update(crc, key)
    }

    func close() {
        statements = []
        connection.close()
    }

    // MARK: Statements

    func statement(_ query: _Query) throws(HoardError) -> _SQLiteConnection.Statement {
        if let statement = statements[query.rawValue] { return statement }
        let statement = try connection.prepare(query.sql)
        statements[query.rawValue] = statement
        return statement
    }

    /// Runs a statement that returns no rows.
    func run(_ query: _Query) throws(HoardError) {
        let statement = try self.statement(query)
        defer { statement.reset() }
        _ = try statement.step()
    }

    /// Called when a transaction that may have changed `entries` has ended
    /// (committed or not): the store's write connection advances the access
    /// log's epoch here (see ``_DiskAccessLog/entriesMayHaveChanged()``).
    var transactionEnded: (() -> Void)?

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`): committed when it
    /// returns, rolled back when it throws. Then, unless `changesEntries` is
    /// `false` (the caller promises `body` changes no row of `entries`), calls
    /// ``transactionEnded``.
    ///
    /// A transaction that writes an entry and brings the connection's writes since
    /// its last fold to ``writesPerFold`` folds the totals before it commits. One
    /// that writes no entry (a removal, a trim) never folds, even when the
    /// transaction of the write that reached the interval failed: on a full disk a
    /// removal writes only what it removes.
    func transaction<R>(changesEntries: Bool = true, _ body: () throws(HoardError) -> R) throws(HoardError) -> R {
        defer { if changesEntries { transactionEnded?() } }
        try run(.begin)
        let writesBefore = writesSinceFold
        do {
            let result = try body()
            if writesSinceFold > writesBefore, writesSinceFold >= writesPerFold { try foldTotals() }
            try run(.commit)
            return result
        } catch {
            if connection.isInTransaction { try? run(.rollback) }
            throw error
        }
    }

    /// Folds the entries above the totals' watermark into `namespaces` and moves
    /// the watermark to the last row. Call inside a transaction; the totals read
    /// the same before and after.
    private func foldTotals() throws(HoardError) {
        try run(.foldTotals)
        try run(.moveWatermark)
        writesSinceFold = 0
    }

    /// `PRAGMA data_version`: a value that differs from the one this connection
    /// read before if another connection committed since.
    func dataVersion() throws(HoardError) -> Int64 {
        let statement = try self.statement(.dataVersion)
        defer { statement.reset() }
        guard try statement.step() else { throw HoardError(.ioFailed, "PRAGMA data_version returned no row") }
        return statement.int64(at: 0)
    }

    /// Calls `body` with the UTF-8 bytes of two strings, without copying them.
    @inline(__always)
    func withBytes<R>(
        _ first: String, _ second: String,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(HoardError) -> R
    ) throws(HoardError) -> R {
        var first = first
        var second = second
        let result = first.withUTF8 { a in
            second.withUTF8 { b in
                Result { () throws(HoardError) -> R in try body(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) }
            }
        }
        return try result.get()
    }

    /// Calls `body` with the UTF-8 bytes of a string, without copying it.
    @inline(__always)
    func withBytes<R>(_ string: String, _ body: (UnsafeRawBufferPointer) throws(HoardError) -> R) throws(HoardError)
        -> R
    {
        var string = string
        let result = string.withUTF8 { a in
            Result { () throws(HoardError) -> R in try body(UnsafeRawBufferPointer(a)) }
        }
        return try result.get()
    }

    // MARK: Reading one entry

    /// One entry's row as read for a lookup.
    struct Row {
        var id: Int64
        var storedAt: Double
        var expiresAt: Double?
        var size: Int
        /// The value, when inline.
        var value: Data?
        /// The file name, when spilled.
        var blob: String?
        /// The stored checksum (see ``_DiskIndex/checksum(_:namespace:key:)``).
        var crc: UInt32
        /// What is wrong with the row, when something is.
        var problem: String?
        /// Whether the inline value does not match the stored checksum (for a
        /// spilled value the reader checks the file).
        var checksumMismatch = false
    }

    /// The row for `key` in `namespace`, checked for shape, and an inline value
    /// checked against its checksum. `foundRow` is called with the row's id as
    /// soon as the row is found, before the rest is read and checked (a reader
    /// prefetches the access log's slot for it: ``_DiskAccessLog/prefetch(id:)``).
    func lookup(
        namespace: String, key: String, foundRow: @Sendable (_ id: Int64) -> Void = { _ in }
    ) throws(HoardError) -> Row? {
        let statement = try self.statement(.lookup)
        return try withBytes(namespace, key) { (ns, k) throws(HoardError) -> Row? in
            try statement.bind(bytes: ns, at: 1)
            try statement.bind(bytes: k, at: 2)
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            foundRow(statement.int64(at: 0))
            var row = Self.readRow(statement)
            if row.problem == nil, statement.type(at: 4) == .blob,
                Self.checksum(statement.bytes(at: 4), namespace: namespace, key: key) != row.crc
            {
                row.checksumMismatch = true
                row.value = nil
            }
            return row
        }
    }

    /// Reads columns `id, stored_at, expires_at, size, value, blob, crc`.
    private static func readRow(_ s: _SQLiteConnection.Statement) -> Row {
        var row = Row(
            id: s.int64(at: 0), storedAt: s.double(at: 1), expiresAt: nil,
            size: Int(s.int64(at: 3)), value: nil, blob: nil, crc: 0, problem: nil)
        if s.type(at: 6) == .integer, let crc = UInt32(exactly: s.int64(at: 6)) {
            row.crc = crc
        } else {
            row.problem = "it has no valid checksum"
        }
        func isNumber(_ type: _SQLiteType) -> Bool { type == .float || type == .integer }
        let valueType = s.type(at: 4)
        let blobType = s.type(at: 5)
        if !isNumber(s.type(at: 1)) {
            row.problem = "its stored date is not a number"
        } else if s.type(at: 3) != .integer || row.size < 0 {
            row.problem = "its size is not a non-negative integer"
        }
        switch s.type(at: 2) {
        case .null: break
        case .float, .integer: row.expiresAt = s.double(at: 2)
        default: row.problem = row.problem ?? "its expiry date is not a number"
        }
        switch (valueType, blobType) {
        case (.blob, .null):
            let bytes = s.bytes(at: 4)
            if bytes.count != row.size {
                row.problem = row.problem ?? "its value has \(bytes.count) bytes, its size says \(row.size)"
            } else if row.problem == nil {
                row.value = bytes.isEmpty ? Data() : Data(bytes)
            }
        case (.null, .text):
            let name = s.string(at: 5) ?? ""
            if _BlobFiles.isValidName(name) {
                row.blob = name
            } else {
                row.problem = row.problem ?? "it refers to a value file by an invalid name"
            }
        case (.null, .null):
            row.problem = row.problem ?? "it has neither an inline value nor a value file"
        default:
            row.problem = row.problem ?? "its value columns have the wrong types"
        }
        return row
    }

    /// Whether `namespace` holds an entry for `key` that is live at `now`.
    func contains(namespace: String, key: String, now: Double) throws(HoardError) -> Bool {
        let statement = try self.statement(.expiryOfKey)
        return try withBytes(namespace, key) { (ns, k) throws(HoardError) -> Bool in
            try statement.bind(bytes: ns, at: 1)
            try statement.bind(bytes: k, at: 2)
            defer { statement.reset() }
            guard try statement.step() else { return false }
            if statement.type(at: 0) == .null { return true }
            return statement.double(at: 0) > now
        }
    }

    // MARK: Writing

    /// Inserts or replaces the entry for `key` in `namespace`. A replaced entry
    /// loses its access row (a trigger): it reads as accessed when stored. With
    /// `accessedAt`, that is recorded as its access time (for a stored date that
    /// is not the write time); without, an insert writes one row.
    ///
    /// The statement returns no row id on purpose: `RETURNING` makes SQLite buffer
    /// every result row in a temporary table, which cost about a sixth of a batch
    /// write. Eviction protects fresh entries by name instead (``_EntryName``).
    func upsert(
        namespace: String, key: String, storedAt: Double, expiresAt: Double?, accessedAt: Double?,
        value: Data?, size: Int, blob: String?, crc: UInt32
    ) throws(HoardError) {
        let statement = try self.statement(.upsert)
        writesSinceFold += 1
        try withBytes(namespace, key) { (ns, k) throws(HoardError) in
            statement.bind(Int64(crc), at: 8)
            try statement.bind(bytes: ns, at: 1)
            try statement.bind(bytes: k, at: 2)
            statement.bind(storedAt, at: 3)
            statement.bind(expiresAt, at: 4)
            statement.bind(Int64(size), at: 5)
            if let blob { try statement.bind(text: blob, at: 7) } else { statement.bindNull(at: 7) }
            defer { statement.reset() }
            if let value {
                let result = value.withUnsafeBytes { bytes in
                    Result { () throws(HoardError) in
                        try statement.bind(bytes: bytes, at: 6)
                        _ = try statement.step()
                    }
                }
                try result.get()
            } else {
                statement.bindNull(at: 6)
                _ = try statement.step()
            }
            guard let accessedAt else { return }
            let recordWrite = try self.statement(.recordWrite)
            try recordWrite.bind(bytes: ns, at: 1)
            try recordWrite.bind(bytes: k, at: 2)
            recordWrite.bind(accessedAt, at: 3)
            defer { recordWrite.reset() }
            _ = try recordWrite.step()
        }
    }

    /// The file name the entry for `key` refers to, if it has one.
    func fileName(namespace: String, key: String) throws(HoardError) -> String? {
        let statement = try self.statement(.fileOfKey)
        return try withBytes(namespace, key) { (ns, k) throws(HoardError) -> String? in
            try statement.bind(bytes: ns, at: 1)
            try statement.bind(bytes: k, at: 2)
            defer { statement.reset() }
            guard try statement.step(), statement.type(at: 0) == .text else { return nil }
            return statement.string(at: 0)
        }
    }

    /// Whether any entry refers to a file.
    func anyFiles() throws(HoardError) -> Bool {
        let statement = try self.statement(.anyFile)
        defer { statement.reset() }
        return try statement.step()
    }

    /// Deletes the entry for `key` in `namespace`. Call inside a transaction.
    ///
    /// - Returns: Whether there was one, and the file it referred to.
    func delete(namespace: String, key: String) throws(HoardError) -> (found: Bool, file: String?) {
        try withBytes(namespace, key) { (ns, k) throws(HoardError) -> (found: Bool, file: String?) in
            let (count, files) = try deleteRows(.fileOfKeyToDelete, .deleteKey) { (statement) throws(HoardError) in
                try statement.bind(bytes: ns, at: 1)
                try statement.bind(bytes: k, at: 2)
            }
            return (count > 0, files.first)
        }
    }

    /// Deletes every entry of `namespace`, or of the whole store when `nil`. Call
    /// inside a transaction.
    ///
    /// - Returns: How many entries, and the files they referred to.
    func deleteAll(namespace: String?) throws(HoardError) -> (count: Int, files: [String]) {
        guard let namespace else {
            return try deleteRows(.filesOfEverythingToDelete, .deleteEverything) { (_) throws(HoardError) in }
        }
        return try withBytes(namespace) { (ns) throws(HoardError) -> (count: Int, files: [String]) in
            try deleteRows(.filesOfNamespaceToDelete, .deleteNamespace) { (statement) throws(HoardError) in
                try statement.bind(bytes: ns, at: 1)
            }
        }
    }

    /// Runs a deletion as two statements with the same parameters (`bind` binds
    /// one): `select` reads the files of the rows, then `delete` deletes them.
    /// The form `DELETE … RETURNING blob` does both at once but needs SQLite 3.35;
    /// inside the caller's transaction the two see the same rows.
    private func deleteRows(
        _ select: _Query, _ delete: _Query, bind: (_SQLiteConnection.Statement) throws(HoardError) -> Void
    ) throws(HoardError) -> (count: Int, files: [String]) {
        let selecting = try statement(select)
        try bind(selecting)
        var count = 0
        var files: [String] = []
        do {
            defer { selecting.reset() }
            while try selecting.step() {
                count += 1
                if selecting.type(at: 0) == .text, let file = selecting.string(at: 0) { files.append(file) }
            }
        }
        guard count > 0 else { return (0, []) }
        let deleting = try statement(delete)
        try bind(deleting)
        do {
            defer { deleting.reset() }
            _ = try deleting.step()
        }
        return (count, try self.files(files, namedByAtMost: 0))
    }

    /// The files of `files` that at most `rows` rows of the index name (each probe
    /// reads `entries_with_files`, the index of file names: O(log entries)).
    ///
    /// A file is written for one entry under a fresh name, so only a damaged index
    /// has two rows naming one file; then removing, overwriting or trimming one of
    /// them must not delete the file the other still names. With `rows` 0, after a
    /// deletion or an overwrite in the same transaction: the files it released that
    /// may be deleted. With 1, before one: the files of the rows it removes that no
    /// other row names (deleted early on a full disk).
    func files(_ files: some Collection<String>, namedByAtMost rows: Int) throws(HoardError) -> [String] {
        guard !files.isEmpty else { return [] }
        let statement = try self.statement(.rowsNamingFile)
        var result: [String] = []
        for file in files {
            try statement.bind(text: file, at: 1)
            defer { statement.reset() }
            guard try statement.step() else { continue }
            if statement.int64(at: 0) <= rows { result.append(file) }
        }
        return result
    }

    /// Deletes the entry with row id `id` if it has expired at `now`. Call inside
    /// a transaction.
    func deleteIfExpired(id: Int64, now: Double) throws(HoardError) -> (found: Bool, file: String?) {
        let (count, files) = try deleteRows(.fileIfExpiredToDelete, .deleteIfExpired) {
            (statement) throws(HoardError) in
            statement.bind(id, at: 1)
            statement.bind(now, at: 2)
        }
        return (count > 0, files.first)
    }

    /// Deletes the entry with row id `id`. Call inside a transaction.
    func delete(id: Int64) throws(HoardError) -> (found: Bool, file: String?) {
        let (count, files) = try deleteRows(.fileOfIDToDelete, .deleteID) { (statement) throws(HoardError) in
            statement.bind(id, at: 1)
        }
        return (count > 0, files.first)
    }

    /// Deletes every entry that has expired at `now`. Call inside a transaction.
    func deleteExpired(now: Double) throws(HoardError) -> (count: Int, files: [String]) {
        try deleteRows(.filesOfExpiredToDelete, .deleteExpired) { (statement) throws(HoardError) in
            statement.bind(now, at: 1)
        }
    }

    /// Records an access to row `id` at `time` (never moving it backwards). An
    /// entry without an access row (accessed when stored) gets one, at the later
    /// of its stored date and `time`, if it still exists.
    ///
    /// With `storedAt`, the caller vouches that the entry's row is unchanged since
    /// a read found it stored then (no transaction changed `entries` since: see
    /// ``_DiskAccessLog/epoch``), so its existence and stored date are not read
    /// again: one statement, an insert in `access` that updates the row it finds
    /// there instead, without the `pread` of the entry's page (most of a first
    /// access's cost) and without a second statement for an entry never read
    /// before. Without, an entry with no access row has its row read.
    func touch(id: Int64, at time: Double, storedAt: Double? = nil) throws(HoardError) {
        if let storedAt {
            let statement = try self.statement(.touchKnownEntry)
            statement.bind(id, at: 1)
            statement.bind(max(storedAt, time), at: 2)
            statement.bind(time, at: 3)
            defer { statement.reset() }
            _ = try statement.step()
            return
        }
        let statement = try self.statement(.touch)
        statement.bind(id, at: 1)
        statement.bind(time, at: 2)
        _ = try statement.step()
        statement.reset()
        guard connection.changes == 0 else { return }
        let insert = try self.statement(.restoreAccess)
        insert.bind(id, at: 1)
        insert.bind(time, at: 2)
        defer { insert.reset() }
        _ = try insert.step()
    }

    // MARK: Listing and totals

    /// The keys of the entries of `namespace` that are live at `now`.
    func keys(namespace: String, now: Double) throws(HoardError) -> [String] {
        let statement = try self.statement(.keys)
        return try withBytes(namespace) { (ns) throws(HoardError) -> [String] in
            try statement.bind(bytes: ns, at: 1)
            statement.bind(now, at: 2)
            defer { statement.reset() }
            var keys: [String] = []
            while try statement.step() {
                keys.append(statement.string(at: 0) ?? String(decoding: statement.bytes(at: 0), as: UTF8.self))
            }
            return keys
        }
    }

    /// The count and bytes of `namespace`.
    func usage(namespace: String) throws(HoardError) -> StoreUsage {
        let statement = try self.statement(.usage)
        return try withBytes(namespace) { (ns) throws(HoardError) -> StoreUsage in
            try statement.bind(bytes: ns, at: 1)
            defer { statement.reset() }
            guard try statement.step() else { return StoreUsage() }
            return StoreUsage(count: Int(statement.int64(at: 0)), bytes: Int(statement.int64(at: 1)))
        }
    }

    /// The count and bytes of the whole store.
    func totalUsage() throws(HoardError) -> StoreUsage {
        let statement = try self.statement(.totalUsage)
        defer { statement.reset() }
        guard try statement.step() else { return StoreUsage() }
        return StoreUsage(count: Int(statement.int64(at: 0)), bytes: Int(statement.int64(at: 1)))
    }

    /// Every namespace with its count and bytes, in byte order.
    func namespaces() throws(HoardError) -> [(String, StoreUsage)] {
        let statement = try self.statement(.namespaces)
        defer { statement.reset() }
        var result: [(String, StoreUsage)] = []
        while try statement.step() {
            let name = statement.string(at: 0) ?? String(decoding: statement.bytes(at: 0), as: UTF8.self)
            result.append((name, StoreUsage(count: Int(statement.int64(at: 1)), bytes: Int(statement.int64(at: 2)))))
        }
        return result
    }

    /// Up to `limit` access rows, least recently accessed first (by time, then row
    /// id): the entry's row id and its access time. A time that is not a number
    /// (damage ``wrongAccessTimes()`` reports) counts as 0, the first to go.
    ///
    /// - Complexity: one pass over `access` (there is no index by time), keeping
    ///   the `limit` oldest rows: O(entries × log limit).
    func leastRecentlyAccessed(limit: Int) throws(HoardError) -> [_TrimQueue.Candidate] {
        let statement = try self.statement(.leastRecentlyAccessed)
        statement.bind(Int64(limit), at: 1)
        defer { statement.reset() }
        var result: [_TrimQueue.Candidate] = []
        result.reserveCapacity(limit)
        while try statement.step() {
            result.append(_TrimQueue.Candidate(id: statement.int64(at: 0), accessedAt: statement.double(at: 1)))
        }
        return result
    }

    /// The size and name of the entry with row id `id` if it was last accessed at
    /// `accessedAt` as ``leastRecentlyAccessed(limit:)`` reads it (so not read,
    /// written or removed since a trim chose it), else `nil`.
    func trimCandidate(id: Int64, accessedAt: Double) throws(HoardError) -> (size: Int, name: _EntryName)? {
        let statement = try self.statement(.trimCandidate)
        statement.bind(id, at: 1)
        statement.bind(accessedAt, at: 2)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let name = _EntryName(
            namespace: String(decoding: statement.bytes(at: 1), as: UTF8.self),
            key: String(decoding: statement.bytes(at: 2), as: UTF8.self))
        return (Int(statement.int64(at: 0)), name)
    }

    /// The names of the files the entries of `namespace` (of every namespace when
    /// `nil`) refer to.
    func files(in namespace: String?) throws(HoardError) -> Set<String> {
        guard let namespace else { return try referencedFiles() }
        let statement = try self.statement(.filesOfNamespace)
        return try withBytes(namespace) { (ns) throws(HoardError) -> Set<String> in
            try statement.bind(bytes: ns, at: 1)
            defer { statement.reset() }
            var names = Set<String>()
            while try statement.step() {
                if let name = statement.string(at: 0) { names.insert(name) }
            }
            return names
        }
    }

    /// The names of every file some entry refers to.
    func referencedFiles() throws(HoardError) -> Set<String> {
        let statement = try self.statement(.referencedFiles)
        defer { statement.reset() }
        var names = Set<String>()
        while try statement.step() {
            if let name = statement.string(at: 0) { names.insert(name) }
        }
        return names
    }
}
