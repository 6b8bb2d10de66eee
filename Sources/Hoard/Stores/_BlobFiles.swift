import Foundation

/// The `blobs/` directory of a ``DiskStore``: values over the spill threshold, one
/// file each.
///
/// A file's name is never derived from the key's characters, so no key can reach a
/// path outside the directory: it is 16 hex digits of a hash of namespace and key,
/// a dash, and 16 hex digits of a random token unique to that write
/// (`3f1c…9a2e-77d0…41b5`). The token makes every write its own file: a write in
/// flight never touches the file a committed row refers to, and the row alone says
/// which file is current. Names read back from the index are checked against this
/// exact shape before they are used.
///
/// A file is written as `<name>.tmp`, flushed to stable storage (when configured),
/// and renamed to `<name>`: a file under its final name is always complete. Before
/// a row that names a new file commits, ``synchronizeEntries()`` flushes the
/// directory (when configured), so that a power loss cannot keep the row and lose
/// the file's name.
struct _BlobFiles: Sendable {
    /// The directory's path.
    let directory: String
    /// Whether to `fsync` a file before renaming it into place, and the directory
    /// before a row that names the file commits.
    let syncsFiles: Bool

    static let temporarySuffix = ".tmp"

    // MARK: Names

    /// A fresh name for a new file holding the value of `key` in `namespace`.
    static func makeName(namespace: String, key: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bit
        for byte in namespace.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash = (hash ^ 0xFF) &* 0x0000_0100_0000_01b3  // 0xFF never occurs in UTF-8: an unambiguous separator
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        var generator = SystemRandomNumberGenerator()
        let token = generator.next() | 1
        return hex(hash) + "-" + hex(token)
    }

    private static let digits = Array("0123456789abcdef".utf8)

