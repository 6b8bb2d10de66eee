import Foundation

/// Whole-store reads for ``DiskStore/verify(repairing:progress:)`` and listings:
/// metadata of many rows at once, SQLite's integrity check, the totals.
extension _DiskIndex {
    /// One entry as ``DiskStore/verify(repairing:progress:)`` and listings see it:
    /// metadata only, never the value.
    struct ScannedRow {
        var id: Int64
        var namespace: String
        var key: String
        var storedAt: Double
        var expiresAt: Double?
        var accessedAt: Double
        var size: Int
        var inlineLength: Int?
        var blob: String?
        /// The stored checksum, when the row has a valid one.
        var crc: UInt32?
        /// What is wrong with the row, when something is.
        var problem: String?
        /// Whether the inline value does not match the stored checksum (only
        /// ``_DiskIndex/scan(after:limit:)`` reads values and sets this).
        var checksumMismatch = false
    }

    /// Up to `limit` rows with ids greater than `id`, in id order.
    func scan(after id: Int64, limit: Int) throws(HoardError) -> [ScannedRow] {
        let statement = try self.statement(.scan)
        statement.bind(id, at: 1)
        statement.bind(Int64(limit), at: 2)
        defer { statement.reset() }
        var rows: [ScannedRow] = []
        while try statement.step() {
            var row = Self.readScanned(statement)
            if row.problem == nil, row.inlineLength != nil, let crc = row.crc,
                Self.checksum(statement.bytes(at: 15), namespace: row.namespace, key: row.key) != crc
            {
                row.checksumMismatch = true
            }
            rows.append(row)
        }
        return rows
    }

    /// Up to `limit` rows of `namespace` (every namespace when `nil`), ordered by
    /// namespace and key.
    func list(namespace: String?, limit: Int) throws(HoardError) -> [ScannedRow] {
        let statement = try self.statement(.list)
        if let namespace { try statement.bind(text: namespace, at: 1) } else { statement.bindNull(at: 1) }
        statement.bind(Int64(limit), at: 2)
        defer { statement.reset() }
        var rows: [ScannedRow] = []
        while try statement.step() {
            rows.append(Self.readScanned(statement))
        }
        return rows
    }

    /// Reads `id, namespace, key, stored_at, expires_at, accessed_at (or NULL),
    /// size, typeof(value), length(value), blob, typeof(blob), typeof(stored_at),
    /// typeof(size), crc, typeof(crc)`. A missing access time reads as the stored
    /// time (the entry has not been read since it was written).
    private static func readScanned(_ s: _SQLiteConnection.Statement) -> ScannedRow {
        let namespace = s.string(at: 1)
        let key = s.string(at: 2)
        var row = ScannedRow(
            id: s.int64(at: 0),
            namespace: namespace ?? String(decoding: s.bytes(at: 1), as: UTF8.self),
            key: key ?? String(decoding: s.bytes(at: 2), as: UTF8.self),
            storedAt: s.double(at: 3), expiresAt: s.type(at: 4) == .null ? nil : s.double(at: 4),
            accessedAt: s.type(at: 5) == .null ? s.double(at: 3) : s.double(at: 5), size: Int(s.int64(at: 6)),
            inlineLength: nil, blob: nil, problem: nil)
        let valueType = s.string(at: 7)
        let blobType = s.string(at: 10)
        if namespace == nil || key == nil {
            row.problem = "its namespace or key is not valid UTF-8"
        } else if !["real", "integer"].contains(s.string(at: 11)) {
            row.problem = "its stored date is not a number"
        } else if s.string(at: 12) != "integer" || row.size < 0 {
            row.problem = "its size is not a non-negative integer"
        } else if s.type(at: 4) == .text || s.type(at: 4) == .blob {
            row.problem = "its expiry date is not a number"
        }
        if s.string(at: 14) == "integer", let crc = UInt32(exactly: s.int64(at: 13)) {
            row.crc = crc
        } else if row.problem == nil {
            row.problem = "it has no valid checksum"
        }
        switch (valueType, blobType) {
        case ("blob", "null"):
            row.inlineLength = Int(s.int64(at: 8))
            if row.problem == nil, row.inlineLength != row.size {
                row.problem = "its value has \(row.inlineLength ?? 0) bytes, its size says \(row.size)"
            }
        case ("null", "text"):
            let name = s.string(at: 9) ?? ""
            if _BlobFiles.isValidName(name) {
                row.blob = name
            } else if row.problem == nil {
                row.problem = "it refers to a value file by an invalid name"
            }
        case ("null", "null"):
            if row.problem == nil { row.problem = "it has neither an inline value nor a value file" }
        default:
            if row.problem == nil { row.problem = "its value columns have the wrong types" }
        }
        return row
    }

