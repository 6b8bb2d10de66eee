import Foundation

extension DiskStore {
    /// How far a long ``trim(toBytes:count:progress:)`` or
    /// ``verify(repairing:progress:)`` has come.
    public struct Progress: Sendable, Hashable {
        /// Units done: entries checked, or entries evicted.
        public var completed: Int
        /// Units expected in all (an estimate, when other writers are at work).
        public var total: Int
    }

    /// Removes every expired entry, in every namespace, and their files; on a full
    /// disk, as ``trim(toBytes:count:progress:)`` does.
    ///
    /// - Returns: How many entries were removed; reported as
    ///   ``DiskStoreEvent/expired(count:)`` when more than zero.
    /// - Complexity: O(expired entries), through the index on expiry dates.
    @discardableResult
    public func removeExpired() throws(HoardError) -> Int {
        let now = clock.now().timeIntervalSince1970
        var effects = _DiskEffects()
        let count = try freeingSpace(
            releasing: { () throws(HoardError) in [] },
            { () throws(HoardError) -> Int in
                try state.withLock { (state) throws(HoardError) -> Int in
                    let index = try state.open()
                    let (count, files) = try index.transaction { () throws(HoardError) in
                        try index.deleteExpired(now: now)
                    }
                    effects.filesToRemove += files
                    return count
                }
            })
        if count > 0 { effects.events.append(.expired(count: count)) }
        finish(effects)
        return count
    }

    /// Evicts least-recently-accessed entries until the values total at most
    /// `maxBytes`.
    ///
    /// - Returns: How many entries were evicted.
    @discardableResult
    public func trim(toBytes maxBytes: Int) throws(HoardError) -> Int {
        try trim(toBytes: maxBytes, count: nil, progress: nil)
    }

    /// Evicts least-recently-accessed entries until the values total at most
    /// `maxBytes` and at most `maxCount` entries remain.
    ///
    /// Pending access times are written first, so the order reflects every read.
    /// Works on a full disk, as `removeValue(for:in:)` does: a step that fails
    /// with ``HoardError/Code/storageFull`` releases the store's reserve file,
    /// checkpoints the index's log and is tried once more.
    /// The work is done in transactions of a few hundred entries; other callers
    /// and processes get their turn between them, and `progress` is called after
    /// each one (outside every lock). The access order is read once, for as many
    /// entries as the trim is expected to evict; an entry read, written or removed
    /// between two transactions is passed over.
    ///
    /// - Parameters:
    ///   - maxBytes: The most value bytes to keep, or `nil` for no byte target.
    ///   - maxCount: The most entries to keep, or `nil` for no count target.
    ///   - progress: Called after each transaction with entries evicted so far and
    ///     an estimate of the total.
    /// - Returns: How many entries were evicted; reported as
    ///   ``DiskStoreEvent/evicted(count:bytes:)`` when more than zero.
    /// - Complexity: O(entries × log evicted entries) to read the access order
    ///   (one pass, or more when the entries evicted turn out smaller than
    ///   expected), plus O(evicted entries × log entries).
    @discardableResult
    public func trim(
        toBytes maxBytes: Int?, count maxCount: Int? = nil, progress: ((Progress) -> Void)? = nil
    ) throws(HoardError) -> Int {
        let maxBytes = max(0, maxBytes ?? .max)
        let maxCount = max(0, maxCount ?? .max)
        var evicted = 0
        var bytes = 0
        var estimate: Int?
        var queue = _TrimQueue()
        defer {
            if evicted > 0 { observers.publish([.evicted(count: evicted, bytes: bytes)]) }
        }
        while true {
            var effects = _DiskEffects()
            let step = try freeingSpace(
                releasing: { () throws(HoardError) in [] },
                { () throws(HoardError) in
                    try state.withLock { (state) throws(HoardError) in
                        try state.trimStep(
                            toBytes: maxBytes, count: maxCount, queue: &queue, effects: &effects)
                    }
                })
            finish(effects)
            evicted += step.evicted
            bytes += step.bytes
            if estimate == nil {
                // Entries over the count target, or an average-size guess for bytes.
                let left = step.usage
                let average = left.count > 0 ? max(1, left.bytes / left.count) : 1
                let overCount = max(0, left.count - maxCount)
                let overBytes = maxBytes == .max ? 0 : max(0, left.bytes - maxBytes) / average
                estimate = step.evicted + max(overCount, overBytes)
            }
            progress?(Progress(completed: evicted, total: max(evicted, estimate ?? evicted)))
            if step.done { break }
        }
        return evicted
    }

