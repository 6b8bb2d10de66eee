import BenchSQLite
import Benchmark
import Foundation
import Hoard

/// The store under test.
final class StoreSubject: DiskSubject {
    let directory: URL
    let store: DiskStore
    let keys: [String]
    let value: Data
    var stream: KeyStream
    let namespace = DiskStore.defaultNamespace
    let readBefore: Bool

    /// - Parameters:
    ///   - accessTimeResolution: As in `DiskStore.Configuration`; `nil` for its default.
    ///   - accessFlushCount: As in `DiskStore.Configuration`; `nil` for its default.
    ///   - accessFlushInterval: As in `DiskStore.Configuration`; `nil` for its default.
    ///   - byteLimit: As in `DiskStore.Configuration`; `nil` for none.
    ///   - readBefore: Whether every entry starts with an access row, as in a store
    ///     whose entries were all read before: the entries are stored with a date an
    ///     hour old, so each write records its write time as the access time.
    init(
        shape: Shape, accessTimeResolution: TimeInterval? = nil, accessFlushCount: Int? = nil,
        accessFlushInterval: TimeInterval? = nil, byteLimit: Int? = nil, readBefore: Bool = false
    ) throws {
        directory = try makeTemporaryDirectory()
        var configuration = DiskStore.Configuration(syncsValueFiles: false)
        configuration.byteLimit = byteLimit
        if let accessTimeResolution { configuration.accessTimeResolution = accessTimeResolution }
        if let accessFlushCount { configuration.accessFlushCount = accessFlushCount }
        if let accessFlushInterval { configuration.accessFlushInterval = accessFlushInterval }
        store = try DiskStore(directory: directory.appendingPathComponent("store"), configuration: configuration)
        keys = shape.keys
        value = Data(repeating: 0xA5, count: shape.valueSize)
        stream = KeyStream(count: 1 << 20, upperBound: shape.entries, seed: 42)
        self.readBefore = readBefore
        let now = readBefore ? Date().addingTimeInterval(-3_600) : Date()
        var start = 0
        while start < keys.count {
            let end = min(start + 1_000, keys.count)
            try store.write(
                keys[start..<end].map { .set(value, for: $0, in: namespace, storedAt: now, expiresAt: nil) })
            start = end
        }
    }

    func get(_ count: Int) {
        for _ in 0..<count {
            let entry = try? store.entry(for: keys[stream.next()], in: namespace)
            precondition(entry != nil, "a present key was not found")
            blackHole(entry)
        }
    }

    func setOne() throws {
        try store.set(value, for: keys[stream.next()], in: namespace, storedAt: Date(), expiresAt: nil)
    }

    /// `count` random gets, then one flush that writes the access times they
    /// recorded (for a store whose flushes never run on their own).
    func getThenFlush(_ count: Int) {
        get(count)
        store.flushAccessTimes()
    }

    private var threadRound: UInt64 = 0

    /// `count` random gets on each of `threads` threads at once, each thread with
    /// keys of its own.
    func getOnThreads(_ threads: Int, _ count: Int) {
        threadRound &+= 1
        let round = threadRound
        let store = store
        let keys = keys
        let namespace = namespace
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix(state: round &* 31 &+ UInt64(thread))
            for _ in 0..<count {
                let key = keys[Int(random.next() % UInt64(keys.count))]
                let entry = try? store.entry(for: key, in: namespace)
                precondition(entry != nil, "a present key was not found")
                blackHole(entry)
            }
        }
    }

    /// A round of `gets` random gets, then a round of `overwrites` random
    /// overwrites, each in its own transaction.
    func rounds(gets: Int, overwrites: Int) throws {
        get(gets)
        for _ in 0..<overwrites { try setOne() }
    }

    private var inserted = 0

    func insertOne() throws {
        try store.set(value, for: "new-\(inserted)", in: namespace, storedAt: Date(), expiresAt: nil)
        inserted += 1
    }

    func setBatch(_ count: Int) throws {
        let now = Date()
        var batch: [CacheStoreWrite] = []
        batch.reserveCapacity(count)
        for _ in 0..<count {
            batch.append(.set(value, for: keys[stream.next()], in: namespace, storedAt: now, expiresAt: nil))
        }
        try store.write(batch)
    }

    /// Writes `count` keys not stored yet (`new-…`, as `insertOne()`), 1,000 to a
    /// transaction, dated as the store was filled (see `readBefore`).
    func insertBatch(_ count: Int) throws {
        let now = readBefore ? Date().addingTimeInterval(-3_600) : Date()
        var written = 0
        while written < count {
            let batch = (0..<min(1_000, count - written)).map { offset -> CacheStoreWrite in
                .set(value, for: "new-\(inserted + offset)", in: namespace, storedAt: now, expiresAt: nil)
            }
            try store.write(batch)
            inserted += batch.count
            written += batch.count
        }
    }

    func close() {
        try? FileManager.default.removeItem(at: directory)
    }
}

