import Foundation

/// What a critical section of a ``DiskStore`` leaves for after the lock: events to
/// deliver and value files to delete (files of replaced or removed entries, deleted
/// only after the change that released them committed).
struct _DiskEffects {
    var events: [DiskStoreEvent] = []
    var filesToRemove: [String] = []
}

/// One write of a batch, with its value already placed: inline bytes, or the name
/// of the file already written.
enum _PreparedWrite {
    case set(
        namespace: String, key: String, inline: Data?, size: Int, file: String?, storedAt: Double, expiresAt: Double?,
        crc: UInt32)
    case remove(namespace: String, key: String)
    case removeAll(namespace: String)

    /// Whether this write removes entries (and so may free space).
    var removes: Bool {
        if case .set = self { return false }
        return true
    }

    /// The names of the entries a batch writes: eviction after the batch spares them.
    static func names(in batch: [_PreparedWrite]) -> Set<_EntryName> {
        var names = Set<_EntryName>(minimumCapacity: batch.count)
        for case .set(let namespace, let key, _, _, _, _, _, _) in batch {
            names.insert(_EntryName(namespace: namespace, key: key))
        }
        return names
    }
}

/// An entry's name in the index (both strings normalised), as eviction compares them.
struct _EntryName: Hashable {
    var namespace: String
    var key: String
}

/// Everything of a ``DiskStore`` that lives behind its writer lock: the write
/// connection to the index, and the limits it enforces.
///
/// Every method runs with the lock held and never calls user code; events and file
/// deletions are collected in a ``_DiskEffects`` for after the lock.
struct _DiskState {
    var index: _DiskIndex?
    /// The access times reads recorded and no flush has written yet.
    let accesses: _DiskAccessLog
    let byteLimit: Int
    let countLimit: Int
    let byteLowWater: Int
    let countLowWater: Int
    /// The write connection's `PRAGMA data_version` when a flush last read it
    /// (`nil` before the first): a flush that finds another value knows another
    /// connection committed meanwhile.
    private var seenDataVersion: Int64?

    init(index: _DiskIndex, accesses: _DiskAccessLog, configuration: DiskStore.Configuration) {
        self.index = index
        self.accesses = accesses
        index.transactionEnded = { [accesses] in accesses.entriesMayHaveChanged() }
        byteLimit = configuration.byteLimit ?? .max
        countLimit = configuration.countLimit ?? .max
        byteLowWater = configuration.byteLowWater
        countLowWater = configuration.countLowWater
        if isLimited { index.writesPerFold = _DiskIndex.limitedFoldInterval }
    }

    /// The open index, or an error once the store is closed.
    func open() throws(HoardError) -> _DiskIndex {
        guard let index else { throw HoardError(.ioFailed, "the disk store is closed") }
        return index
    }

    // MARK: Reading

    /// The result of looking up one key.
    enum Found {
        case miss
        case inline(StoredEntry)
        /// A spilled value: the reader checks the file against `crc`.
        case file(name: String, size: Int, storedAt: Double, expiresAt: Double?, crc: UInt32)
        /// The entry changed while it was being checked: look again.
        case retry
    }

    /// Looks up `key` on the write connection: a live, well-formed entry is a hit
    /// (its row id and stored date handed to `hit`, which records the access); an
    /// expired one is deleted; a malformed one, or an inline value that does not
    /// match its checksum, is deleted and reported.
    mutating func find(
        namespace: String, key: String, now: Double, effects: inout _DiskEffects, hit: (Int64, Double) -> Void
    ) throws(HoardError) -> Found {
        let index = try open()
        guard let row = try index.lookup(namespace: namespace, key: key) else { return .miss }
        if row.problem != nil || row.checksumMismatch {
            return try removeMalformed(namespace: namespace, key: key, effects: &effects)
        }
        if let expiresAt = row.expiresAt, expiresAt <= now {
            do {
                let (found, file) = try index.transaction { () throws(HoardError) in
                    try index.deleteIfExpired(id: row.id, now: now)
                }
                if found { effects.events.append(.expired(count: 1)) }
                if let file { effects.filesToRemove.append(file) }
            } catch {
                effects.events.append(
                    .failed(operation: "remove an expired entry", namespace: namespace, key: key, error: error))
            }
            return .miss
        }
        hit(row.id, row.storedAt)
        let expiresAt = row.expiresAt.map { Date(timeIntervalSince1970: $0) }
        if let value = row.value {
            return .inline(
                StoredEntry(data: value, storedAt: Date(timeIntervalSince1970: row.storedAt), expiresAt: expiresAt))
        }
        return .file(name: row.blob!, size: row.size, storedAt: row.storedAt, expiresAt: row.expiresAt, crc: row.crc)
    }

