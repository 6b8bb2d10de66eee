/// Every query the store runs, by its slot in the statement cache.
enum _Query: Int, CaseIterable {
    case begin, commit, rollback, readMeta
    case lookup, expiryOfKey, upsert, recordWrite, fileOfKey, anyFile
    case touch, restoreAccess, touchKnownEntry, dataVersion
    case deleteKey, deleteNamespace, deleteEverything, deleteIfExpired, deleteID, deleteExpired
    case fileOfKeyToDelete, filesOfNamespaceToDelete, filesOfEverythingToDelete, fileIfExpiredToDelete
    case fileOfIDToDelete, filesOfExpiredToDelete
    case keys, usage, totalUsage, namespaces, foldTotals, moveWatermark
    case leastRecentlyAccessed, trimCandidate, referencedFiles, filesOfNamespace, rowsNamingFile, sharedFiles
    case scan, list, quickCheck, wrongTotals, misplacedWatermark, watermarkRows, wrongAccessTimes, accessRowsForUnread

    private static let scannedColumns = """
        id, namespace, key, stored_at, expires_at, \(accessTime), size, typeof(value), length(value), blob,
        typeof(blob), typeof(stored_at), typeof(size), crc, typeof(crc)
        """

    /// An entry's access time as a column of a query over `entries`: `NULL` when
    /// the entry has no row in `access` (it was last accessed when stored) or a
    /// row whose time is not a number.
    private static let accessTime = """
        (SELECT CASE WHEN typeof(accessed_at) IN ('real', 'integer') THEN accessed_at END
         FROM access WHERE access.id = entries.id)
        """

    /// An access row's time as trimming orders it: a time that is not a number
    /// counts as 0, the first to be evicted.
    private static let evictionTime = """
        CASE WHEN typeof(access.accessed_at) IN ('real', 'integer') THEN access.accessed_at ELSE 0 END
        """

    /// The entries above the totals' watermark, which `namespaces` does not count
    /// yet: a range of row ids at the end of the table.
    private static let unfolded = """
        entries NOT INDEXED WHERE id > (SELECT id FROM totals_watermark)
        """

    /// Every namespace's count and bytes: its `namespaces` row plus its entries
    /// above the watermark.
    private static let totals = """
        SELECT namespace, sum(count) AS count, sum(bytes) AS bytes FROM (
            SELECT namespace, count, bytes FROM namespaces
            UNION ALL
            SELECT namespace, count(*), sum(size) FROM \(unfolded) GROUP BY namespace)
        GROUP BY namespace
        """

