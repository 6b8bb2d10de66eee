import Foundation
import Synchronization

/// A persistent store in one directory: a SQLite index holding small values
/// inline, larger values in files beside it.
///
/// It survives restarts, can be shared by several instances and processes, and
/// never lets bad data crash a read: a damaged entry is a miss, is removed and is
/// reported as a ``DiskStoreEvent``.
///
/// ```swift
/// let store = try DiskStore(named: "com.example.app")        // ~/.cache/com.example.app
/// try store.set(user, for: "user:42", expires: .hours(1), in: "users")
/// let cached = try store.value(for: "user:42", as: User.self, in: "users")
/// ```
///
/// Every method is synchronous and thread-safe. Reads run at once on a pool of
/// read connections (``Configuration/readerCount``) and never wait for a write;
/// writes take turns on the one write connection; large values are read and
/// written outside every turn.
///
/// ## What it guarantees
///
/// - **Durability.** A write that returned is committed to the index's write-ahead
///   log (`synchronous = NORMAL`) and, for a large value, its file was written,
///   flushed, renamed into place and its directory flushed first (the flushes as
///   ``Configuration/syncsValueFiles`` says). It survives the process being killed
///   at any instant (the kernel still holds what was written); a power loss may
///   lose the last writes, never consistency. A write in flight when the process
///   dies is either entirely there or entirely absent.
/// - **Never wrong bytes.** Every value is stored with a CRC-32C of its bytes,
///   namespace and key, checked on every read and by ``verify(repairing:)``.
/// - **Bad data.** A malformed row, a missing or truncated value file, or bytes
///   that do not match their checksum: a miss, the entry removed, a
///   ``DiskStoreEvent/removedDamaged(_:)`` naming namespace, key and reason. A row
///   that names another entry's value file (a damaged index) fails its checksum
///   the same way: a miss, never the other key's bytes. A value file is deleted
///   only once no row names it, so removing, overwriting, evicting or repairing
///   one entry never takes another's value file.
/// - **Older stores.** A store of format version 1 (no checksums), 2 (access
///   times in the entries' rows) or 3 (an access row written with every entry) is
///   migrated to version 4 when it is opened while no other instance or process
///   has it open (from version 1, every value file is read once); opened while
///   another has it open, it is refused with ``HoardError/Code/busy`` and left
///   unchanged.
/// - **Reads never destroy intact data.** Through the typed API, intact bytes that
///   do not decode as the type asked for are a miss and a
///   ``DiskStoreEvent/undecodable(_:)``; the entry stays.
/// - **Foreign paths.** A path that holds anything but a Hoard store or an empty
///   directory is refused with ``HoardError/Code/notAStore`` before anything is
///   written.
/// - **Keys of any content** (slashes, `..`, NUL, megabytes, any Unicode) are
///   stored as bytes in the index; no key is ever part of a file name. Keys are
///   compared as Swift compares strings: they are stored in Unicode canonical
///   composition (NFC), so `"é"` precomposed and decomposed are one key.
/// - **Faults.** A full disk or a refused permission is a thrown ``HoardError``
///   (``HoardError/Code/storageFull``, ``HoardError/Code/permissionDenied``); the
///   operation had no effect and the store stays usable.
/// - **A full disk.** Removing works on a full disk: `removeValue(for:in:)`,
///   ``removeAll(in:)``, ``removeAll()``, a ``write(_:)`` that removes,
///   ``removeExpired()`` and ``trim(toBytes:count:progress:)``. One that fails with
///   ``HoardError/Code/storageFull`` deletes the value files it releases, then the
///   store's 256 KiB reserve file (`index.sqlite-reserve`, made at open), checkpoints
///   the index's write-ahead log into the database, which gives the log's space
///   back, and tries once more; the reserve is grown back once there is room. A
///   write that fails with `storageFull` is tried once more after a checkpoint, so
///   that the space removals freed is used again.
/// - **Limits.** Over ``Configuration/byteLimit`` or ``Configuration/countLimit``,
///   least-recently-accessed entries are evicted down to 75% (by default) of the
///   limit exceeded. Reads record accesses in memory, at most one per entry and
///   second (``Configuration/accessTimeResolution``), and never write: the
///   times are written in batches off the reader's thread, at most
///   ``Configuration/accessFlushInterval`` later, and before every trim. A crash
///   loses at most that interval of access order, never a value. An entry not
///   read since it was written counts as accessed when stored.
public final class DiskStore: CacheStore {
    /// The namespace the typed API uses when none is given: `"default"`.
    public static let defaultNamespace = "default"

