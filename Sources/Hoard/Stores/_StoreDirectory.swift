import Foundation

/// The layout of a ``DiskStore`` directory and what opening one involves.
///
/// ```
/// <directory>/          0700
///   index.sqlite        0600  the index (WAL); -wal and -shm beside it, same mode
///   blobs/              0700  values over the spill threshold, one file each, 0600
///   lock                0600  held shared (flock) by every open instance
///   index.sqlite-reserve 0600 256 KiB of zeros, deleted to make room on a full disk (_SpaceReserve)
/// ```
///
/// Opening looks before it touches: a path that holds anything other than a Hoard
/// store (or an empty directory) is refused before a single file is created. The
/// index is recognised by its SQLite header and Hoard's `application_id`, read
/// directly from the file's first 100 bytes. An index that is not recognised is
/// still this store's, damaged, when it records Hoard's format further in (its
/// header was overwritten), or when it holds no data at all (empty, cut below the
/// header, zeros) beside the store's `blobs/` and `lock`.
///
/// The lock file orders opening between instances and processes. An instance
/// holds it shared while open. Creating the store and collecting orphaned files
/// need it exclusive, which an instance gets only when no other instance anywhere
/// has the store open, so they never race with a write in flight.
enum _StoreDirectory {
    static let indexName = "index.sqlite"
    static let blobsName = "blobs"
    static let lockName = "lock"
    /// The index is built under this name and renamed into place when complete.
    static let creatingName = "index.sqlite.creating"

    /// What a path holds.
    enum Contents {
        /// Nothing: the directory must be created.
        case nothing
        /// An empty directory, or what an interrupted creation leaves.
        case empty
        /// A Hoard store.
        case store
    }

    /// Looks at `path` without changing anything.
    ///
    /// A symbolic link at `path` itself is followed (a store directory may live
    /// elsewhere, `~/.cache/app -> /mnt/big/app`); links inside it never are: a
    /// `blobs` entry that is not a real directory is refused.
    ///
    /// - Throws: ``HoardError/Code/notAStore`` when the path holds something else.
    static func inspect(_ path: String) throws(HoardError) -> Contents {
        switch _FileSystem.kind(at: path, followingLinks: true) {
        case .missing:
            if _FileSystem.kind(at: path) != .missing {
                throw HoardError(.notAStore, "the path is a symbolic link to nothing", path: path)
            }
            return .nothing
        case .directory:
            break
        case .file:
            throw HoardError(.notAStore, "the path is a file, not a store directory", path: path)
        case .other:
            throw HoardError(
                .notAStore, "the path is a FIFO, a socket or a device, not a store directory; nothing was opened",
                path: path)
        }
        let names = try _FileSystem.contents(of: path)
        if names.contains(blobsName), _FileSystem.kind(at: path + "/" + blobsName) != .directory {
            throw HoardError(
                .notAStore, "the blobs entry is not a directory (a symbolic link or a file); nothing was changed",
                path: path)
        }
        if names.contains(lockName), _FileSystem.kind(at: path + "/" + lockName) != .file {
            throw HoardError(
                .notAStore,
                "the lock entry is not a regular file (a symbolic link or a directory); nothing was changed",
                path: path)
        }
        if names.contains(indexName) {
            try checkIndexHeader(path + "/" + indexName)
            return .store
        }
        let foreign = names.filter { name in
            name != blobsName && name != lockName && name != _SpaceReserve.name && !name.hasPrefix(creatingName)
        }
        if !foreign.isEmpty {
            let shown = foreign.sorted().prefix(5).joined(separator: ", ")
            throw HoardError(
                .notAStore,
                "the directory is not empty and holds no Hoard store (it contains \(shown)\(foreign.count > 5 ? ", …" : "")); nothing was changed",
                path: path)
        }
        return .empty
    }

