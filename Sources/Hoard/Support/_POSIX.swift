import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("Hoard's file-backed types need a POSIX C library")
#endif

/// Every call Hoard makes into the C library for file I/O, and every platform
/// difference among them, in one place. The rest of the code never branches on the
/// platform.
///
/// Each function retries on `EINTR`, loops over short reads and writes, and returns
/// the `errno` of a failure as ``Failure`` instead of setting global state.
enum _POSIX {
    /// A failed call: its name and the `errno` it set.
    struct Failure: Error, Sendable, CustomStringConvertible {
        var call: String
        var code: Int32

        /// The error as Foundation's `POSIXError` when Foundation knows the code,
        /// for callers who want to match `.ENOSPC` and friends; this value otherwise.
        var asError: any Error {
            if let known = POSIXErrorCode(rawValue: code) { return POSIXError(known) }
            return self
        }

        /// Whether the call failed because the file or its file system may not be
        /// written (as opposed to a missing file or an I/O error).
        var isPermissionDenied: Bool { code == EACCES || code == EPERM || code == EROFS }

        /// Whether the file does not exist.
        var isNoSuchFile: Bool { code == ENOENT }

        /// Whether the call failed because the storage is full (no space, the file
        /// size limit, the disk quota).
        var isStorageFull: Bool { code == ENOSPC || code == EFBIG || code == EDQUOT }

        var description: String { "\(call): \(String(cString: strerror(code))) (errno \(code))" }
    }

    /// How ``lock(_:_:)`` locks a whole file: `flock(2)` locks belong to the open
    /// file description, so two descriptors of one file exclude each other even in
    /// one process, and a process that dies releases its locks.
    enum LockKind {
        case shared, exclusive, unlock
    }

    /// Opens a file; `create` adds `O_CREAT` with mode 0600 (owner only, as the
    /// disk store's files), `nonBlocking` adds `O_NONBLOCK` (opening a FIFO then
    /// never waits for its other end). The descriptor is close-on-exec.
    static func openFile(
        _ path: String, writable: Bool, create: Bool, exclusively: Bool = false, nonBlocking: Bool = false
    ) -> Result<Int32, Failure> {
        var flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC
        if create { flags |= O_CREAT }
        if exclusively { flags |= O_EXCL }
        if nonBlocking { flags |= O_NONBLOCK }
        while true {
            let fd = path.withCString { open($0, flags, 0o600) }
            if fd >= 0 { return .success(fd) }
            if errno != EINTR { return .failure(Failure(call: "open", code: errno)) }
        }
    }

    /// Removes the file name `path` (not following a link there).
    @discardableResult
    static func removeFile(_ path: String) -> Result<Void, Failure> {
        path.withCString { unlink($0) } == 0 ? .success(()) : .failure(Failure(call: "unlink", code: errno))
    }

    /// Closes a descriptor. Errors are ignored: there is nothing left to do with it.
    static func closeFile(_ fd: Int32) {
        _ = close(fd)
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Result<Int, Failure> {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n > 0 {
                done += n
            } else if n == 0 {
                break
            } else if errno != EINTR {
                return .failure(Failure(call: "pread", code: errno))
            }
        }
        return .success(done)
    }