    /// The store's directory.
    public let directory: URL
    /// The configuration the store was opened with.
    public let configuration: Configuration

    let clock: any CacheClock
    let blobs: _BlobFiles
    /// The file deleted to make room when the disk is full (see ``freeingSpace(releasing:_:)``).
    let reserve: _SpaceReserve
    let state: Mutex<_DiskState>
    /// The read connections; reads never take ``state``'s lock on a hit.
    let readers: _DiskReaders
    /// Accesses recorded by reads, written by ``flushAccessTimes()``.
    let accesses: _DiskAccessLog
    /// Where recorded accesses are written, off the readers' threads.
    private let accessQueue = DispatchQueue(label: "Hoard.DiskStore.accesses", qos: .utility)
    let observers: _DiskStoreObservers
    /// The most bytes of value, key and namespace together that a row of the index
    /// holds: the connection's length limit (``_SQLiteConnection/lengthLimit``)
    /// less ``rowMargin``. A larger value goes to a file whatever the spill
    /// threshold.
    let rowCapacity: Int
    /// Room left in a row for everything but the value, key and namespace (the
    /// numbers, the file name, the record's header: under 200 bytes).
    static let rowMargin = 1_024
    private let lockDescriptor: Int32

    /// Opens the store in `directory`, creating it (mode 0700) when the directory
    /// does not exist or is empty.
    ///
    /// When no other instance or process has the store open, files left behind by
    /// interrupted writes are deleted and reported as
    /// ``DiskStoreEvent/collectedOrphans(files:bytes:)`` to
    /// ``Configuration/onEvent``; one that cannot be deleted is reported there as
    /// ``DiskStoreEvent/failed(operation:namespace:key:error:)`` and left.
    ///
    /// - Parameters:
    ///   - directory: The store's directory.
    ///   - configuration: Limits, thresholds, timeouts, the event handler.
    ///     Defaults to no limits, a 32 KiB spill threshold and a 5 s busy timeout.
    ///   - clock: Where the store reads the time for expiry and access order.
    ///     Defaults to ``SystemClock``; tests pass a ``ManualClock``.
    /// - Throws: ``HoardError/Code/notAStore`` when the path holds something other
    ///   than a Hoard store (nothing is changed);
    ///   ``HoardError/Code/storeDamaged`` when `index.sqlite` is this store's index
    ///   (it records Hoard's format) but its SQLite header is damaged, or when it
    ///   holds no data (empty, shorter than SQLite's 100-byte header, or zeros)
    ///   in a directory with the store's `blobs/` and `lock`, so that the entries
    ///   it recorded are lost: nothing is changed (no new index orphans the value
    ///   files), and the message says to delete the directory, as no repair can
    ///   open it;
    ///   ``HoardError/Code/unsupportedFormat`` for a store of a newer format, or of
    ///   an older one when ``Configuration/migratesFormat`` is `false` (nothing is
    ///   changed);
    ///   ``HoardError/Code/busy`` for a store of an older format (version 1, 2 or 3)
    ///   that another instance or process has open (it is migrated when opened
    ///   alone; nothing is changed);
    ///   ``HoardError/Code/permissionDenied``, ``HoardError/Code/storageFull`` or
    ///   ``HoardError/Code/ioFailed`` when the files cannot be opened, created or
    ///   locked;
    ///   ``HoardError/Code/invalidConfiguration`` for a setting out of range.
    public init(
        directory: URL, configuration: Configuration = .init(), clock: any CacheClock = SystemClock()
    ) throws(HoardError) {
        try configuration.validate()
        let path = directory.standardizedFileURL.path
        self.directory = directory
        self.configuration = configuration
        self.clock = clock
        observers = _DiskStoreObservers(handler: configuration.onEvent, logger: configuration.logger, path: path)
        blobs = _BlobFiles(directory: path + "/" + _StoreDirectory.blobsName, syncsFiles: configuration.syncsValueFiles)
        reserve = _SpaceReserve(directory: path)

        let contents = try _StoreDirectory.inspect(path)
        if contents != .store, !configuration.createsStore {
            throw HoardError(.notAStore, "there is no Hoard store at this path", path: path)
        }
        let indexPath = path + "/" + _StoreDirectory.indexName
        var index: _DiskIndex?
        if contents == .store {
            // The format is checked before any file is created: a database that
            // only looks like a store is refused untouched.
            index = try _DiskIndex(
                path: indexPath, busyTimeout: configuration.busyTimeout, pageCacheBytes: configuration.pageCacheBytes,
                lengthLimit: configuration.indexLengthLimit)
        } else if contents == .nothing {
            try _FileSystem.makeDirectories(path)
        }
        var lock = try _StoreDirectory.lock(path)
        var openingEvents: [DiskStoreEvent] = []
        do throws(HoardError) {
            if index == nil {
                if _FileSystem.kind(at: indexPath) == .missing {
                    try lock.takeExclusive(path: path)
                    if _FileSystem.kind(at: indexPath) == .missing {
                        // Re-checked with the lock held: nobody else is creating it.
                        _ = try _StoreDirectory.inspect(path)
                        try _StoreDirectory.create(
                            path, now: clock.now(), syncsDirectory: configuration.syncsValueFiles)
                    }
                }
                try _StoreDirectory.checkIndexHeader(indexPath)
                index = try _DiskIndex(
                    path: indexPath, busyTimeout: configuration.busyTimeout,
                    pageCacheBytes: configuration.pageCacheBytes, lengthLimit: configuration.indexLengthLimit)
            }
            if let index, index.storedVersion < _DiskIndex.formatVersion, !configuration.migratesFormat {
                throw HoardError(
                    .unsupportedFormat,
                    "the store has format version \(index.storedVersion) and was opened without migrating it to version \(_DiskIndex.formatVersion), the one this version of Hoard reads (a migrated store cannot be opened by older versions); nothing was changed",
                    path: path)
            }
            if try _FileSystem.makeDirectory(blobs.directory), configuration.syncsValueFiles {
                // A store whose blobs/ was missing: its new entry is flushed before a
                // row can name a file in it (create(_:now:) flushes its own).
                try _FileSystem.syncDirectory(path)
            }
            if let index, index.storedVersion < _DiskIndex.formatVersion {
                guard lock.exclusive else {
                    throw HoardError(
                        .busy,
                        "the store has format version \(index.storedVersion) and is migrated to version \(_DiskIndex.formatVersion) when opened while no other instance or process has it open; nothing was changed",
                        path: path)
                }
                try index.migrate(blobs: blobs)
            }
            if lock.exclusive, configuration.collectsOrphansAtOpen, let index {
                var failures: [DiskStoreEvent] = []
                let (files, bytes) = try _StoreDirectory.collectOrphans(blobs: blobs, index: index, failures: &failures)
                if files > 0 { openingEvents.append(.collectedOrphans(files: files, bytes: bytes)) }
                openingEvents += failures
            }
            try lock.share(path: path)
        } catch {
            lock.release()
            throw error
        }
        guard let index else {
            lock.release()
            throw HoardError(.ioFailed, "the store's index could not be opened", path: indexPath)
        }
        lockDescriptor = lock.descriptor
        rowCapacity = index.connection.lengthLimit - Self.rowMargin
        accesses = _DiskAccessLog(
            resolution: configuration.accessTimeResolution, flushCount: configuration.accessFlushCount,
            flushInterval: configuration.accessFlushInterval)
        do {
            readers = try _DiskReaders(
                path: indexPath, count: configuration.readerCount, busyTimeout: configuration.busyTimeout,
                pageCacheBytes: configuration.pageCacheBytes, lengthLimit: configuration.indexLengthLimit,
                gate: configuration.readerGate)
        } catch {
            index.close()
            lock.release()
            throw error
        }
        state = Mutex(_DiskState(index: index, accesses: accesses, configuration: configuration))
        do {
            try reserve.restore()
        } catch {
            openingEvents.append(
                .failed(operation: "create the full-disk reserve", namespace: nil, key: nil, error: error))
        }
        observers.publish(openingEvents)
    }