    var sql: String {
        switch self {
        case .begin: return "BEGIN IMMEDIATE"
        case .commit: return "COMMIT"
        case .rollback: return "ROLLBACK"
        case .readMeta: return "SELECT name, value FROM meta"
        case .lookup:
            return """
                SELECT id, stored_at, expires_at, size, value, blob, crc FROM entries
                WHERE namespace = ?1 AND key = ?2
                """
        case .expiryOfKey: return "SELECT expires_at FROM entries WHERE namespace = ?1 AND key = ?2"
        case .upsert:
            // A new entry's row id is SQLite's, the last one plus one: above the
            // totals' watermark, which never exceeds the last row id (the deletion
            // triggers of format version 7 bring it down).
            return """
                INSERT INTO entries (namespace, key, stored_at, expires_at, size, value, blob, crc)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                ON CONFLICT (namespace, key) DO UPDATE SET
                    stored_at = excluded.stored_at, expires_at = excluded.expires_at, size = excluded.size,
                    value = excluded.value, blob = excluded.blob, crc = excluded.crc
                """
        case .recordWrite:
            return """
                INSERT INTO access (id, accessed_at) SELECT id, ?3 FROM entries WHERE namespace = ?1 AND key = ?2
                ON CONFLICT (id) DO UPDATE SET accessed_at = excluded.accessed_at
                """
        case .fileOfKey: return "SELECT blob FROM entries WHERE namespace = ?1 AND key = ?2"
        case .anyFile: return "SELECT 1 FROM entries WHERE blob IS NOT NULL LIMIT 1"
        case .touch:
            // Never backwards; a time that is not a number is replaced.
            return """
                UPDATE access SET accessed_at = CASE
                    WHEN typeof(accessed_at) IN ('real', 'integer') THEN max(accessed_at, ?2) ELSE ?2 END
                WHERE id = ?1
                """
        case .restoreAccess:
            // An entry without an access row was accessed when stored: never backwards.
            return """
                INSERT OR IGNORE INTO access (id, accessed_at)
                SELECT id, CASE WHEN typeof(stored_at) IN ('real', 'integer') THEN max(stored_at, ?2) ELSE ?2 END
                FROM entries WHERE id = ?1
                """
        case .touchKnownEntry:
            // Only for an entry known to exist: a new access row at `?2`, the later of
            // its stored date and the access time `?3`, or the row it has moved to
            // `?3` as `.touch` does (never backwards; a time that is not a number is
            // replaced).
            return """
                INSERT INTO access (id, accessed_at) VALUES (?1, ?2)
                ON CONFLICT (id) DO UPDATE SET accessed_at = CASE
                    WHEN typeof(accessed_at) IN ('real', 'integer') THEN max(accessed_at, ?3) ELSE ?3 END
                """
        case .dataVersion: return "PRAGMA data_version"
        // Each deletion is a SELECT of the rows' files, then the DELETE, with the same
        // parameters, in one transaction: `DELETE … RETURNING` would need SQLite 3.35.
        case .deleteKey: return "DELETE FROM entries WHERE namespace = ?1 AND key = ?2"
        case .deleteNamespace: return "DELETE FROM entries WHERE namespace = ?1"
        case .deleteEverything: return "DELETE FROM entries"
        case .deleteIfExpired: return "DELETE FROM entries WHERE id = ?1 AND expires_at <= ?2"
        case .deleteID: return "DELETE FROM entries WHERE id = ?1"
        case .deleteExpired: return "DELETE FROM entries WHERE expires_at <= ?1"
        case .fileOfKeyToDelete: return "SELECT blob FROM entries WHERE namespace = ?1 AND key = ?2"
        case .filesOfNamespaceToDelete: return "SELECT blob FROM entries WHERE namespace = ?1"
        case .filesOfEverythingToDelete: return "SELECT blob FROM entries"
        case .fileIfExpiredToDelete: return "SELECT blob FROM entries WHERE id = ?1 AND expires_at <= ?2"
        case .fileOfIDToDelete: return "SELECT blob FROM entries WHERE id = ?1"
        case .filesOfExpiredToDelete: return "SELECT blob FROM entries WHERE expires_at <= ?1"
        case .keys:
            return """
                SELECT key FROM entries WHERE namespace = ?1 AND (expires_at IS NULL OR expires_at > ?2)
                ORDER BY key
                """
        case .usage:
            return """
                SELECT coalesce((SELECT count FROM namespaces WHERE namespace = ?1), 0) + count(*),
                       coalesce((SELECT bytes FROM namespaces WHERE namespace = ?1), 0) + coalesce(sum(size), 0)
                FROM \(Self.unfolded) AND namespace = ?1
                """
        case .totalUsage:
            return """
                SELECT (SELECT coalesce(sum(count), 0) FROM namespaces) + count(*),
                       (SELECT coalesce(sum(bytes), 0) FROM namespaces) + coalesce(sum(size), 0)
                FROM \(Self.unfolded)
                """
        case .namespaces: return "\(Self.totals) ORDER BY namespace"
        case .foldTotals:
            return """
                INSERT INTO namespaces (namespace, count, bytes)
                SELECT namespace, count(*), sum(size) FROM \(Self.unfolded) GROUP BY namespace
                ON CONFLICT (namespace) DO UPDATE SET count = count + excluded.count, bytes = bytes + excluded.bytes
                """
        case .moveWatermark:
            return """
                UPDATE totals_watermark SET id = (SELECT max(id) FROM entries)
                WHERE id < (SELECT max(id) FROM entries)
                """
        case .leastRecentlyAccessed:
            return "SELECT id, \(Self.evictionTime) AS t FROM access ORDER BY t, id LIMIT ?1"
        case .trimCandidate:
            return """
                SELECT e.size, e.namespace, e.key FROM access JOIN entries AS e ON e.id = access.id
                WHERE access.id = ?1 AND \(Self.evictionTime) = ?2
                """
        case .referencedFiles: return "SELECT blob FROM entries WHERE blob IS NOT NULL"
        case .filesOfNamespace: return "SELECT blob FROM entries WHERE namespace = ?1 AND blob IS NOT NULL"
        // Both read only the index `entries_with_files`: one probe, and one pass over it.
        case .rowsNamingFile: return "SELECT count(*) FROM (SELECT 1 FROM entries WHERE blob = ?1 LIMIT 2)"
        case .sharedFiles:
            return "SELECT blob, count(*) FROM entries WHERE blob IS NOT NULL GROUP BY blob HAVING count(*) > 1"
        case .scan: return "SELECT \(Self.scannedColumns), value FROM entries WHERE id > ?1 ORDER BY id LIMIT ?2"
        case .list:
            return """
                SELECT \(Self.scannedColumns) FROM entries WHERE ?1 IS NULL OR namespace = CAST(?1 AS BLOB)
                ORDER BY namespace, key LIMIT ?2
                """
        case .quickCheck: return "PRAGMA quick_check"
        case .accessRowsForUnread:
            // The ids come from a pass over the key index (which holds them), so
            // only the rows of unread entries are read for their stored dates.
            return """
                INSERT INTO access (id, accessed_at)
                SELECT id, CASE WHEN typeof(stored_at) IN ('real', 'integer') THEN stored_at ELSE 0 END
                FROM entries WHERE id IN (
                    SELECT id FROM entries INDEXED BY entries_by_key
                    WHERE NOT EXISTS (SELECT 1 FROM access WHERE access.id = entries.id))
                """
        case .wrongTotals:
            // Namespaces with totals (their `namespaces` row and the rows above the
            // watermark), compared with their entries; then namespaces with entries
            // but no totals. Two LEFT JOINs rather than a FULL OUTER JOIN, which
            // SQLite has only since 3.39.
            return """
                SELECT n.namespace, n.count, n.bytes, coalesce(e.count, 0), coalesce(e.bytes, 0)
                FROM (\(Self.totals)) AS n
                LEFT JOIN (SELECT namespace, count(*) AS count, total(size) AS bytes FROM entries GROUP BY namespace) AS e
                    ON e.namespace = n.namespace
                WHERE n.count IS NOT coalesce(e.count, 0) OR n.bytes IS NOT coalesce(e.bytes, 0)
                UNION ALL
                SELECT e.namespace, 0, 0, e.count, e.bytes
                FROM (SELECT namespace, count(*) AS count, total(size) AS bytes FROM entries GROUP BY namespace) AS e
                LEFT JOIN (\(Self.totals)) AS n ON n.namespace = e.namespace
                WHERE n.namespace IS NULL
                """
        case .misplacedWatermark:
            // The watermark and the last row id when it is above it (format 7 keeps
            // it at or below; above, new rows would land under it uncounted).
            return """
                SELECT id, \(_DiskIndex.lastRowIDSQL) FROM totals_watermark WHERE id > \(_DiskIndex.lastRowIDSQL)
                """
        case .watermarkRows: return "SELECT count(*) FROM totals_watermark"
        case .wrongAccessTimes:
            return """
                SELECT (SELECT count(*) FROM access WHERE NOT EXISTS (SELECT 1 FROM entries WHERE entries.id = access.id)),
                       (SELECT count(*) FROM access WHERE typeof(accessed_at) NOT IN ('real', 'integer'))
                """
        }
    }
}