    /// Writes all of `bytes` at `offset`. A write that makes no progress fails with
    /// `EIO` rather than spinning.
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Result<Void, Failure> {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n > 0 {
                done += n
            } else if n == 0 {
                return .failure(Failure(call: "pwrite", code: EIO))
            } else if errno != EINTR {
                return .failure(Failure(call: "pwrite", code: errno))
            }
        }
        return .success(())
    }

    /// Writes `buffers` one after the other, starting at `offset`, with as few
    /// system calls as the kernel allows (`pwritev`, at most `IOV_MAX` buffers a call).
    static func write(
        _ fd: Int32, _ buffers: UnsafeBufferPointer<UnsafeRawBufferPointer>, at offset: Int
    ) -> Result<Void, Failure> {
        let perCall = 1024  // IOV_MAX on Linux and Darwin
        var first = 0
        var position = offset
        while first < buffers.count {
            let batch = min(perCall, buffers.count - first)
            let total = (first..<first + batch).reduce(0) { $0 + buffers[$1].count }
            let written = withUnsafeTemporaryAllocation(of: iovec.self, capacity: batch) { vectors in
                for i in 0..<batch {
                    let buffer = buffers[first + i]
                    vectors[i] = iovec(
                        iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
                }
                while true {
                    let n = pwritev(fd, vectors.baseAddress!, Int32(batch), off_t(position))
                    if n >= 0 || errno != EINTR { return n }
                }
            }
            if written < 0 { return .failure(Failure(call: "pwritev", code: errno)) }
            if written < total {
                // A short write (a full disk, a signal): finish buffer by buffer.
                var skip = written
                var cursor = position
                for i in first..<first + batch {
                    let buffer = buffers[i]
                    defer { cursor += buffer.count }
                    if skip >= buffer.count {
                        skip -= buffer.count
                        continue
                    }
                    let rest = UnsafeRawBufferPointer(rebasing: buffer[skip...])
                    if case .failure(let failure) = write(fd, rest, at: cursor + skip) {
                        return .failure(failure)
                    }
                    skip = 0
                }
            }
            position += total
            first += batch
        }
        return .success(())
    }

    /// Makes everything written so far durable: `fcntl(F_FULLFSYNC)` on Apple
    /// platforms (plain `fsync` does not flush the drive's cache there), falling back
    /// to `fsync` where the file system does not support it; `fdatasync` elsewhere.
    static func synchronize(_ fd: Int32) -> Result<Void, Failure> {
        while true {
            #if canImport(Darwin)
            if fcntl(fd, F_FULLFSYNC) == 0 { return .success(()) }
            if errno == EINTR { continue }
            if fsync(fd) == 0 { return .success(()) }
            #else
            if fdatasync(fd) == 0 { return .success(()) }
            #endif
            if errno != EINTR { return .failure(Failure(call: "fsync", code: errno)) }
        }
    }

    /// Takes, converts or releases a whole-file `flock(2)` lock, waiting as long as
    /// another open file description holds a conflicting one.
    static func lock(_ fd: Int32, _ kind: LockKind) -> Result<Void, Failure> {
        let operation: Int32
        switch kind {
        case .shared: operation = LOCK_SH
        case .exclusive: operation = LOCK_EX
        case .unlock: operation = LOCK_UN
        }
        while true {
            if flock(fd, operation) == 0 { return .success(()) }
            if errno != EINTR { return .failure(Failure(call: "flock", code: errno)) }
        }
    }

    /// The file's size in bytes.
    static func size(_ fd: Int32) -> Result<Int, Failure> {
        var info = stat()
        if fstat(fd, &info) != 0 { return .failure(Failure(call: "fstat", code: errno)) }
        return .success(Int(info.st_size))
    }

    /// Cuts the file to `size` bytes.
    static func truncate(_ fd: Int32, to size: Int) -> Result<Void, Failure> {
        while true {
            if ftruncate(fd, off_t(size)) == 0 { return .success(()) }
            if errno != EINTR { return .failure(Failure(call: "ftruncate", code: errno)) }
        }
    }

    /// The wall-clock time as the kernel last stored it, at its tick's resolution,
    /// in seconds since the reference date (see ``CoarseSystemClock``): never ahead
    /// of the precise clock. Where the platform has no such clock (Apple platforms,
    /// whose `Date()` reads shared memory and costs no more), the precise time.
    static func coarseTimeSinceReferenceDate() -> Double {
        #if os(Linux) || os(Android)
        var time = timespec()
        // CLOCK_REALTIME_COARSE cannot fail for a valid timespec pointer.
        _ = clock_gettime(CLOCK_REALTIME_COARSE, &time)
        return Double(time.tv_sec) - Date.timeIntervalBetween1970AndReferenceDate + Double(time.tv_nsec) * 1e-9
        #else
        return Date().timeIntervalSinceReferenceDate
        #endif
    }

    /// The calling thread's identity (its `pthread_t` as an integer): the same for
    /// every call on one thread, and different from every other live thread's.
    static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }
}