    private static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for i in 0..<16 {
                buffer[i] = digits[Int((value >> UInt64(60 - 4 * i)) & 0xF)]
            }
            return 16
        }
    }

    /// Whether `name` has the exact shape of a blob file name (33 characters, hex
    /// digits and one dash): the only names the store ever opens or deletes.
    static func isValidName(_ name: some StringProtocol) -> Bool {
        let bytes = name.utf8
        guard bytes.count == 33 else { return false }
        for (i, byte) in bytes.enumerated() {
            if i == 16 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !((byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)) {
                return false
            }
        }
        return true
    }

    /// Whether `name` is a temporary file this directory's writers leave behind
    /// when interrupted.
    static func isTemporaryName(_ name: String) -> Bool {
        name.hasSuffix(temporarySuffix) && isValidName(name.dropLast(temporarySuffix.count))
    }

    func path(of name: String) -> String {
        directory + "/" + name
    }

    // MARK: Files

    /// Writes `data` under `name`: a temporary file, flushed, then renamed into
    /// place. On failure nothing is left behind.
    ///
    /// - Throws: ``HoardError/Code/storageFull``, ``HoardError/Code/permissionDenied``
    ///   or ``HoardError/Code/ioFailed``.
    func write(_ data: Data, as name: String) throws(HoardError) {
        let temporary = path(of: name) + Self.temporarySuffix
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw _FileSystem.error("could not create a value file", path: temporary) }
        var failure: HoardError?
        if case .failure(let written) = data.withUnsafeBytes({ _POSIX.write(fd, $0, at: 0) }) {
            failure = _FileSystem.error("could not write a value file", path: temporary, errno: written.code)
        } else if syncsFiles, fsync(fd) != 0 {
            failure = _FileSystem.error("could not flush a value file to disk", path: temporary)
        }
        if close(fd) != 0, failure == nil {
            failure = _FileSystem.error("could not close a value file", path: temporary)
        }
        if failure == nil, rename(temporary, path(of: name)) != 0 {
            failure = _FileSystem.error("could not move a value file into place", path: temporary)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }

    /// Flushes the directory's entries to stable storage, when ``syncsFiles``: every
    /// file ``write(_:as:)`` renamed into place before this call then survives a power
    /// loss. Call it after writing a batch's files and before committing the rows
    /// that name them; one call covers them all.
    ///
    /// - Throws: ``HoardError/Code/permissionDenied``, ``HoardError/Code/storageFull``
    ///   or ``HoardError/Code/ioFailed`` when the directory cannot be opened or
    ///   flushed: the rows must not commit.
    func synchronizeEntries() throws(HoardError) {
        guard syncsFiles else { return }
        try _FileSystem.syncDirectory(directory)
    }

    /// The outcome of reading a value file.
    enum ReadResult {
        case data(Data)
        case missing
        case sizeMismatch(actual: Int)
        /// A symbolic link, a directory, a FIFO…: never followed or read.
        case notARegularFile
    }

    /// Reads the file `name`, which should hold exactly `size` bytes. A symbolic
    /// link is never followed (`O_NOFOLLOW`), and nothing but a regular file is read.
    ///
    /// - Throws: When the file exists but cannot be read.
    func read(_ name: String, size: Int) throws(HoardError) -> ReadResult {
        let filePath = path(of: name)
        let fd = open(filePath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return .missing }
            if errno == ELOOP { return .notARegularFile }
            throw _FileSystem.error("could not open a value file", path: filePath)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw _FileSystem.error("could not inspect a value file", path: filePath) }
        if info.st_mode & S_IFMT != S_IFREG { return .notARegularFile }
        if Int(info.st_size) != size { return .sizeMismatch(actual: Int(info.st_size)) }
        if size == 0 { return .data(Data()) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        switch _POSIX.read(fd, into: buffer, at: 0) {
        case .failure(let failure):
            buffer.deallocate()
            throw _FileSystem.error("could not read a value file", path: filePath, errno: failure.code)
        case .success(let count) where count != size:
            buffer.deallocate()
            return .sizeMismatch(actual: count)
        case .success:
            break
        }
        return .data(
            Data(
                bytesNoCopy: buffer.baseAddress!, count: size,
                deallocator: .custom { pointer, _ in
                    pointer.deallocate()
                }))
    }

    /// Removes the file `name`; one already gone is fine.
    ///
    /// A name that is not one file of this directory (empty, `.` or `..`, or with
    /// a `/` or a NUL in it) names no value file, and nothing is removed: such a
    /// name can only come from a damaged index row, and must never reach a path
    /// outside `blobs/`.
    func remove(_ name: String) throws(HoardError) {
        guard _LocalNames.isComponent(name) else { return }
        try _FileSystem.removeFile(path(of: name))
    }

    /// The size of the file `name`, or `nil` when it does not exist or is not a
    /// regular file (a symbolic link is not followed).
    func size(of name: String) -> Int? {
        var info = stat()
        guard lstat(path(of: name), &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// Every name in the directory.
    func allNames() throws(HoardError) -> [String] {
        try _FileSystem.contents(of: directory)
    }
}

extension _BlobFiles.ReadResult {
    /// What this read of the value file `name` of an entry says is wrong with it,
    /// or `nil` when the file holds the entry's value: `size` bytes whose CRC-32C
    /// (with `namespace` and `key`) is `crc`. The one judgement of a value file, for
    /// reads and for ``DiskStore/verify(repairing:progress:)``.
    func damage(name: String, size: Int, crc: UInt32, namespace: String, key: String) -> StoreDamage? {
        switch self {
        case .missing:
            return StoreDamage(
                namespace: namespace, key: key, reason: .missingFile, detail: "the value file blobs/\(name) is missing")
        case .notARegularFile:
            return StoreDamage(
                namespace: namespace, key: key, reason: .missingFile,
                detail: "blobs/\(name) is not a regular file (a symbolic link is never followed)")
        case .sizeMismatch(let actual):
            return StoreDamage(
                namespace: namespace, key: key, reason: .fileSizeMismatch,
                detail: "the value file blobs/\(name) has \(actual) bytes, the entry says \(size)")
        case .data(let data):
            let actual = data.withUnsafeBytes { _DiskIndex.checksum($0, namespace: namespace, key: key) }
            guard actual != crc else { return nil }
            return StoreDamage(
                namespace: namespace, key: key, reason: .checksumMismatch,
                detail: "the value file blobs/\(name) does not match its checksum")
        }
    }
}