    /// Deletes the entry for `key` if, under the write lock, its row is still
    /// malformed or its inline value still fails its checksum; reports it.
    private mutating func removeMalformed(namespace: String, key: String, effects: inout _DiskEffects)
        throws(HoardError) -> Found
    {
        let index = try open()
        let removed = try index.transaction { () throws(HoardError) -> (damage: StoreDamage, file: String?)? in
            guard let row = try index.lookup(namespace: namespace, key: key) else { return nil }
            let damage: StoreDamage
            if let problem = row.problem {
                damage = StoreDamage(
                    namespace: namespace, key: key, reason: .malformedRow,
                    detail: "the entry's row is malformed (\(problem)); it was removed")
            } else if row.checksumMismatch {
                damage = StoreDamage(
                    namespace: namespace, key: key, reason: .checksumMismatch,
                    detail: "the entry's \(row.size) inline bytes do not match their checksum; it was removed")
            } else {
                return nil
            }
            return (damage, try index.delete(id: row.id).file)
        }
        guard let removed else { return .retry }
        if let file = removed.file { effects.filesToRemove.append(file) }
        effects.events.append(.removedDamaged(removed.damage))
        return .miss
    }

    /// Deletes the entry for `key` if, under the write lock, it still refers to the
    /// file `name` (and, for a checksum mismatch, still has the checksum `crc` the
    /// file's bytes failed), and reports `damage`, which a read of that file found
    /// (``_BlobFiles/ReadResult/damage(name:size:crc:namespace:key:)``). A file is
    /// never rewritten under its name, so the same name (and checksum) mean the
    /// same bytes: what the read found still holds. The file is deleted with the
    /// entry unless another row names it too (a damaged index).
    ///
    /// - Returns: `true` when removed (and reported), `false` when the entry changed
    ///   meanwhile.
    mutating func removeIfStillDamaged(
        namespace: String, key: String, name: String, crc: UInt32, damage: StoreDamage, effects: inout _DiskEffects
    ) throws(HoardError) -> Bool {
        let index = try open()
        var released: String?
        let removed = try index.transaction { () throws(HoardError) -> Bool in
            guard let row = try index.lookup(namespace: namespace, key: key), row.blob == name,
                damage.reason != .checksumMismatch || row.crc == crc
            else { return false }
            // No file when another row names it too (a damaged index): it may hold
            // that entry's intact value.
            released = try index.delete(id: row.id).file
            return true
        }
        guard removed else { return false }
        var reported = damage
        reported.detail += "; the entry was removed"
        if let released { effects.filesToRemove.append(released) }
        effects.events.append(.removedDamaged(reported))
        return true
    }

    // MARK: Access times

    /// Writes access times taken from the log (``_DiskAccessLog/take()``, in row
    /// id order) inside the caller's transaction. An access whose read began at
    /// `unchangedEpoch` read a row that is still as it found it, which is not read
    /// again; `nil` (inside a transaction that may have changed `entries`) reads
    /// every entry without an access row.
    private func write(
        _ taken: [_DiskAccessLog.Access], to index: _DiskIndex, unchangedEpoch: Int? = nil
    ) throws(HoardError) {
        for access in taken {
            try index.touch(
                id: access.id, at: access.time, storedAt: access.epoch == unchangedEpoch ? access.storedAt : nil)
        }
    }