    /// Checks every entry and reports each damaged one with what is wrong; with
    /// `repairing`, removes what is damaged as well.
    ///
    /// - Returns: What was found.
    public func verify(repairing: Bool) throws(HoardError) -> VerificationReport {
        try verify(repairing: repairing, progress: nil)
    }

    /// Checks the whole store and reports every problem it finds.
    ///
    /// It runs SQLite's `quick_check` on the index; checks every row's shape (dates
    /// and size of the right types, a value or a file but not both, a file name of
    /// the exact shape the store writes, a checksum); checks that every value file
    /// exists with the size its row records; reads every value, inline and in its
    /// file, and checks it against its CRC-32C; finds rows that name a value file
    /// other rows name too (``StoreDamage/Reason/sharedFile``, for each row the file
    /// does not belong to); compares the per-namespace totals with the entries; and
    /// lists files in `blobs/` that no entry refers to. It does not decode values,
    /// so it cannot tell which type they decode as.
    ///
    /// Each problem SQLite's check reports is one ``StoreDamage`` with a one-line
    /// detail (SQLite gives several problems of a table as the lines of one
    /// message). Temporary files an interrupted write left are reported as
    /// ``StoreDamage/Reason/temporaryFile``, which is not damage: a report with
    /// nothing else ``VerificationReport/isHealthy``.
    ///
    /// A value file that exists but cannot be read (permissions, an I/O error) is
    /// reported as ``StoreDamage/Reason/unreadableFile`` and never removed.
    ///
    /// The store stays in use while it is checked. A value file found missing or
    /// not holding its entry's value is reported only if the entry still names it
    /// afterwards: an entry rewritten or removed meanwhile, by this or another
    /// instance or process, released its file, which is no damage.
    ///
    /// With `repairing`, damaged entries are removed (after checking again under
    /// the write lock that they are still damaged; a value file goes with the last
    /// row that names it, so a file a damaged row shares stays with the entry it
    /// belongs to), the totals are recomputed, and orphaned and temporary files
    /// older than ten minutes are deleted (younger ones may belong to a write in
    /// flight in another process; opening the store while no other instance has it
    /// open deletes them whatever their age). An orphan that cannot be deleted
    /// (a directory, which is never entered) is left, said so in its report, and
    /// reported as ``DiskStoreEvent/failed(operation:namespace:key:error:)``; the
    /// check goes on. Damage SQLite finds in the index itself is reported
    /// (``StoreDamage/Reason/damagedIndex``) but cannot be repaired here; as a
    /// store holds only cached data, deleting its directory is the repair.
    ///
    /// - Parameters:
    ///   - repairing: Whether to remove what is damaged.
    ///   - progress: Called every few hundred entries, outside every lock.
    /// - Returns: Entries checked and every problem, each with its namespace and
    ///   key when it concerns one entry.
    /// - Complexity: O(entries + files + bytes stored).
    public func verify(repairing: Bool, progress: ((Progress) -> Void)?) throws(HoardError) -> VerificationReport {
        var report = VerificationReport(repaired: repairing)
        func indexDamage(_ what: String, _ error: HoardError) {
            report.damage.append(
                StoreDamage(
                    namespace: nil, key: nil, reason: .damagedIndex, detail: "\(what): \(error.message)"))
        }
        do {
            let messages = try state.withLock { (state) throws(HoardError) in try state.open().quickCheck() }
            for message in _DiskIndex.integrityProblems(messages) {
                report.damage.append(
                    StoreDamage(
                        namespace: nil, key: nil, reason: .damagedIndex, detail: "SQLite's integrity check: \(message)")
                )
            }
        } catch  where error.code == .storeDamaged {
            indexDamage("SQLite's integrity check could not run", error)
        }
        let total = (try? state.withLock { (state) throws(HoardError) in try state.open().totalUsage().count }) ?? 0
        // Files more than one row names (a damaged index), found before the rows are
        // read: a file written later has a fresh name, never one of these.
        let shared: [String: Int]
        do {
            shared = try state.withLock { (state) throws(HoardError) in try state.open().sharedFiles() }
        } catch  where error.code == .storeDamaged {
            indexDamage("the value files' names cannot be read", error)
            shared = [:]
        }

        var lastID: Int64 = 0
        let chunk = 500
        var readable = true
        while true {
            let rows: [_DiskIndex.ScannedRow]
            do {
                rows = try state.withLock { (state) throws(HoardError) in
                    try state.open().scan(after: lastID, limit: chunk)
                }
            } catch  where error.code == .storeDamaged {
                indexDamage("the entries after row \(lastID) cannot be read", error)
                readable = false
                break
            }
            guard let last = rows.last else { break }
            lastID = last.id
            configuration.verifyGate?()
            for row in rows {
                report.entriesChecked += 1
                guard var damage = try check(row, sharing: shared) else { continue }
                // Damage found in a value file read after its row: only while the row
                // still names the file (an overwrite or a removal since deleted it).
                if row.problem == nil, row.blob != nil, try !namesFile(row) { continue }
                // A file that cannot be read is not known to be damaged: never removed.
                if repairing, damage.reason != .unreadableFile {
                    damage.isRepaired = try repair(row, damage: damage)
                }
                report.damage.append(damage)
            }
            progress?(Progress(completed: report.entriesChecked, total: max(total, report.entriesChecked)))
            if rows.count < chunk { break }
        }
        // Totals and orphans are judged against the entries: only when all were read.
        guard readable else { return report }

        let wrongTotals: [(String, StoreUsage, StoreUsage)]
        let misplacedWatermark: (watermark: Int64, lastRow: Int64)?
        let watermarkRows: Int
        do {
            (wrongTotals, misplacedWatermark, watermarkRows) = try state.withLock { (state) throws(HoardError) in
                let index = try state.open()
                return (try index.wrongTotals(), try index.misplacedWatermark(), try index.watermarkRows())
            }
        } catch  where error.code == .storeDamaged {
            indexDamage("the namespace totals cannot be read", error)
            return report
        }
        if repairing, !wrongTotals.isEmpty || misplacedWatermark != nil || watermarkRows != 1 {
            try state.withLock { (state) throws(HoardError) in
                let index = try state.open()
                try index.transaction { () throws(HoardError) in try index.recomputeTotals() }
            }
        }
        for (namespace, recorded, actual) in wrongTotals {
            report.damage.append(
                StoreDamage(
                    namespace: namespace, key: nil, reason: .wrongTotals,
                    detail: "the namespace's totals say \(recorded), its entries add up to \(actual)",
                    isRepaired: repairing))
        }
        if let misplacedWatermark {
            report.damage.append(
                StoreDamage(
                    namespace: nil, key: nil, reason: .wrongTotals,
                    detail:
                        "the totals count rows up to id \(misplacedWatermark.watermark), above the last row (\(misplacedWatermark.lastRow)): entries written next would not be counted",
                    isRepaired: repairing))
        }
        if watermarkRows != 1 {
            report.damage.append(
                StoreDamage(
                    namespace: nil, key: nil, reason: .wrongTotals,
                    detail:
                        "the row up to which the totals count is in \(watermarkRows) copies, not one: the totals do not follow the entries written and removed next",
                    isRepaired: repairing))
        }

        let accessTimes: (orphaned: Int, malformed: Int)
        do {
            accessTimes = try state.withLock { (state) throws(HoardError) in try state.open().wrongAccessTimes() }
        } catch  where error.code == .storeDamaged {
            indexDamage("the access times cannot be read", error)
            return report
        }
        if accessTimes != (0, 0) {
            if repairing {
                try state.withLock { (state) throws(HoardError) in
                    let index = try state.open()
                    try index.transaction { () throws(HoardError) in try index.repairAccessTimes() }
                }
            }
            report.damage.append(
                StoreDamage(
                    namespace: nil, key: nil, reason: .wrongAccessTimes,
                    detail:
                        "the access order has \(accessTimes.orphaned) access times without an entry, "
                        + "and \(accessTimes.malformed) that are not numbers",
                    isRepaired: repairing))
        }

        report.damage += try orphans(deletingOlderThan: repairing ? 600 : nil)
        return report
    }

