import BenchSQLite
import Benchmark
import Foundation
import Hoard

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The floor for DiskStore's writes: raw SQLite prepared statements on the index
/// file a DiskStore created and filled, running the statements `DiskStore.set`
/// runs for a value stored inline with its write time as its stored date
/// (`BEGIN IMMEDIATE`, the check for value files, the upsert, `COMMIT`), with none
/// of the Swift around them (no lock, key normalisation, checksum or limit check).
///
/// Where the plain SQLite baseline writes one table and its key index, this writes
/// what the store's format needs: the entry (with a row id above the totals'
/// watermark) and its key index, and every 64th write folds the new rows into the
/// namespace totals; an overwrite also deletes the entry's access row if it has one
/// (a trigger). The gap between this row and
/// the plain one is the format's; the gap between DiskStore and this row is the
/// library's. Its `get` is the store's lookup and, for a value in a file, the
/// store's file reads, without the checksum the store verifies.
final class StoreSchemaSubject: DiskSubject, RawSQLite {
    let directory: URL
    private(set) var db: OpaquePointer?
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?
    private var anyFile: OpaquePointer?
    private var upsert: OpaquePointer?
    private var select: OpaquePointer?
    private var fold: OpaquePointer?
    private var moveWatermark: OpaquePointer?
    /// Writes since the last fold of the totals, as the store counts them.
    private var writesSinceFold = 0
    let keys: [String]
    let value: Data
    var stream: KeyStream
    private var inserted = 0
    /// The path of the store's value-file directory, ending in `/`.
    private let blobs: String

    private var touchAccess: OpaquePointer?
    private var maxID: OpaquePointer?
    private var deleteOldestStatement: OpaquePointer?
    private var random = SplitMix(state: 7)

