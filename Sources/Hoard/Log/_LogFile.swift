import Foundation

/// An open message log file: positioned reads and writes, durability, and the
/// whole-file lock, each failure turned into a ``HoardError`` naming the file.
///
/// A value type over a descriptor; ``MessageLog`` owns it, uses it only under its
/// mutex, and closes it on deinit.
///
/// Package-visible for ``nonRegularKind(atPath:)``, which the `hoard` tool uses
/// before it opens a log; everything else is internal.
package struct _LogFile: Sendable {
    /// The descriptor.
    let descriptor: Int32
    /// The path, for error messages.
    let path: String
    /// Whether the descriptor was opened for writing.
    let isWritable: Bool
    /// Whether opening it created the file.
    var created = false

    /// Opens `path` for reading and writing, creating it when `create` is set; falls
    /// back to reading only when the file or its file system may not be written.
    ///
    /// Only a regular file (or a symbolic link to one) is a log: anything else at the
    /// path (a FIFO, a device, a socket, a directory) throws
    /// ``HoardError/Code/ioFailed`` and is not changed. A FIFO is opened without
    /// waiting for a writer, so that refusing it never hangs.
    static func open(path: String, writable: Bool, create: Bool) throws(HoardError) -> _LogFile {
        let file = try openAny(path: path, writable: writable, create: create)
        do throws(HoardError) {
            try file.requireRegularFile()
        } catch {
            file.close()
            throw error
        }
        return file
    }

    /// Throws unless the descriptor is a regular file; then clears the `O_NONBLOCK`
    /// it was opened with (which regular files ignore, but locks and I/O need not see).
    private func requireRegularFile() throws(HoardError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let failure = _POSIX.Failure(call: "fstat", code: errno)
            throw HoardError(
                .ioFailed, "could not inspect the log file: \(failure)", path: path, underlying: failure.asError)
        }
        guard let kind = Self.nonRegularKind(info.st_mode) else {
            let flags = fcntl(descriptor, F_GETFL)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
            return
        }
        throw HoardError(
            .ioFailed, "the path names \(kind), not a regular file, so it holds no message log; it was not changed",
            path: path)
    }

    /// What a file of `mode` (a `stat`'s `st_mode`) is when it is not a regular
    /// file, for messages: "a directory", "a FIFO (named pipe)", "a socket", "a
    /// device" or "a special file"; `nil` for a regular file.
    static func nonRegularKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFSOCK: return "a socket"
        case S_IFCHR, S_IFBLK: return "a device"
        default: return "a special file"
        }
    }

    /// What is at `path` when it is neither a regular file, nor a symbolic link to
    /// one, nor nothing: a kind as ``nonRegularKind(_:)`` names it; `nil` otherwise
    /// (a missing or unreadable path is for opening the log to report). Looks with
    /// `stat`, never `open`: a FIFO is not waited on and a device is not touched.
    package static func nonRegularKind(atPath path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return nonRegularKind(info.st_mode)
    }

    /// Opens `path` whatever it names (without waiting, should it be a FIFO).
    private static func openAny(path: String, writable: Bool, create: Bool) throws(HoardError) -> _LogFile {
        var refused: _POSIX.Failure?
        if writable {
            if create,
                case .success(let fd) = _POSIX.openFile(
                    path, writable: true, create: true, exclusively: true, nonBlocking: true)
            {
                var file = _LogFile(descriptor: fd, path: path, isWritable: true)
                file.created = true
                return file
            }
            switch _POSIX.openFile(path, writable: true, create: create, nonBlocking: true) {
            case .success(let fd):
                return _LogFile(descriptor: fd, path: path, isWritable: true)
            case .failure(let failure) where failure.isPermissionDenied:
                refused = failure  // try reading only
            case .failure(let failure):
                throw HoardError(
                    failure.isStorageFull ? .storageFull : .ioFailed, "could not open the log file: \(failure)",
                    path: path, underlying: failure.asError)
            }
        }
        switch _POSIX.openFile(path, writable: false, create: false, nonBlocking: true) {
        case .success(let fd):
            return _LogFile(descriptor: fd, path: path, isWritable: false)
        case .failure(let failure) where failure.isNoSuchFile && refused != nil:
            // The file is missing and cannot be created: say why it could not be.
            let cause = refused ?? failure
            throw HoardError(
                .ioFailed, "could not create the log file: \(cause)", path: path, underlying: cause.asError)
        case .failure(let failure):
            let what =
                failure.isNoSuchFile ? "there is no log file at this path" : "could not open the log file: \(failure)"
            throw HoardError(.ioFailed, what, path: path, underlying: failure.asError)
        }
    }

    /// Removes the file this open created, when it is still empty: what a creation
    /// that failed before its header was written leaves (on a full disk, say).
    func removeIfCreatedEmpty() {
        guard created, (try? size()) == 0 else { return }
        // Best effort: the caller is already throwing the error that matters.
        _POSIX.removeFile(path)
    }

    /// Closes the descriptor, releasing any lock.
    func close() {
        _POSIX.closeFile(descriptor)
    }

    /// ``HoardError/Code/storageFull`` when the storage is full (as the disk store
    /// reports it), ``HoardError/Code/ioFailed`` otherwise.
    private func failed(_ failure: _POSIX.Failure, _ doing: String) -> HoardError {
        HoardError(
            failure.isStorageFull ? .storageFull : .ioFailed, "could not \(doing): \(failure)", path: path,
            underlying: failure.asError)
    }

    // MARK: Locking

    /// Takes the file lock, shared for reading or exclusive for writing, waiting while
    /// another open file description (another instance, another process) holds a
    /// conflicting one.
    func lock(exclusive: Bool) throws(HoardError) {
        if case .failure(let failure) = _POSIX.lock(descriptor, exclusive ? .exclusive : .shared) {
            throw failed(failure, "lock the log file")
        }
    }

    /// Releases the file lock.
    func unlock() {
        _ = _POSIX.lock(descriptor, .unlock)
    }

    // MARK: Reading

    /// The file's size.
    func size() throws(HoardError) -> Int {
        switch _POSIX.size(descriptor) {
        case .success(let size): return size
        case .failure(let failure): throw failed(failure, "read the log file's size")
        }
    }

    /// Reads into `buffer` from `offset`; returns how many bytes were read, fewer than
    /// asked only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(HoardError) -> Int {
        switch _POSIX.read(descriptor, into: buffer, at: offset) {
        case .success(let count): return count
        case .failure(let failure): throw failed(failure, "read the log file")
        }
    }

    /// Reads up to `count` bytes from `offset`; fewer at the end of the file.
    func read(at offset: Int, count: Int) throws(HoardError) -> [UInt8] {
        guard count > 0 else { return [] }
        // Uninitialised: the read fills what the array keeps, so zeroing it first (a
        // whole log's worth, on a full read) would only cost time.
        var failure: HoardError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(HoardError) {
                initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads and parses the header.
    func readHeader() throws(HoardError) -> (parsed: _LogHeader.Parsed, bytesRead: Int) {
        try withUnsafeTemporaryAllocation(byteCount: _LogHeader.size, alignment: 8) { buffer throws(HoardError) in
            let got = try read(into: buffer, at: 0)
            return (_LogHeader.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<got])), got)
        }
    }

    // MARK: Writing

    /// Writes `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(HoardError) {
        if case .failure(let failure) = _POSIX.write(descriptor, bytes, at: offset) {
            throw failed(failure, "write the log file")
        }
    }

    /// Writes `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int) throws(HoardError) {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(HoardError) in try write(buffer, at: offset) }
        }
        try result.get()
    }

    /// Writes `buffers` back to back from `offset`, in as few system calls as possible.
    func write(_ buffers: UnsafeBufferPointer<UnsafeRawBufferPointer>, at offset: Int) throws(HoardError) {
        if case .failure(let failure) = _POSIX.write(descriptor, buffers, at: offset) {
            throw failed(failure, "write the log file")
        }
    }

    /// Writes the whole header.
    func writeHeader(_ header: _LogHeader) throws(HoardError) {
        try withUnsafeTemporaryAllocation(byteCount: _LogHeader.size, alignment: 8) { buffer throws(HoardError) in
            header.write(into: buffer)
            try write(UnsafeRawBufferPointer(buffer), at: 0)
        }
    }

    /// Writes the part of the header appends change (bytes 24..<64): one `pwrite`.
    func writeMutableHeader(_ header: _LogHeader) throws(HoardError) {
        try withUnsafeTemporaryAllocation(byteCount: _LogHeader.size, alignment: 8) { buffer throws(HoardError) in
            header.write(into: buffer)
            let start = _LogHeader.mutableStart
            try write(UnsafeRawBufferPointer(rebasing: buffer[start..<_LogHeader.size]), at: start)
        }
    }

    /// Overwrites `range` with zeros.
    func zero(_ range: Range<Int>) throws(HoardError) {
        guard !range.isEmpty else { return }
        let zeros = [UInt8](repeating: 0, count: min(range.count, 1 << 16))
        var position = range.lowerBound
        while position < range.upperBound {
            let count = min(zeros.count, range.upperBound - position)
            try write(count == zeros.count ? zeros : Array(zeros[0..<count]), at: position)
            position += count
        }
    }

    /// Makes every write so far durable (see ``_POSIX/synchronize(_:)``).
    func synchronize() throws(HoardError) {
        if case .failure(let failure) = _POSIX.synchronize(descriptor) {
            throw failed(failure, "synchronize the log file to its storage")
        }
    }

    /// Cuts the file to `size` bytes.
    func truncate(to size: Int) throws(HoardError) {
        if case .failure(let failure) = _POSIX.truncate(descriptor, to: size) {
            throw failed(failure, "truncate the log file")
        }
    }
}