    /// What is wrong with a scanned row, or `nil`. A row whose value file other rows
    /// name too (in `shared`, with how many rows name it) and that does not hold
    /// this entry's value is ``StoreDamage/Reason/sharedFile``.
    ///
    /// - Throws: When a value file exists but cannot be read.
    private func check(_ row: _DiskIndex.ScannedRow, sharing shared: [String: Int] = [:]) throws(HoardError)
        -> StoreDamage?
    {
        if let problem = row.problem {
            return StoreDamage(
                namespace: row.namespace, key: row.key, reason: .malformedRow,
                detail: "the entry's row is malformed: \(problem)")
        }
        if row.checksumMismatch {
            return StoreDamage(
                namespace: row.namespace, key: row.key, reason: .checksumMismatch,
                detail: "the entry's \(row.size) inline bytes do not match their checksum")
        }
        guard let name = row.blob, let crc = row.crc else { return nil }
        let read: _BlobFiles.ReadResult
        do {
            read = try blobs.read(name, size: row.size)
        } catch {
            return StoreDamage(
                namespace: row.namespace, key: row.key, reason: .unreadableFile,
                detail: "the value file blobs/\(name) cannot be read (\(error.message)); it was left as it is")
        }
        let found = read.damage(name: name, size: row.size, crc: crc, namespace: row.namespace, key: row.key)
        guard var damage = found, let rows = shared[name] else { return found }
        damage.reason = .sharedFile
        damage.detail =
            "the index names blobs/\(name) as the value file of \(rows) entries (it is damaged), and the file does "
            + "not hold this one's: \(damage.detail)"
        return damage
    }