    /// Writes the pending access times in their own transaction. A failure is
    /// reported and the times dropped: they only refine eviction order.
    ///
    /// The transaction first reads `PRAGMA data_version`: when another connection
    /// (another instance or process) committed since the last flush, the epoch
    /// advances, so that accesses read before are checked against their rows.
    /// With the write lock held, nobody else commits until the flush does.
    mutating func flushAccesses(effects: inout _DiskEffects) {
        guard let index, !accesses.isEmpty else { return }
        do {
            let version = try index.transaction(changesEntries: false) { () throws(HoardError) -> Int64 in
                let version = try index.dataVersion()
                if version != seenDataVersion { accesses.entriesMayHaveChanged() }
                try write(accesses.take(), to: index, unchangedEpoch: accesses.epoch)
                return version
            }
            seenDataVersion = version
        } catch {
            effects.events.append(.failed(operation: "record access times", namespace: nil, key: nil, error: error))
        }
    }

    // MARK: Writing

    /// Applies a batch in one transaction. Pending access times are not written
    /// with it: a write never pays for the reads before it.
    ///
    /// - Returns: The store's usage after the batch when it has a limit, read
    ///   in the batch's transaction (``enforceLimits(after:protecting:effects:)``
    ///   then needs no read transaction of its own); `nil` without a limit.
    mutating func write(
        _ batch: [_PreparedWrite], now: Double, effects: inout _DiskEffects
    ) throws(HoardError) -> StoreUsage? {
        let index = try open()
        let limited = isLimited
        let (oldFiles, usage) = try index.transaction { () throws(HoardError) -> ([String], StoreUsage?) in
            var oldFiles: [String] = []
            var mayHaveFiles: Bool?
            for write in batch {
                switch write {
                case .set(let namespace, let key, let inline, let size, let file, let storedAt, let expiresAt, let crc):
                    if file != nil { mayHaveFiles = true }
                    if mayHaveFiles == nil { mayHaveFiles = try index.anyFiles() }
                    let old = mayHaveFiles == true ? try index.fileName(namespace: namespace, key: key) : nil
                    try index.upsert(
                        namespace: namespace, key: key, storedAt: storedAt, expiresAt: expiresAt,
                        accessedAt: accessTime(storedAt: storedAt, now: now), value: inline, size: size, blob: file,
                        crc: crc)
                    // Released unless another row names it too (a damaged index).
                    if let old { oldFiles += try index.files(CollectionOfOne(old), namedByAtMost: 0) }
                case .remove(let namespace, let key):
                    if let file = try index.delete(namespace: namespace, key: key).file { oldFiles.append(file) }
                case .removeAll(let namespace):
                    oldFiles += try index.deleteAll(namespace: namespace).files
                }
            }
            return (oldFiles, limited ? try index.totalUsage() : nil)
        }
        effects.filesToRemove += oldFiles
        return usage
    }

    /// Whether the store has a byte or a count limit.
    private var isLimited: Bool { byteLimit != .max || countLimit != .max }

    /// The access time a write records for an entry stored at `storedAt`: none
    /// when the stored date is the write time within the access resolution (the
    /// entry then reads as accessed when stored, and an insert writes one row),
    /// else `now`.
    private func accessTime(storedAt: Double, now: Double) -> Double? {
        abs(now - storedAt) <= accesses.resolution ? nil : now
    }