    /// - Parameter readBefore: As in `StoreSubject`: every entry starts with an
    ///   access row.
    init(shape: Shape, readBefore: Bool = false) throws {
        let filled = try StoreSubject(shape: shape, readBefore: readBefore)
        directory = filled.directory
        keys = filled.keys
        value = filled.value
        stream = filled.stream
        let path = directory.appendingPathComponent("store/index.sqlite").path
        blobs = directory.appendingPathComponent("store/blobs").path + "/"
        try check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil))
        try exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=10000")
        // The store's statement for an access to an entry it knows unchanged.
        touchAccess = try prepare(
            """
            INSERT INTO access (id, accessed_at) VALUES (?1, ?2)
            ON CONFLICT (id) DO UPDATE SET accessed_at = CASE
                WHEN typeof(accessed_at) IN ('real', 'integer') THEN max(accessed_at, ?2) ELSE ?2 END
            """)
        maxID = try prepare("SELECT max(id) FROM entries")
        deleteOldestStatement = try prepare(
            "DELETE FROM entries WHERE id IN (SELECT id FROM access ORDER BY accessed_at, id LIMIT ?1)")
        begin = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
        anyFile = try prepare("SELECT 1 FROM entries WHERE blob IS NOT NULL LIMIT 1")
        upsert = try prepare(
            """
            INSERT INTO entries (namespace, key, stored_at, expires_at, size, value, blob, crc)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (namespace, key) DO UPDATE SET
                stored_at = excluded.stored_at, expires_at = excluded.expires_at, size = excluded.size,
                value = excluded.value, blob = excluded.blob, crc = excluded.crc
            """)
        select = try prepare(
            "SELECT value, stored_at, expires_at, blob, size FROM entries WHERE namespace = ?1 AND key = ?2")
        fold = try prepare(
            """
            INSERT INTO namespaces (namespace, count, bytes)
            SELECT namespace, count(*), sum(size) FROM entries NOT INDEXED
            WHERE id > (SELECT id FROM totals_watermark) GROUP BY namespace
            ON CONFLICT (namespace) DO UPDATE SET count = count + excluded.count, bytes = bytes + excluded.bytes
            """)
        moveWatermark = try prepare(
            """
            UPDATE totals_watermark SET id = (SELECT max(id) FROM entries)
            WHERE id < (SELECT max(id) FROM entries)
            """)
    }

    /// Ends a write transaction as the store does: folds the totals when 64 writes
    /// or more were made since the last fold, then commits.
    private func finish() throws {
        if writesSinceFold >= 64 {
            try step(fold)
            try step(moveWatermark)
            writesSinceFold = 0
        }
        try step(commit)
    }

    /// Binds the default namespace and `key` as UTF-8 blobs, as the store does.
    private func bindName(_ statement: OpaquePointer?, key: String) {
        var namespace = DiskStore.defaultNamespace
        namespace.withUTF8 {
            _ = sqlite3_bind_blob(statement, 1, $0.baseAddress, Int32($0.count), bench_sqlite_transient())
        }
        var key = key
        key.withUTF8 { _ = sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), bench_sqlite_transient()) }
    }

    /// The statements of one inline write, without the transaction around them.
    private func put(_ key: String) throws {
        let now = Date().timeIntervalSince1970
        try step(anyFile)
        bindName(upsert, key: key)
        sqlite3_bind_double(upsert, 3, now)
        sqlite3_bind_null(upsert, 4)
        sqlite3_bind_int64(upsert, 5, Int64(value.count))
        value.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(upsert, 6, bytes.baseAddress, Int32(bytes.count), bench_sqlite_transient())
        }
        sqlite3_bind_null(upsert, 7)
        sqlite3_bind_int64(upsert, 8, 0)
        try step(upsert)
        writesSinceFold += 1
    }

    /// The lookup of the store's `entry(for:in:)`, then for a value in a file the
    /// store's reads (`open`, `fstat`, `pread`, `close`); no checksum.
    func get(_ count: Int) {
        for _ in 0..<count {
            bindName(select, key: keys[stream.next()])
            precondition(sqlite3_step(select) == SQLITE_ROW, "a present key was not found")
            let data: Data
            if sqlite3_column_type(select, 3) == SQLITE_NULL {
                let length = Int(sqlite3_column_bytes(select, 0))
                data = sqlite3_column_blob(select, 0).map { Data(bytes: $0, count: length) } ?? Data()
            } else {
                let name = String(cString: sqlite3_column_text(select, 3))
                data = readFile(name, size: Int(sqlite3_column_int64(select, 4)))
            }
            blackHole((data, sqlite3_column_double(select, 1), sqlite3_column_type(select, 2)))
            sqlite3_reset(select)
        }
    }

    private func readFile(_ name: String, size: Int) -> Data {
        let descriptor = open(blobs + name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        precondition(descriptor >= 0, "a value file could not be opened")
        defer { closeDescriptor(descriptor) }
        var info = stat()
        precondition(fstat(descriptor, &info) == 0 && Int(info.st_size) == size, "a value file has the wrong size")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        precondition(pread(descriptor, buffer.baseAddress, size, 0) == size, "a value file could not be read")
        return Data(
            bytesNoCopy: buffer.baseAddress!, count: size, deallocator: .custom { pointer, _ in pointer.deallocate() })
    }

    func setOne() throws {
        try step(begin)
        try put(keys[stream.next()])
        try finish()
    }

    func insertOne() throws {
        try step(begin)
        try put("new-\(inserted)")
        try finish()
        inserted += 1
    }

    func setBatch(_ count: Int) throws {
        try step(begin)
        for _ in 0..<count { try put(keys[stream.next()]) }
        try finish()
    }

    /// `count` row ids of random entries, in row id order (as a flush writes
    /// them), none twice.
    func randomIDs(_ count: Int) -> [Int64] {
        precondition(sqlite3_step(maxID) == SQLITE_ROW, "the entries' last row id could not be read")
        let last = sqlite3_column_int64(maxID, 0)
        sqlite3_reset(maxID)
        var ids = Set<Int64>()
        while ids.count < count { ids.insert(Int64(random.next() % UInt64(last)) + 1) }
        return ids.sorted()
    }

    /// Writes the access rows of `ids` at the current time in one transaction, as
    /// a flush of the store does.
    func touch(_ ids: [Int64]) throws {
        let now = Date().timeIntervalSince1970
        try step(begin)
        for id in ids {
            sqlite3_bind_int64(touchAccess, 1, id)
            sqlite3_bind_double(touchAccess, 2, now)
            try step(touchAccess)
        }
        try step(commit)
    }

    /// Writes `count` keys not stored yet, 1,000 to a transaction, each with an
    /// access row at its write time (as the store writes an entry stored with an
    /// older date, `StoreSubject.insertBatch(_:)` with `readBefore`).
    func insertBatch(_ count: Int) throws {
        var written = 0
        while written < count {
            try step(begin)
            for _ in 0..<min(1_000, count - written) {
                try put("new-\(inserted)")
                sqlite3_bind_int64(touchAccess, 1, sqlite3_last_insert_rowid(db))
                sqlite3_bind_double(touchAccess, 2, Date().timeIntervalSince1970)
                try step(touchAccess)
                inserted += 1
                written += 1
            }
            try finish()
        }
    }

    /// Deletes the `count` least recently accessed entries in one statement.
    func deleteOldest(_ count: Int) throws {
        try step(begin)
        sqlite3_bind_int64(deleteOldestStatement, 1, Int64(count))
        try step(deleteOldestStatement)
        let deleted = sqlite3_changes(db)
        try step(commit)
        precondition(deleted == count, "the delete removed \(deleted) entries")
    }

    func close() {
        for statement in [
            begin, commit, anyFile, upsert, select, fold, moveWatermark, touchAccess, maxID, deleteOldestStatement,
        ] { sqlite3_finalize(statement) }
        sqlite3_close(db)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// `close(2)`, named apart from the subjects' `close()`.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