    /// Whether, under the write lock, the entry of a scanned row still names the
    /// value file the row named. A file is deleted once the change that released
    /// it has committed, and never written again under its name: when the entry
    /// was rewritten or removed since the row was read, what a read of the file
    /// found says nothing about the entry.
    private func namesFile(_ row: _DiskIndex.ScannedRow) throws(HoardError) -> Bool {
        try state.withLock { (state) throws(HoardError) -> Bool in
            guard let again = try state.open().scan(after: row.id - 1, limit: 1).first else { return false }
            return again.id == row.id && again.blob == row.blob
        }
    }

    /// Removes a damaged row if, under the write lock, it is still the same and
    /// still damaged.
    ///
    /// - Returns: Whether the damage is gone: the row removed, or found removed,
    ///   rewritten or no longer damaged meanwhile; `false` when its file can no
    ///   longer be read, so that it is not known to be damaged and stays.
    private func repair(_ row: _DiskIndex.ScannedRow, damage: StoreDamage) throws(HoardError) -> Bool {
        var effects = _DiskEffects()
        let repaired = try state.withLock { (state) throws(HoardError) -> Bool in
            let index = try state.open()
            return try index.transaction { () throws(HoardError) -> Bool in
                guard let again = try index.scan(after: row.id - 1, limit: 1).first, again.id == row.id,
                    again.blob == row.blob, let still = try check(again)
                else { return true }
                guard still.reason != .unreadableFile else { return false }
                // No file when another row names it too: it may hold that entry's value.
                if let file = try index.delete(id: row.id).file { effects.filesToRemove.append(file) }
                return true
            }
        }
        finish(effects)
        return repaired
    }

    /// Temporary files and value files no entry refers to, deleting those older
    /// than `age` seconds when given. A failed deletion is reported as an event.
    private func orphans(deletingOlderThan age: TimeInterval?) throws(HoardError) -> [StoreDamage] {
        // Names first, then the references: a file written and committed between
        // the two is referenced; one written but not yet committed shows up (and
        // is young, so never deleted).
        let names = try blobs.allNames()
        let referenced = try state.withLock { (state) throws(HoardError) in try state.open().referencedFiles() }
        var damage: [StoreDamage] = []
        var failures: [DiskStoreEvent] = []
        let now = Date()
        for name in names {
            let temporary = _BlobFiles.isTemporaryName(name)
            guard temporary || (_BlobFiles.isValidName(name) && !referenced.contains(name)) else { continue }
            let path = blobs.path(of: name)
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date
            let old = modified.map { now.timeIntervalSince($0) > (age ?? .infinity) } ?? false
            var detail =
                temporary
                ? "blobs/\(name) is a temporary file an interrupted write left; it holds no entry's value"
                : "blobs/\(name) is a value file no entry refers to"
            var deleted = false
            if let age {
                if old {
                    do {
                        try blobs.remove(name)
                        detail += "; deleted"
                        deleted = true
                    } catch {
                        detail += "; it could not be deleted (\(error.message))"
                        failures.append(
                            .failed(operation: "delete an orphaned file", namespace: nil, key: nil, error: error))
                    }
                } else {
                    detail += "; kept, as it is less than \(Int(age)) seconds old and may belong to a write in flight"
                }
            }
            damage.append(
                StoreDamage(
                    namespace: nil, key: nil, reason: temporary ? .temporaryFile : .orphanedFile, detail: detail,
                    isRepaired: deleted))
        }
        observers.publish(failures)
        return damage
    }