    /// After a write whose transaction left the store at `usage` (as ``write(_:now:effects:)``
    /// returns it): if a limit is exceeded, evicts down to its low-water mark,
    /// never the entries just written. A limit that is not exceeded is only kept,
    /// not trimmed to its low-water mark too. A failure is reported, not thrown:
    /// the write itself succeeded.
    mutating func enforceLimits(
        after usage: StoreUsage?, protecting names: @autoclosure () -> Set<_EntryName>, effects: inout _DiskEffects
    ) {
        guard let usage else { return }
        do {
            guard usage.bytes > byteLimit || usage.count > countLimit else { return }
            let maxBytes = usage.bytes > byteLimit ? byteLowWater : byteLimit
            let maxCount = usage.count > countLimit ? countLowWater : countLimit
            let protected = names()
            var evicted = 0
            var bytes = 0
            var queue = _TrimQueue()
            while true {
                let step = try trimStep(
                    toBytes: maxBytes, count: maxCount, protecting: protected, queue: &queue, effects: &effects)
                evicted += step.evicted
                bytes += step.bytes
                if step.done { break }
            }
            if evicted > 0 { effects.events.append(.evicted(count: evicted, bytes: bytes)) }
        } catch {
            effects.events.append(
                .failed(operation: "evict entries over the limit", namespace: nil, key: nil, error: error))
        }
    }

    /// Evicts up to `chunk` least-recently-accessed entries, in one transaction,
    /// while the store is over `maxBytes` or `maxCount`, never one of `protected`.
    ///
    /// The candidates come from `queue`, which a trim passes to each of its steps:
    /// when it is empty, the step fills it with one pass over the access table
    /// (after giving every entry never read an access row at its stored date),
    /// and later steps take the next candidates from it (see `_TrimQueue`).
    ///
    /// The step first writes the access times pending in memory, so that the
    /// order reflects every read. A step whose transaction fails gives them back
    /// to the log (``_DiskAccessLog/giveBack(_:)``): a step tried again after
    /// making room on a full disk writes them then.
    ///
    /// - Returns: What was evicted, the usage after, and whether the store is now
    ///   within the targets (or holds nothing more that may be evicted).
    mutating func trimStep(
        toBytes maxBytes: Int, count maxCount: Int, protecting protected: Set<_EntryName> = [],
        chunk: Int = 256, queue: inout _TrimQueue, effects: inout _DiskEffects
    ) throws(HoardError) -> (evicted: Int, bytes: Int, usage: StoreUsage, done: Bool) {
        let index = try open()
        var stepQueue = queue
        var taken: [_DiskAccessLog.Access] = []
        let result: (Int, Int, StoreUsage, Bool, [String])
        do {
            result = try index.transaction { () throws(HoardError) -> (Int, Int, StoreUsage, Bool, [String]) in
                taken = accesses.take()
                try write(taken, to: index)
                var usage = try index.totalUsage()
                var evicted = 0
                var bytes = 0
                var files: [String] = []
                func within() -> Bool { usage.bytes <= maxBytes && usage.count <= maxCount }
                while !within() && evicted < chunk {
                    if stepQueue.isEmpty {
                        guard stepQueue.mayRefill else { break }
                        // Entries never read since written are in the order by their stored dates.
                        try index.giveAccessRowsToUnreadEntries()
                        let limit = _TrimQueue.fillLimit(
                            usage: usage, maxBytes: maxBytes, maxCount: maxCount, protected: protected.count,
                            chunk: chunk)
                        stepQueue.fill(with: try index.leastRecentlyAccessed(limit: limit), limit: limit)
                        if stepQueue.isEmpty { break }
                    }
                    guard let candidate = stepQueue.next(),
                        let (size, name) = try index.trimCandidate(id: candidate.id, accessedAt: candidate.accessedAt),
                        !protected.contains(name)
                    else { continue }
                    let (found, file) = try index.delete(id: candidate.id)
                    guard found else { continue }
                    stepQueue.countEviction()
                    usage.count -= 1
                    usage.bytes -= size
                    evicted += 1
                    bytes += size
                    if let file { files.append(file) }
                }
                let done = within() || (stepQueue.isEmpty && !stepQueue.mayRefill)
                return (evicted, bytes, usage, done, files)
            }
        } catch {
            accesses.giveBack(taken)
            throw error
        }
        // A step whose transaction failed leaves the queue as it was.
        queue = stepQueue
        effects.filesToRemove += result.4
        return (result.0, result.1, result.2, result.3)
    }

    /// Flushes pending accesses and closes the index.
    mutating func close(effects: inout _DiskEffects) {
        flushAccesses(effects: &effects)
        index?.close()
        index = nil
    }
}