    /// The problems in what ``quickCheck()`` returns, one line each: SQLite gives
    /// the problems it finds in a table's pages as one message of several lines,
    /// headed by `*** in database main ***`; that heading is dropped, and so are
    /// empty lines.
    static func integrityProblems(_ messages: [String]) -> [String] {
        messages.flatMap { message in
            message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { line in !line.isEmpty && !(line.hasPrefix("*** in database ") && line.hasSuffix(" ***")) }
        }
    }

    /// SQLite's `quick_check`: an empty array when the database is sound.
    func quickCheck() throws(HoardError) -> [String] {
        let statement = try self.statement(.quickCheck)
        defer { statement.reset() }
        var messages: [String] = []
        while try statement.step() {
            let message = statement.string(at: 0) ?? "?"
            if message != "ok" { messages.append(message) }
        }
        return messages
    }

    /// Namespaces whose recorded totals differ from their entries: name, recorded,
    /// actual.
    func wrongTotals() throws(HoardError) -> [(String, StoreUsage, StoreUsage)] {
        let statement = try self.statement(.wrongTotals)
        defer { statement.reset() }
        var result: [(String, StoreUsage, StoreUsage)] = []
        while try statement.step() {
            let name = statement.string(at: 0) ?? String(decoding: statement.bytes(at: 0), as: UTF8.self)
            result.append(
                (
                    name,
                    StoreUsage(count: Int(statement.int64(at: 1)), bytes: Int(statement.int64(at: 2))),
                    StoreUsage(count: Int(statement.int64(at: 3)), bytes: Int(statement.int64(at: 4)))
                ))
        }
        return result
    }

    /// Every value file that more than one row names, with how many rows name it:
    /// empty in a sound store, where each write names a file of its own.
    ///
    /// - Complexity: one pass over `entries_with_files`, the index of file names:
    ///   O(entries with files).
    func sharedFiles() throws(HoardError) -> [String: Int] {
        let statement = try self.statement(.sharedFiles)
        defer { statement.reset() }
        var result: [String: Int] = [:]
        while try statement.step() {
            if let name = statement.string(at: 0) { result[name] = Int(statement.int64(at: 1)) }
        }
        return result
    }

    /// The totals' watermark and the last row id of `entries` (0 when empty), when
    /// the watermark is above it; `nil` in a sound store. Rows written next would
    /// get ids at or below it and go uncounted.
    func misplacedWatermark() throws(HoardError) -> (watermark: Int64, lastRow: Int64)? {
        let statement = try self.statement(.misplacedWatermark)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(at: 0), statement.int64(at: 1))
    }

    /// How many rows `totals_watermark` holds: one in a sound store. Without one,
    /// the totals count no new entry and no removal of a counted one; with more,
    /// the triggers may move them apart.
    func watermarkRows() throws(HoardError) -> Int {
        let statement = try self.statement(.watermarkRows)
        defer { statement.reset() }
        guard try statement.step() else { return 0 }
        return Int(statement.int64(at: 0))
    }

    /// How the access order disagrees with the entries: access times without an
    /// entry, and times that are not numbers. Both zero in a sound store (an entry
    /// without an access time is sound: it was last accessed when stored).
    func wrongAccessTimes() throws(HoardError) -> (orphaned: Int, malformed: Int) {
        let statement = try self.statement(.wrongAccessTimes)
        defer { statement.reset() }
        guard try statement.step() else { return (0, 0) }
        return (Int(statement.int64(at: 0)), Int(statement.int64(at: 1)))
    }

    /// Rebuilds the access order where ``wrongAccessTimes()`` finds it wrong: drops
    /// access times without an entry or that are not numbers (such an entry then
    /// reads as accessed when stored).
    func repairAccessTimes() throws(HoardError) {
        try connection.execute(
            """
            DELETE FROM access WHERE NOT EXISTS (SELECT 1 FROM entries WHERE entries.id = access.id)
                OR typeof(accessed_at) NOT IN ('real', 'integer');
            """)
    }

    /// Gives every entry without an access row one at its stored date (the time it
    /// reads as accessed), so that ``leastRecentlyAccessed(limit:)`` sees it; a
    /// stored date that is not a number becomes 0, the first to be evicted. Call
    /// inside a transaction, before trimming.
    ///
    /// - Complexity: one pass over the key index (not the values), plus one row
    ///   per entry never read or rewritten since the last trim.
    func giveAccessRowsToUnreadEntries() throws(HoardError) {
        try run(.accessRowsForUnread)
    }

    /// Rebuilds the `namespaces` totals from the entries, all of them, and the
    /// watermark as one row at the last row id (0 in an empty table), whatever
    /// `totals_watermark` held.
    func recomputeTotals() throws(HoardError) {
        try connection.execute(
            """
            DELETE FROM namespaces;
            INSERT INTO namespaces (namespace, count, bytes)
                SELECT namespace, count(*), sum(size) FROM entries GROUP BY namespace;
            DELETE FROM totals_watermark;
            INSERT INTO totals_watermark (id) SELECT \(Self.lastRowIDSQL);
            """)
    }
}