    // MARK: Inspecting

    /// One entry as ``entries(in:limit:)`` lists it: metadata, not the value.
    public struct EntryInfo: Sendable, Hashable {
        /// The entry's namespace.
        public var namespace: String
        /// The entry's key.
        public var key: String
        /// The value's size in bytes.
        public var size: Int
        /// When the value was stored.
        public var storedAt: Date
        /// When the entry expires, or `nil` for never.
        public var expiresAt: Date?
        /// When the entry was last accessed, as far as the index knows: reads are
        /// recorded in batches, at ``Configuration/accessTimeResolution``.
        public var accessedAt: Date
        /// Whether the value is in its own file in `blobs/` (`false`: inline in the
        /// index).
        public var isInFile: Bool
    }

    /// The live entry for `key` in `namespace`, read without changing the store.
    ///
    /// Unlike ``entry(for:in:)``, a hit records no access (eviction order stays as
    /// it was), and an expired or damaged entry is a miss that stays where it is,
    /// for ``entries(in:limit:)`` to list and ``verify(repairing:progress:)`` to
    /// report. For tools that inspect a store (`hoard get`).
    ///
    /// - Throws: ``HoardError`` when the index or a value file cannot be read.
    /// - Complexity: One indexed lookup, and the value file's read for a large
    ///   value.
    package func inspectEntry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        let key = _normalized(key)
        let namespace = _normalized(namespace)
        // A writer may replace the value file between the lookup and the read (and
        // delete the one the row named): the row is looked up again then.
        for _ in 0..<8 {
            let row = try readers.lookup(namespace: namespace, key: key)
            let now = clock.now().timeIntervalSince1970
            // An expired or damaged row (nil) is a miss left where it is.
            switch found(row, now: now, epoch: accesses.epoch, recordsAccess: false) ?? .miss {
            case .miss:
                return nil
            case .retry:
                continue
            case .inline(let entry):
                return entry
            case .file(let name, let size, let storedAt, let expiresAt, let crc):
                let read = try blobs.read(name, size: size)
                if read.damage(name: name, size: size, crc: crc, namespace: namespace, key: key) == nil,
                    case .data(let data) = read
                {
                    return StoredEntry(
                        data: data, storedAt: Date(timeIntervalSince1970: storedAt),
                        expiresAt: expiresAt.map { Date(timeIntervalSince1970: $0) })
                }
            }
        }
        return nil
    }

    /// Metadata of up to `limit` entries of `namespace` (of every namespace when
    /// `nil`), ordered by namespace and key, expired entries included.
    ///
    /// Runs on the store's write connection: it waits for a write in progress, and
    /// this instance's writes wait for it.
    ///
    /// - Complexity: O(entries).
    public func entries(in namespace: String? = nil, limit: Int = .max) throws(HoardError) -> [EntryInfo] {
        let namespace = namespace.map(_normalized)
        let rows = try state.withLock { (state) throws(HoardError) in
            try state.open().list(namespace: namespace, limit: limit)
        }
        return rows.map { row in
            EntryInfo(
                namespace: row.namespace, key: row.key, size: row.size,
                storedAt: Date(timeIntervalSince1970: row.storedAt),
                expiresAt: row.expiresAt.map { Date(timeIntervalSince1970: $0) },
                accessedAt: Date(timeIntervalSince1970: row.accessedAt), isInFile: row.blob != nil)
        }
    }

    /// Every namespace with its entries and value bytes.
    ///
    /// Runs on the store's write connection: it waits for a write in progress, and
    /// this instance's writes wait for it.
    ///
    /// - Complexity: O(namespaces).
    public func namespaces() throws(HoardError) -> [String: StoreUsage] {
        let list = try state.withLock { (state) throws(HoardError) in try state.open().namespaces() }
        return Dictionary(
            list, uniquingKeysWith: { a, b in StoreUsage(count: a.count + b.count, bytes: a.bytes + b.bytes) })
    }

    /// Writes the access times recorded in memory now, in one transaction, instead
    /// of waiting for ``Configuration/accessFlushCount`` or
    /// ``Configuration/accessFlushInterval``. Blocks until the store's write
    /// connection is free. A failure is reported as
    /// ``DiskStoreEvent/failed(operation:namespace:key:error:)``, not thrown.
    public func flushAccessTimes() {
        var effects = _DiskEffects()
        state.withLock { $0.flushAccesses(effects: &effects) }
        finish(effects)
    }
}
