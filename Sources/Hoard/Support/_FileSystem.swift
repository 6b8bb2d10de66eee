import Foundation

/// Path-level file operations (kinds, directories, listings, removal) with `errno`
/// turned into ``HoardError``, for the disk store and housekeeping.
///
/// Reading and writing through a descriptor goes through ``_POSIX``, the one place
/// that loops over short transfers and retries on `EINTR`; this type only adds the
/// operations on paths. Foundation re-exports the C library on every platform Hoard
/// supports (Glibc on Linux, Darwin on Apple platforms), so nothing here branches on
/// the platform.
enum _FileSystem {
    /// The error code for an `errno` value a caller can act on, or `nil`.
    static func code(forErrno value: Int32) -> HoardError.Code? {
        switch value {
        case ENOSPC, EFBIG, EDQUOT: return .storageFull
        case EACCES, EPERM, EROFS: return .permissionDenied
        default: return nil
        }
    }

    /// An error for the current `errno`.
    static func error(_ what: String, path: String, errno value: Int32 = errno) -> HoardError {
        let cause = POSIXError(POSIXErrorCode(rawValue: value) ?? .EIO)
        let reason = String(cString: strerror(value))
        return HoardError(code(forErrno: value) ?? .ioFailed, "\(what): \(reason)", path: path, underlying: cause)
    }

    /// What is at a path, without following a final symbolic link.
    enum Kind { case missing, directory, file, other }

    static func kind(at path: String) -> Kind {
        kind(at: path, followingLinks: false)
    }

    /// What is at a path; with `followingLinks`, what a final symbolic link points
    /// to (a dangling link is `.missing`).
    static func kind(at path: String, followingLinks: Bool) -> Kind {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file
        default: return .other
        }
    }

    /// The size of the regular file at `path`, or `nil` when there is none.
    static func fileSize(at path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Creates a directory readable only by its owner (0700); succeeds if it exists.
    ///
    /// - Returns: Whether this call created it (its parent's entry for it is then
    ///   not yet flushed to stable storage; see ``syncDirectory(_:)``).
    @discardableResult
    static func makeDirectory(_ path: String) throws(HoardError) -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        if errno == EEXIST { return false }
        throw error("could not create a directory", path: path)
    }

    /// Creates `path` and its missing parents; the last component gets mode 0700,
    /// the parents the process's defaults.
    static func makeDirectories(_ path: String) throws(HoardError) {
        if kind(at: path) == .directory { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path, kind(at: parent) == .missing {
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            } catch {
                throw HoardError(
                    code(forErrno: (error as NSError).underlyingPOSIXCode) ?? .ioFailed,
                    "could not create the store's parent directory", path: parent, underlying: error)
            }
        }
        try makeDirectory(path)
    }

    /// The names in a directory, `.` and `..` excluded.
    static func contents(of path: String) throws(HoardError) -> [String] {
        guard let dir = opendir(path) else { throw error("could not list a directory", path: path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Reads up to `count` bytes from the start of a file.
    static func prefix(ofFile path: String, count: Int) -> [UInt8]? {
        // O_NONBLOCK: a FIFO put in the file's place is opened without waiting for a
        // writer (and then refused: it reads nothing).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        guard case .success(let read) = buffer.withUnsafeMutableBytes({ _POSIX.read(fd, into: $0, at: 0) }) else {
            return nil
        }
        return Array(buffer.prefix(read))
    }

    /// Flushes a directory's entries (a file created or renamed into it) to stable
    /// storage: once it returns, a power loss cannot lose them. A file's own `fsync`
    /// does not do this on every file system.
    ///
    /// A file system that cannot flush a directory at all (`fsync` fails with
    /// `EINVAL`, as on some FUSE and network file systems) has nothing to flush: as
    /// SQLite does, that is not an error, or every write of a large value would fail
    /// there.
    ///
    /// - Throws: ``HoardError/Code/permissionDenied``, ``HoardError/Code/storageFull``
    ///   or ``HoardError/Code/ioFailed`` when the directory cannot be opened or
    ///   flushing it fails; the entries may then not be on stable storage.
    static func syncDirectory(_ path: String) throws(HoardError) {
        try sync(path, flags: O_DIRECTORY, what: "a directory", unsupportedIsNothing: true)
    }

    /// Flushes a file's contents to stable storage.
    ///
    /// - Throws: ``HoardError/Code/permissionDenied``, ``HoardError/Code/storageFull``
    ///   or ``HoardError/Code/ioFailed`` when the file cannot be opened or flushing
    ///   it fails.
    static func syncFile(_ path: String) throws(HoardError) {
        try sync(path, flags: 0, what: "a file", unsupportedIsNothing: false)
    }

    /// Opens `path` read-only with `flags`, `fsync`s it (again when interrupted)
    /// and closes it.
    private static func sync(
        _ path: String, flags: Int32, what: String, unsupportedIsNothing: Bool
    ) throws(HoardError) {
        let fd = open(path, O_RDONLY | flags | O_CLOEXEC)
        guard fd >= 0 else { throw error("could not open \(what) to flush it to disk", path: path) }
        defer { close(fd) }
        while fsync(fd) != 0 {
            if errno == EINVAL && unsupportedIsNothing { return }
            if errno != EINTR { throw error("could not flush \(what) to disk", path: path) }
        }
    }

    /// Removes a file; a file already gone is not an error.
    static func removeFile(_ path: String) throws(HoardError) {
        if unlink(path) == 0 || errno == ENOENT { return }
        throw error("could not remove a file", path: path)
    }
}

extension NSError {
    /// The POSIX error code inside a Foundation file error, or 0.
    fileprivate var underlyingPOSIXCode: Int32 {
        if domain == NSPOSIXErrorDomain { return Int32(code) }
        if let inner = userInfo[NSUnderlyingErrorKey] as? NSError, inner.domain == NSPOSIXErrorDomain {
            return Int32(inner.code)
        }
        return 0
    }
}