struct SQLiteFailure: Error, CustomStringConvertible {
    let description: String
}

/// Baseline: SQLite with prepared statements, no eviction or access bookkeeping.
final class SQLiteSubject: DiskSubject, RawSQLite {
    let directory: URL
    private(set) var db: OpaquePointer?
    private var insert: OpaquePointer?
    private var select: OpaquePointer?
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?
    private var touch: OpaquePointer?
    let keys: [String]
    let value: Data
    var stream: KeyStream
    let namespace = "default"

    init(shape: Shape) throws {
        directory = try makeTemporaryDirectory()
        keys = shape.keys
        value = Data(repeating: 0xA5, count: shape.valueSize)
        stream = KeyStream(count: 1 << 20, upperBound: shape.entries, seed: 42)
        let path = directory.appendingPathComponent("index.sqlite").path
        try check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil))
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=NORMAL")
        try exec(
            """
            CREATE TABLE entries (namespace TEXT NOT NULL, key TEXT NOT NULL, stored REAL NOT NULL,
            expires REAL, accessed REAL, value BLOB NOT NULL, PRIMARY KEY (namespace, key))
            """)
        // A rowid table (the primary key becomes a unique index), not WITHOUT ROWID:
        // a WITHOUT ROWID row over ~1,000 bytes on 4 KiB pages spills to an overflow
        // page, which made the first version of this baseline 3x slower than DiskStore.
        insert = try prepare(
            "INSERT OR REPLACE INTO entries (namespace, key, stored, expires, value) VALUES (?, ?, ?, ?, ?)")
        select = try prepare("SELECT value, stored, expires FROM entries WHERE namespace = ? AND key = ?")
        touch = try prepare("UPDATE entries SET accessed = ? WHERE namespace = ? AND key = ?")
        begin = try prepare("BEGIN")
        commit = try prepare("COMMIT")
        var start = 0
        while start < keys.count {
            let end = min(start + 1_000, keys.count)
            try step(begin)
            for index in start..<end { try put(keys[index]) }
            try step(commit)
            start = end
        }
    }

    private func put(_ key: String) throws {
        sqlite3_bind_text(insert, 1, namespace, -1, bench_sqlite_transient())
        sqlite3_bind_text(insert, 2, key, -1, bench_sqlite_transient())
        sqlite3_bind_double(insert, 3, Date().timeIntervalSince1970)
        sqlite3_bind_null(insert, 4)
        value.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(insert, 5, bytes.baseAddress, Int32(bytes.count), bench_sqlite_transient())
        }
        try step(insert)
    }

    func get(_ count: Int) {
        for _ in 0..<count {
            sqlite3_bind_text(select, 1, namespace, -1, bench_sqlite_transient())
            sqlite3_bind_text(select, 2, keys[stream.next()], -1, bench_sqlite_transient())
            precondition(sqlite3_step(select) == SQLITE_ROW, "a present key was not found")
            let length = Int(sqlite3_column_bytes(select, 0))
            let data = sqlite3_column_blob(select, 0).map { Data(bytes: $0, count: length) } ?? Data()
            let stored = sqlite3_column_double(select, 1)
            let expires: Double? =
                sqlite3_column_type(select, 2) == SQLITE_NULL ? nil : sqlite3_column_double(select, 2)
            sqlite3_reset(select)
            blackHole((data, stored, expires))
        }
    }

    func setOne() throws {
        try put(keys[stream.next()])
    }

    /// One read connection per thread of `getOnThreads`, opened on its first call.
    private var readers: [SQLiteReader] = []

    /// `count` random gets on each of `threads` threads at once, each thread on a
    /// connection of its own with keys of its own (as `StoreSubject.getOnThreads`):
    /// what SQLite itself does with two readers in WAL mode, the floor of the
    /// store's 2-thread row.
    func getOnThreads(_ threads: Int, _ count: Int) throws {
        while readers.count < threads {
            readers.append(try SQLiteReader(path: directory.appendingPathComponent("index.sqlite").path))
        }
        threadRound &+= 1
        let round = threadRound
        let keys = keys
        let namespace = namespace
        // Each thread uses only the reader at its own index, so no connection is
        // shared; the readers are not Sendable because a SQLite connection may not
        // be used by two threads at once, which this loop never does.
        nonisolated(unsafe) let readers = readers
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix(state: round &* 31 &+ UInt64(thread))
            let reader = readers[thread]
            for _ in 0..<count {
                reader.get(namespace: namespace, key: keys[Int(random.next() % UInt64(keys.count))])
            }
        }
    }

    private var threadRound: UInt64 = 0

    /// A round of `gets` random gets, then a round of `overwrites` random
    /// overwrites, each in its own transaction.
    func rounds(gets: Int, overwrites: Int) throws {
        get(gets)
        for _ in 0..<overwrites { try setOne() }
    }

    private var inserted = 0

    func insertOne() throws {
        try put("new-\(inserted)")
        inserted += 1
    }

    /// 90% gets, each followed by an update of the row's access time (its own
    /// transaction), and 10% overwrites.
    func mixed(_ count: Int) throws {
        for operation in 0..<count {
            if operation % 10 == 9 {
                try setOne()
                continue
            }
            let key = keys[stream.next()]
            sqlite3_bind_text(select, 1, namespace, -1, bench_sqlite_transient())
            sqlite3_bind_text(select, 2, key, -1, bench_sqlite_transient())
            precondition(sqlite3_step(select) == SQLITE_ROW, "a present key was not found")
            let length = Int(sqlite3_column_bytes(select, 0))
            let data = sqlite3_column_blob(select, 0).map { Data(bytes: $0, count: length) } ?? Data()
            sqlite3_reset(select)
            blackHole(data)
            sqlite3_bind_double(touch, 1, Date().timeIntervalSince1970)
            sqlite3_bind_text(touch, 2, namespace, -1, bench_sqlite_transient())
            sqlite3_bind_text(touch, 3, key, -1, bench_sqlite_transient())
            try step(touch)
        }
    }

    func setBatch(_ count: Int) throws {
        try step(begin)
        for _ in 0..<count { try put(keys[stream.next()]) }
        try step(commit)
    }

    func close() {
        for reader in readers { reader.close() }
        readers = []
        for statement in [insert, select, begin, commit, touch] { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
        db = nil
        try? FileManager.default.removeItem(at: directory)
    }
}