    /// Checks the first 100 bytes of an index file: SQLite's magic string and
    /// Hoard's application id.
    ///
    /// An index a connection of this process has open is not read again: it was
    /// checked when its store opened it, and closing a descriptor of it would
    /// release SQLite's locks on it (``_SQLiteOpenFiles``).
    static func checkIndexHeader(_ indexPath: String) throws(HoardError) {
        guard _FileSystem.kind(at: indexPath) == .file else {
            throw HoardError(.notAStore, "index.sqlite is not a regular file", path: indexPath)
        }
        _ = try _SQLiteOpenFiles.readUnlessOpen(indexPath) { () throws(HoardError) in
            try checkHeaderBytes(indexPath)
        }
    }

    /// ``checkIndexHeader(_:)``'s reading of the file itself.
    private static func checkHeaderBytes(_ indexPath: String) throws(HoardError) {
        guard let header = _FileSystem.prefix(ofFile: indexPath, count: 100) else {
            throw _FileSystem.error("could not read the store's index", path: indexPath)
        }
        let magic = Array("SQLite format 3\0".utf8)
        guard header.count == 100, Array(header[0..<16]) == magic else {
            if recordsHoardFormat(indexPath) {
                throw damagedHeader(indexPath, "its first 16 bytes are not SQLite's \"SQLite format 3\"")
            }
            if let lost = lostIndex(header, indexPath: indexPath) { throw lost }
            throw HoardError(.notAStore, "index.sqlite is not an SQLite database; nothing was changed", path: indexPath)
        }
        let id = header[68..<72].reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
        guard id == _DiskIndex.applicationID else {
            if recordsHoardFormat(indexPath) {
                throw damagedHeader(
                    indexPath, "its application id is \(id), not Hoard's \(_DiskIndex.applicationID)")
            }
            throw HoardError(
                .notAStore,
                "index.sqlite is an SQLite database of another application (application id \(id), Hoard's is \(_DiskIndex.applicationID)); nothing was changed",
                path: indexPath)
        }
    }

    /// How many bytes from the start of an index ``recordsHoardFormat(_:)`` searches:
    /// the `meta` table, created first, is on the database's second page (at most
    /// 64 KiB in).
    static let formatRecordSearchBytes = 131_072