    /// Opens (or creates) the store named `name` in this program's folder of the
    /// user's cache directory: `$XDG_CACHE_HOME/<program>/<name>` or
    /// `~/.cache/<program>/<name>` on Linux, `~/Library/Caches/<program>/<name>` on
    /// Apple platforms, where `<program>` is ``programFolderName``.
    ///
    /// A store an earlier version of Hoard kept directly in the cache directory
    /// (`~/.cache/<name>`) is moved into the program's folder when this opens it
    /// and the program has none of that name yet; if it cannot be moved, it is
    /// opened where it is.
    ///
    /// - Parameters:
    ///   - name: The store's directory name, usually a reverse-DNS identifier. It
    ///     must not be empty, `.` or `..`, or contain `/` or NUL.
    ///   - configuration: As for ``init(directory:configuration:clock:)``.
    ///   - clock: As for ``init(directory:configuration:clock:)``.
    /// - Throws: As ``init(directory:configuration:clock:)`` does, and
    ///   ``HoardError/Code/invalidName`` for an unusable name.
    public convenience init(
        named name: String, configuration: Configuration = .init(), clock: any CacheClock = SystemClock()
    ) throws(HoardError) {
        try _LocalNames.validateComponent(name, what: "a store name")
        let directory = _ProgramFolder.directory(
            named: name, program: Self.programFolderName, in: try LocalStorage.standardCachesDirectory())
        try self.init(directory: directory, configuration: configuration, clock: clock)
    }