/// One more connection to `SQLiteSubject`'s database, with its lookup prepared,
/// for one thread of `SQLiteSubject.getOnThreads`.
final class SQLiteReader: RawSQLite {
    private(set) var db: OpaquePointer?
    private var select: OpaquePointer?

    init(path: String) throws {
        try check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil))
        select = try prepare("SELECT value, stored, expires FROM entries WHERE namespace = ? AND key = ?")
    }

    /// The lookup of `SQLiteSubject.get`, on this connection.
    func get(namespace: String, key: String) {
        sqlite3_bind_text(select, 1, namespace, -1, bench_sqlite_transient())
        sqlite3_bind_text(select, 2, key, -1, bench_sqlite_transient())
        precondition(sqlite3_step(select) == SQLITE_ROW, "a present key was not found")
        let length = Int(sqlite3_column_bytes(select, 0))
        let data = sqlite3_column_blob(select, 0).map { Data(bytes: $0, count: length) } ?? Data()
        let stored = sqlite3_column_double(select, 1)
        let expires: Double? = sqlite3_column_type(select, 2) == SQLITE_NULL ? nil : sqlite3_column_double(select, 2)
        sqlite3_reset(select)
        blackHole((data, stored, expires))
    }

    func close() {
        sqlite3_finalize(select)
        sqlite3_close_v2(db)
        db = nil
    }
}

/// Baseline: one file per entry, written with `write(2)` to a temporary name then
/// renamed (no fsync), read whole with `Data(contentsOf:)`.
final class FilesSubject: DiskSubject {
    let directory: URL
    let paths: [URL]
    let temporary: URL
    let value: Data
    var stream: KeyStream

    init(shape: Shape) throws {
        let directory = try makeTemporaryDirectory()
        self.directory = directory
        paths = shape.keys.map { directory.appendingPathComponent($0) }
        temporary = directory.appendingPathComponent(".tmp")
        value = Data(repeating: 0xA5, count: shape.valueSize)
        stream = KeyStream(count: 1 << 20, upperBound: shape.entries, seed: 42)
        for path in paths { try write(to: path) }
    }

    /// `open`/`write`/`close` on a temporary name, then `rename`: no fsync.
    /// (Foundation's `Data.write(to:)` is not used, so how it syncs does not matter.)
    private func write(to path: URL) throws {
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw SQLiteFailure(description: "open failed: errno \(errno)") }
        let written = value.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        _ = Foundation.close(descriptor)
        guard written == value.count else { throw SQLiteFailure(description: "write failed: errno \(errno)") }
        guard rename(temporary.path, path.path) == 0 else {
            throw SQLiteFailure(description: "rename failed: errno \(errno)")
        }
    }

    func get(_ count: Int) {
        for _ in 0..<count {
            let data = try? Data(contentsOf: paths[stream.next()])
            precondition(data != nil, "a present file was not found")
            blackHole(data)
        }
    }

    func setOne() throws {
        try write(to: paths[stream.next()])
    }

    private var inserted = 0

    func insertOne() throws {
        try write(to: directory.appendingPathComponent("new-\(inserted)"))
        inserted += 1
    }

    func setBatch(_ count: Int) throws {
        for _ in 0..<count { try setOne() }
    }

    func close() {
        try? FileManager.default.removeItem(at: directory)
    }
}