    /// Whether the first ``formatRecordSearchBytes`` of the file hold the format name
    /// Hoard records in `meta` (``_DiskIndex/formatName``): what tells a Hoard index
    /// whose SQLite header is damaged from another program's file.
    static func recordsHoardFormat(_ indexPath: String) -> Bool {
        guard let bytes = _FileSystem.prefix(ofFile: indexPath, count: formatRecordSearchBytes) else { return false }
        let needle = Array(_DiskIndex.formatName.utf8)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if bytes[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }

    /// The error for a Hoard index whose header is damaged: what is wrong, and what to
    /// do about it.
    private static func damagedHeader(_ indexPath: String, _ what: String) -> HoardError {
        damagedIndex(indexPath, "index.sqlite is this Hoard store's index, but its SQLite header is damaged (\(what))")
    }

    /// The error for an index that holds no data (``holdsNoData(_:)``) in a directory
    /// with the store's layout (``hasStoreLayout(_:)``): the store's index, lost by
    /// truncation or replaced by an empty file; `nil` when either is not so, and
    /// the file may be another program's.
    ///
    /// Such a directory is a Hoard store whose entries are gone with its index:
    /// refusing it as not a store would hide the damage, and keep ``LocalStorage``
    /// from listing and deleting it, so its value files would stay on disk for
    /// ever; building a new index in it would orphan them silently.
    private static func lostIndex(_ header: [UInt8], indexPath: String) -> HoardError? {
        let directory = (indexPath as NSString).deletingLastPathComponent
        guard holdsNoData(header), hasStoreLayout(directory) else { return nil }
        let what =
            header.isEmpty
            ? "is empty" : header.count < 100 ? "has only \(header.count) bytes" : "begins with 100 zero bytes"
        return damagedIndex(
            indexPath,
            "index.sqlite \(what), but the directory holds this Hoard store's \(blobsName)/ and \(lockName): it is "
                + "the store's index, cut short or replaced, and the entries it recorded are lost")
    }

    /// Whether the first 100 bytes of an index file (`header`, as read) say nothing
    /// about whose file it is: fewer than SQLite's 100-byte header (an empty file
    /// included), or zeros only. No program's SQLite database looks like that.
    static func holdsNoData(_ header: [UInt8]) -> Bool {
        header.count < 100 || header.allSatisfy { $0 == 0 }
    }

    /// Whether `directory` holds what ``DiskStore`` creates in a store's directory
    /// before its index: a real `blobs` directory and a regular `lock` file (not
    /// symbolic links).
    static func hasStoreLayout(_ directory: String) -> Bool {
        _FileSystem.kind(at: directory + "/" + blobsName) == .directory
            && _FileSystem.kind(at: directory + "/" + lockName) == .file
    }

    /// ``HoardError/Code/storeDamaged`` for a store whose index SQLite cannot open:
    /// `what` is wrong, nothing was changed, and deleting the directory is the repair.
    private static func damagedIndex(_ indexPath: String, _ what: String) -> HoardError {
        let directory = (indexPath as NSString).deletingLastPathComponent
        return HoardError(
            .storeDamaged,
            "\(what), so SQLite cannot open it and no repair can mend it; nothing was changed. A store holds only "
                + "cached data: delete the store's directory (\(directory)) and the next open creates it anew",
            path: indexPath)
    }

    /// The lock file, held shared or exclusive.
    struct Lock {
        let descriptor: Int32
        var exclusive: Bool

        /// Holds the lock shared from now on (others may open the store).
        ///
        /// `flock` converts a lock by releasing it and then waiting for the new one,
        /// so a conversion that fails may leave no lock at all; it throws, and the
        /// caller must ``release()`` the lock rather than go on as if it held one.
        ///
        /// - Throws: ``HoardError/Code/ioFailed`` (or the code of the `errno`) when
        ///   the shared lock could not be taken.
        mutating func share(path: String) throws(HoardError) {
            guard exclusive else { return }
            if case .failure(let failure) = _POSIX.lock(descriptor, .shared) {
                throw _FileSystem.error(
                    "could not turn the store's exclusive lock into a shared one (the lock may be lost); the store was not opened",
                    path: path, errno: failure.code)
            }
            exclusive = false
        }

        /// Waits until the lock is exclusive.
        mutating func takeExclusive(path: String) throws(HoardError) {
            while flock(descriptor, LOCK_EX) != 0 {
                if errno != EINTR { throw _FileSystem.error("could not lock the store", path: path) }
            }
            exclusive = true
        }

        func release() {
            close(descriptor)
        }
    }

    /// Opens the lock file and holds it exclusive when no other instance has the
    /// store open, shared otherwise.
    static func lock(_ path: String) throws(HoardError) -> Lock {
        let lockPath = path + "/" + lockName
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw _FileSystem.error("could not open the store's lock file", path: lockPath) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return Lock(descriptor: fd, exclusive: true) }
        while flock(fd, LOCK_SH) != 0 {
            if errno != EINTR {
                let error = _FileSystem.error("could not lock the store", path: lockPath)
                close(fd)
                throw error
            }
        }
        return Lock(descriptor: fd, exclusive: false)
    }

    /// Creates `blobs/` and a complete `index.sqlite`, and makes the directory
    /// readable by its owner only (0700, also when it existed, empty, with a
    /// wider mode). With `syncsDirectory`, the directory's new entries are flushed
    /// to stable storage before it returns. Call with the lock exclusive.
    ///
    /// - Throws: When a file cannot be created, written, flushed or moved, or the
    ///   directory cannot be flushed.
    static func create(_ path: String, now: Date, syncsDirectory: Bool) throws(HoardError) {
        guard chmod(path, 0o700) == 0 else {
            throw _FileSystem.error("could not make the store directory private (mode 0700)", path: path)
        }
        try _FileSystem.makeDirectory(path + "/" + blobsName)
        for name in try _FileSystem.contents(of: path) where name.hasPrefix(creatingName) {
            try _FileSystem.removeFile(path + "/" + name)
        }
        let building = path + "/" + creatingName
        let fd = open(building, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw _FileSystem.error("could not create the store's index", path: building) }
        close(fd)
        do throws(HoardError) {
            try _DiskIndex.createDatabase(at: building, now: now)
            // The index must be on stable storage before its name says it is
            // complete (SQLite's checkpoint on close syncs it too; this does not
            // depend on that, and a failure now fails the creation).
            try _FileSystem.syncFile(building)
            guard rename(building, path + "/" + indexName) == 0 else {
                throw _FileSystem.error("could not move the store's index into place", path: building)
            }
            if syncsDirectory { try _FileSystem.syncDirectory(path) }
        } catch {
            for name in (try? _FileSystem.contents(of: path)) ?? [] where name.hasPrefix(creatingName) {
                unlink(path + "/" + name)
            }
            throw error
        }
    }