    /// The directory ``init(named:configuration:clock:)`` uses for `name` once any
    /// store an earlier version kept directly in the cache directory has been
    /// moved: `<caches>/<program>/<name>`, `<program>` being ``programFolderName``.
    ///
    /// - Throws: ``HoardError/Code/invalidName`` when `name` is empty, `.` or `..`,
    ///   contains `/` or NUL, or has more than 255 bytes.
    public static func defaultDirectory(named name: String) throws(HoardError) -> URL {
        try _LocalNames.validateComponent(name, what: "a store name")
        return try LocalStorage.standardCachesDirectory()
            .appendingPathComponent(programFolderName, isDirectory: true)
            .appendingPathComponent(name, isDirectory: true)
    }

    deinit {
        var effects = _DiskEffects()
        readers.close()
        state.withLock { $0.close(effects: &effects) }
        close(lockDescriptor)
        finish(effects)
        observers.finishAll()
    }

    // MARK: Reading

    /// The live entry for `key` in `namespace`, or `nil`.
    ///
    /// An expired entry is a miss and is removed. A damaged entry (malformed row,
    /// missing or truncated file, bytes that do not match the CRC-32C stored with
    /// them) is a miss, is removed and is reported as
    /// ``DiskStoreEvent/removedDamaged(_:)``. A hit records an access for eviction
    /// order (in memory, written later in a batch).
    ///
    /// - Throws: ``HoardError`` when the index or a value file cannot be read.
    /// - Complexity: One indexed lookup; a large value is read from its file
    ///   outside the store's lock.
    public func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        try _entry(for: _normalized(key), in: _normalized(namespace))
    }

    /// ``entry(for:in:)`` on normalised strings.
    func _entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        for _ in 0..<8 {
            let now = clock.now().timeIntervalSince1970
            let epoch = accesses.epoch
            let row = try readers.lookup(namespace: namespace, key: key, foundRow: { id in accesses.prefetch(id: id) })
            var found = found(row, now: now, epoch: epoch)
            if found == nil {
                // Expired or damaged: the write connection removes it, if it still is.
                var effects = _DiskEffects()
                var flush = _DiskAccessLog.Flush.none
                found = try state.withLock { (state) throws(HoardError) -> _DiskState.Found in
                    try state.find(namespace: namespace, key: key, now: now, effects: &effects) { id, storedAt in
                        // Read under the write lock: no transaction since.
                        flush = accesses.record(id: id, now: now, storedAt: storedAt, epoch: accesses.epoch)
                    }
                }
                finish(effects)
                scheduleAccessFlush(flush)
            }
            switch found ?? .miss {
            case .miss:
                return nil
            case .retry:
                continue
            case .inline(let entry):
                return entry
            case .file(let name, let size, let storedAt, let expiresAt, let crc):
                let read = try blobs.read(name, size: size)
                guard let damage = read.damage(name: name, size: size, crc: crc, namespace: namespace, key: key)
                else {
                    // Only the bytes of the value are undamaged.
                    guard case .data(let data) = read else { continue }
                    return StoredEntry(
                        data: data, storedAt: Date(timeIntervalSince1970: storedAt),
                        expiresAt: expiresAt.map { Date(timeIntervalSince1970: $0) })
                }
                // Missing, the wrong size or the wrong bytes: damage, unless a writer
                // replaced the entry (and deleted this file) since the row was read.
                var removal = _DiskEffects()
                let removed = try state.withLock { (state) throws(HoardError) -> Bool in
                    try state.removeIfStillDamaged(
                        namespace: namespace, key: key, name: name, crc: crc, damage: damage, effects: &removal)
                }
                finish(removal)
                if removed { return nil }
            }
        }
        return nil
    }

    /// Whether `namespace` holds a live entry for `key`. Does not read the value
    /// (so does not notice a damaged file) and does not count as an access.
    ///
    /// - Complexity: One indexed lookup.
    public func contains(_ key: String, in namespace: String) throws(HoardError) -> Bool {
        let key = _normalized(key)
        let namespace = _normalized(namespace)
        let now = clock.now().timeIntervalSince1970
        return try readers.contains(namespace: namespace, key: key, now: now)
    }

    /// What a read connection's `row` answers: a live, well-formed entry is a hit
    /// and, with `recordsAccess`, has its access recorded (in memory, with the
    /// access log's `epoch` loaded before the read began); `nil` for an expired or damaged entry,
    /// which only the write connection may remove.
    func found(_ row: _DiskIndex.Row?, now: Double, epoch: Int, recordsAccess: Bool = true) -> _DiskState.Found? {
        guard let row else { return .miss }
        if row.problem != nil || row.checksumMismatch { return nil }
        if let expiresAt = row.expiresAt, expiresAt <= now { return nil }
        if recordsAccess {
            scheduleAccessFlush(accesses.record(id: row.id, now: now, storedAt: row.storedAt, epoch: epoch))
        }
        let expiresAt = row.expiresAt.map { Date(timeIntervalSince1970: $0) }
        if let value = row.value {
            return .inline(
                StoredEntry(data: value, storedAt: Date(timeIntervalSince1970: row.storedAt), expiresAt: expiresAt))
        }
        return .file(name: row.blob!, size: row.size, storedAt: row.storedAt, expiresAt: row.expiresAt, crc: row.crc)
    }

    /// Queues the flush a recorded access asked for on the store's access queue.
    /// The queued work holds the store weakly: a store deallocated first writes
    /// its accesses as it closes.
    func scheduleAccessFlush(_ flush: _DiskAccessLog.Flush) {
        switch flush {
        case .none:
            return
        case .now:
            accessQueue.async { [weak self] in self?.flushQueuedAccesses(immediate: true) }
        case .after(let seconds):
            // At most a day ahead: the queued flush only has to come, not be exact.
            accessQueue.asyncAfter(deadline: .now() + min(seconds, 86_400)) { [weak self] in
                self?.flushQueuedAccesses(immediate: false)
            }
        }
    }

    /// A queued flush: lets reads queue the next one, then writes what is pending.
    private func flushQueuedAccesses(immediate: Bool) {
        accesses.flushStarted(immediate: immediate)
        flushAccessTimes()
    }

    /// For tests: returns once every flush queued to run at once has run.
    func waitForQueuedAccessFlushes() {
        accessQueue.sync {}
    }

    /// The keys of the live entries of `namespace`, in byte order of their UTF-8
    /// (NFC) form.
    ///
    /// Runs on the store's write connection: it waits for a write in progress, and
    /// this instance's writes wait for it.
    ///
    /// - Complexity: O(entries in the namespace).
    public func keys(in namespace: String) throws(HoardError) -> [String] {
        let namespace = _normalized(namespace)
        let now = clock.now().timeIntervalSince1970
        return try state.withLock { (state) throws(HoardError) -> [String] in
            try state.open().keys(namespace: namespace, now: now)
        }
    }

    /// The entries and value bytes of `namespace`, expired entries not yet removed
    /// included.
    ///
    /// Runs on the store's write connection: it waits for a write in progress, and
    /// this instance's writes wait for it.
    ///
    /// - Complexity: O(1): the totals are kept up to date by the index.
    public func usage(in namespace: String) throws(HoardError) -> StoreUsage {
        let namespace = _normalized(namespace)
        return try state.withLock { (state) throws(HoardError) -> StoreUsage in
            try state.open().usage(namespace: namespace)
        }
    }

    /// The entries and value bytes of the whole store.
    ///
    /// Runs on the store's write connection: it waits for a write in progress, and
    /// this instance's writes wait for it.
    ///
    /// - Complexity: O(namespaces).
    public func totalUsage() throws(HoardError) -> StoreUsage {
        try state.withLock { (state) throws(HoardError) -> StoreUsage in try state.open().totalUsage() }
    }

    // MARK: Writing

    /// Stores `data` for `key` in `namespace`, replacing any older value.
    ///
    /// A value over ``Configuration/spillThreshold``, or too large for a row of the
    /// index with its key and namespace, is written to its own file (temporary
    /// name, flushed, renamed, then the `blobs/` directory flushed, as
    /// ``Configuration/syncsValueFiles`` says) before the index row that refers to
    /// it is committed; when a flush fails, nothing is committed and the file is
    /// deleted (or, when it cannot be, reported and collected at the next open).
    /// Access times recorded by reads are not written with it. If
    /// the store is now over a limit it evicts least-recently-accessed entries,
    /// never this one.
    ///
    /// - Throws: ``HoardError/Code/invalidArgument`` when `storedAt` is not a
    ///   finite date or `expiresAt` is NaN;
    ///   ``HoardError/Code/valueTooLarge`` when the value alone exceeds the
    ///   byte limit, or the key or namespace is too large for a row of the index;
    ///   ``HoardError/Code/storageFull``,
    ///   ``HoardError/Code/permissionDenied``, ``HoardError/Code/busy`` or
    ///   ``HoardError/Code/ioFailed`` when the write fails. When it throws, the
    ///   store is unchanged.
    /// - Complexity: One transaction with one upsert (plus one lookup of the file
    ///   of a replaced entry when the store holds any files, and when that entry had
    ///   one, one probe of the index of file names: a file another row still names
    ///   is kept).
    public func set(
        _ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?
    ) throws(HoardError) {
        var newFiles: [String] = []
        let prepared = try prepareSet(
            data, key: key, namespace: namespace, storedAt: storedAt, expiresAt: expiresAt, newFiles: &newFiles)
        do {
            try commit([prepared], newFiles: newFiles)
        } catch {
            let key = _normalized(key)
            throw HoardError(
                error.code,
                "could not store the value in namespace \"\(_normalized(namespace).prefix(100))\": \(error.message)",
                key: key, path: error.path, underlying: error.underlying)
        }
    }

    /// Applies `batch` in order, in one transaction: all of it or none of it.
    ///
    /// Files of large values are written before the transaction, then the `blobs/`
    /// directory is flushed once for them all (as
    /// ``Configuration/syncsValueFiles`` says); the batch's entries are never
    /// evicted by the limit check that follows it.
    ///
    /// On a full disk, a batch that removes entries makes room as
    /// `removeValue(for:in:)` does; one that only sets is tried once more after a
    /// checkpoint of the index's log.
    ///
    /// - Throws: As ``set(_:for:in:storedAt:expiresAt:)``; the store is unchanged
    ///   when it throws, but for one case: a batch that removes and still fails on
    ///   a full disk after making room has deleted the value files of the entries
    ///   it was to remove (they then read as damaged: a miss, removed).
    /// - Complexity: One transaction; per write, one upsert or delete.
    public func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
        guard !batch.isEmpty else { return }
        var prepared: [_PreparedWrite] = []
        prepared.reserveCapacity(batch.count)
        var newFiles: [String] = []
        do {
            for write in batch {
                switch write {
                case .set(let data, let key, let namespace, let storedAt, let expiresAt):
                    prepared.append(
                        try prepareSet(
                            data, key: key, namespace: namespace, storedAt: storedAt, expiresAt: expiresAt,
                            newFiles: &newFiles))
                case .removeValue(let key, let namespace):
                    prepared.append(.remove(namespace: _normalized(namespace), key: _normalized(key)))
                case .removeAll(let namespace):
                    prepared.append(.removeAll(namespace: _normalized(namespace)))
                }
            }
        } catch {
            finish(_DiskEffects(filesToRemove: newFiles))
            throw error
        }
        try commit(prepared, newFiles: newFiles)
    }

    /// One value to store, as ``set(_:for:in:storedAt:expiresAt:)`` and
    /// ``write(_:)`` store it: names normalised, a value over the byte limit
    /// refused, a value that spills written to its file now (its name appended to
    /// `newFiles`, whoever deletes them on failure), its checksum computed.
    private func prepareSet(
        _ data: Data, key: String, namespace: String, storedAt: Date, expiresAt: Date?, newFiles: inout [String]
    ) throws(HoardError) -> _PreparedWrite {
        let key = _normalized(key)
        let namespace = _normalized(namespace)
        try HoardError.checkWriteDates(storedAt: storedAt, expiresAt: expiresAt, key: key)
        try checkSize(data.count, key: key)
        var file: String?
        if spills(data.count, key: key, namespace: namespace) {
            let name = _BlobFiles.makeName(namespace: namespace, key: key)
            try blobs.write(data, as: name)
            newFiles.append(name)
            file = name
        }
        let crc = data.withUnsafeBytes { _DiskIndex.checksum($0, namespace: namespace, key: key) }
        return .set(
            namespace: namespace, key: key, inline: file == nil ? data : nil, size: data.count, file: file,
            storedAt: storedAt.timeIntervalSince1970, expiresAt: expiresAt?.timeIntervalSince1970, crc: crc)
    }

    /// Commits prepared writes in one transaction, then evicts over the limits
    /// (never the entries written): the `blobs/` directory flushed first when
    /// there are `newFiles`; on a full disk, a batch that removes makes room as
    /// `removeValue(for:in:)` does, one that only sets is tried once more after a
    /// checkpoint. When it throws, nothing is committed and `newFiles` are deleted.
    private func commit(_ prepared: [_PreparedWrite], newFiles: [String]) throws(HoardError) {
        var effects = _DiskEffects()
        do {
            if !newFiles.isEmpty { try blobs.synchronizeEntries() }
            let now = clock.now().timeIntervalSince1970
            // Closure literals passed straight to the calls, not one stored in a
            // local: a stored closure escapes as far as the compiler knows, so the
            // `effects` it captured lived in a heap box (`Benchmarks/README.md`,
            // "the insert's own overhead").
            if prepared.contains(where: \.removes) {
                // A batch that removes is how a full store makes room: as removeValue does.
                try freeingSpace(releasing: { () throws(HoardError) in try self.files(removedBy: prepared) }) {
                    () throws(HoardError) in try apply(prepared, now: now, effects: &effects)
                }
            } else {
                try retryingAfterCheckpoint { () throws(HoardError) in
                    try apply(prepared, now: now, effects: &effects)
                }
            }
        } catch {
            effects.filesToRemove += newFiles
            finish(effects)
            throw error
        }
        finish(effects)
    }

    /// Writes `prepared` in one transaction and evicts over the limits (never the
    /// entries written), under the writer lock.
    private func apply(_ prepared: [_PreparedWrite], now: Double, effects: inout _DiskEffects) throws(HoardError) {
        try state.withLock { (state) throws(HoardError) in
            let usage = try state.write(prepared, now: now, effects: &effects)
            state.enforceLimits(after: usage, protecting: _PreparedWrite.names(in: prepared), effects: &effects)
        }
    }

    /// Removes the entry for `key` in `namespace` (and its file, if it has one).
    ///
    /// Works on a full disk too (see "A full disk" in the type's overview): the
    /// value file goes first, then the reserve, then the log is checkpointed.
    ///
    /// - Returns: Whether there was an entry, expired ones included.
    /// - Throws: ``HoardError`` when the index cannot be written even then; nothing
    ///   changed but, on a full disk, the value file (the entry then reads as
    ///   damaged: a miss, removed).
    @discardableResult
    public func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool {
        let key = _normalized(key)
        let namespace = _normalized(namespace)
        var effects = _DiskEffects()
        let found = try freeingSpace(
            releasing: { () throws(HoardError) in
                try state.withLock { (state) throws(HoardError) in
                    let index = try state.open()
                    guard let file = try index.fileName(namespace: namespace, key: key) else { return [] }
                    return try index.files(CollectionOfOne(file), namedByAtMost: 1)
                }
            },
            { () throws(HoardError) -> Bool in
                try state.withLock { (state) throws(HoardError) -> Bool in
                    let index = try state.open()
                    let (found, file) = try index.transaction { () throws(HoardError) in
                        try index.delete(namespace: namespace, key: key)
                    }
                    if let file { effects.filesToRemove.append(file) }
                    return found
                }
            })
        finish(effects)
        return found
    }

    /// Removes every entry of `namespace`; other namespaces are untouched.
    ///
    /// Works on a full disk too: when the index cannot record the removal, the
    /// namespace's value files are deleted first to make room, then the store's
    /// reserve file, and the index's log is checkpointed (see "A full disk" in the
    /// type's overview).
    ///
    /// - Returns: How many entries were removed.
    /// - Complexity: O(entries in the namespace).
    @discardableResult
    public func removeAll(in namespace: String) throws(HoardError) -> Int {
        try removeAll(namespace: _normalized(namespace))
    }

    /// Removes every entry of every namespace; on a full disk, as
    /// ``removeAll(in:)`` does.
    ///
    /// - Returns: How many entries were removed.
    /// - Complexity: O(entries).
    @discardableResult
    public func removeAll() throws(HoardError) -> Int {
        try removeAll(namespace: nil)
    }

    /// Deletes the rows, then their files; on a full disk, as ``freeingSpace(releasing:_:)``
    /// says: the files first, then the reserve, then a checkpoint, and once more.
    private func removeAll(namespace: String?) throws(HoardError) -> Int {
        var effects = _DiskEffects()
        let count = try freeingSpace(
            releasing: { () throws(HoardError) in
                try state.withLock { (state) throws(HoardError) in
                    let index = try state.open()
                    return try index.files(index.files(in: namespace), namedByAtMost: 1)
                }
            },
            { () throws(HoardError) in try deleteRows(namespace: namespace, effects: &effects) })
        finish(effects)
        return count
    }

    /// Deletes the rows of `namespace` (of every namespace when `nil`) in one
    /// transaction; their files are left in `effects` for after the lock.
    private func deleteRows(namespace: String?, effects: inout _DiskEffects) throws(HoardError) -> Int {
        var files: [String] = []
        let count = try state.withLock { (state) throws(HoardError) -> Int in
            let index = try state.open()
            let deleted = try index.transaction { () throws(HoardError) in
                try index.deleteAll(namespace: namespace)
            }
            files = deleted.files
            return deleted.count
        }
        effects.filesToRemove += files
        return count
    }

    // MARK: Support

    /// The value files of the entries a batch removes (as it finds them before it
    /// runs) that no other row names: the files it may delete before it runs.
    private func files(removedBy batch: [_PreparedWrite]) throws(HoardError) -> [String] {
        try state.withLock { (state) throws(HoardError) -> [String] in
            let index = try state.open()
            var files: [String] = []
            for write in batch {
                switch write {
                case .set: continue
                case .remove(let namespace, let key):
                    if let file = try index.fileName(namespace: namespace, key: key) { files.append(file) }
                case .removeAll(let namespace):
                    files += try index.files(in: namespace)
                }
            }
            return try index.files(files, namedByAtMost: 1)
        }
    }

    /// Whether a value of `size` bytes goes to a file of its own: when it is over
    /// ``Configuration/spillThreshold``, or when a row of the index cannot hold it
    /// with its key and namespace (``rowCapacity``).
    @inline(__always)
    private func spills(_ size: Int, key: String, namespace: String) -> Bool {
        size > configuration.spillThreshold || size > rowCapacity - key.utf8.count - namespace.utf8.count
    }

    /// Refuses a value larger than the byte limit on its own.
    private func checkSize(_ size: Int, key: String) throws(HoardError) {
        if let limit = configuration.byteLimit, size > limit {
            throw HoardError(
                .valueTooLarge, "a value of \(size) bytes is larger than the store's byte limit of \(limit)", key: key)
        }
    }

    /// Runs the effects of a critical section: deletes released files, delivers
    /// events. A file that cannot be deleted is reported; the next exclusive open
    /// collects it.
    func finish(_ effects: _DiskEffects) {
        var events = effects.events
        for file in effects.filesToRemove {
            do {
                try blobs.remove(file)
            } catch {
                events.append(
                    .failed(operation: "delete a value file no entry refers to", namespace: nil, key: nil, error: error)
                )
            }
        }
        observers.publish(events)
    }
}