    /// Deletes temporary files and value files no entry refers to. Call with the
    /// lock exclusive: no write can be in flight.
    ///
    /// A name that cannot be deleted (a directory: `unlink` never enters one, and a
    /// symbolic link is deleted, not followed) is left, and reported in `failures`
    /// as ``DiskStoreEvent/failed(operation:namespace:key:error:)``.
    ///
    /// - Returns: How many files were deleted, and their bytes.
    static func collectOrphans(
        blobs: _BlobFiles, index: _DiskIndex, failures: inout [DiskStoreEvent]
    ) throws(HoardError) -> (files: Int, bytes: Int) {
        let referenced = try index.referencedFiles()
        var files = 0
        var bytes = 0
        for name in try blobs.allNames() {
            let orphan =
                _BlobFiles.isTemporaryName(name) || (_BlobFiles.isValidName(name) && !referenced.contains(name))
            guard orphan else { continue }
            let size = blobs.size(of: name) ?? 0
            do {
                try blobs.remove(name)
            } catch {
                failures.append(
                    .failed(operation: "delete an orphaned file at open", namespace: nil, key: nil, error: error))
                continue
            }
            files += 1
            bytes += size
        }
        return (files, bytes)
    }
}

/// `index.sqlite-reserve` in a store's directory: a file of zeros that holds disk
/// space for a full disk.
///
/// On a full disk even removing needs room: SQLite records a deletion by appending
/// pages to the index's write-ahead log, and copying the log into the database
/// (a checkpoint, after which the log's space is given back) may need to grow the
/// database. A ``DiskStore`` whose removal fails with
/// ``HoardError/Code/storageFull`` deletes this file, checkpoints and tries once
/// more; after a removal that frees space it grows the file again.
///
/// It is written with zeros, never sparse, so that its blocks are really taken
/// (a file system that compresses or deduplicates may still store it in less).
struct _SpaceReserve: Sendable {
    /// The file's path.
    let path: String
    /// The size it is grown to.
    let size: Int

    static let name = _StoreDirectory.indexName + "-reserve"
    /// 256 KiB: room for a deletion's log pages and a checkpoint's growth of the
    /// database on a small disk.
    static let defaultSize = 256 << 10

    init(directory: String, size: Int = defaultSize) {
        path = directory + "/" + Self.name
        self.size = size
    }

    /// Creates the file, or grows it, to ``size`` bytes of zeros. A symbolic link,
    /// a FIFO or anything but a regular file in its place is refused, never
    /// followed or waited on.
    ///
    /// - Throws: ``HoardError/Code/storageFull`` when the disk has no room for all
    ///   of it (the file keeps what was written, and is grown the next time);
    ///   another ``HoardError`` when it cannot be opened or written.
    func restore() throws(HoardError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { throw _FileSystem.error("could not create the store's full-disk reserve", path: path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw _FileSystem.error("could not inspect the store's full-disk reserve", path: path)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw HoardError(.ioFailed, "the store's full-disk reserve is not a regular file", path: path)
        }
        let current = Int(info.st_size)
        guard current < size else { return }
        let zeros = [UInt8](repeating: 0, count: size - current)
        if case .failure(let failure) = zeros.withUnsafeBytes({ _POSIX.write(fd, $0, at: current) }) {
            throw _FileSystem.error("could not write the store's full-disk reserve", path: path, errno: failure.code)
        }
    }

    /// Deletes the file, giving its space back; a file already gone is fine.
    func release() throws(HoardError) {
        try _FileSystem.removeFile(path)
    }
}