extension DiskStore: _NonWaitingLookup {
    /// The entry for `key` if it can be had without waiting: read on a connection
    /// free now, not waiting for a lock another process holds, and inline (no
    /// value file to read). `.some(nil)` for a miss; `nil` when it would wait, or
    /// for an entry that needs more than a read (expired or damaged: removed by
    /// ``entry(for:in:)``), or on an error (which ``entry(for:in:)`` reports).
    @usableFromInline
    func _entryWithoutWaiting(for key: String, in namespace: String) -> StoredEntry?? {
        let key = _normalized(key)
        let namespace = _normalized(namespace)
        let now = clock.now().timeIntervalSince1970
        let epoch = accesses.epoch
        guard
            let row = try? readers.lookupWithoutWaiting(
                namespace: namespace, key: key, foundRow: { id in accesses.prefetch(id: id) })
        else { return nil }
        switch found(row, now: now, epoch: epoch) {
        case .miss?: return .some(nil)
        case .inline(let entry)?: return .some(entry)
        default: return nil
        }
    }
}

/// A local store that can answer a lookup on the caller's thread without waiting
/// for I/O that can wait (a busy lock, a value file), or say that it would.
@usableFromInline
protocol _NonWaitingLookup: CacheStore {
    /// The entry for `key` (`.some(nil)` for a miss), or `nil` when answering
    /// would wait: the caller then calls ``CacheStore/entry(for:in:)`` on a thread
    /// that may block.
    func _entryWithoutWaiting(for key: String, in namespace: String) -> StoredEntry??
}

/// `string` in Unicode canonical composition (NFC), so that strings Swift
/// considers equal are one key on disk. ASCII, by far the most common case, is
/// returned as it is without allocating.
@inlinable @inline(__always)
func _normalized(_ string: String) -> String {
    var ascii = true
    for byte in string.utf8 where byte >= 0x80 {
        ascii = false
        break
    }
    return ascii ? string : string.precomposedStringWithCanonicalMapping
}
