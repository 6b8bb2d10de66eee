import Foundation
import Logging
import Synchronization

/// An append-only log of messages in one file, with a byte budget: when it is full it
/// either refuses new messages or overwrites the oldest ones.
///
/// ```swift
/// struct Event: Codable, Sendable { var name: String; var at: Date }
///
/// let log = try MessageLog<Event>(
///     fileURL: logsDirectory.appendingPathComponent("events.log"),
///     maximumBytes: 1 << 20,          // the file never grows past 1 MiB
///     overwritesOldMessages: true)    // keep the newest events that fit
/// try log.append(Event(name: "launch", at: .now))
/// let events = try log.messages()     // oldest first
/// ```
///
/// What it guarantees:
/// - **Persisted on return.** When ``append(_:)`` returns, the message is in the file
///   (in the operating system's cache, so it survives the process crashing); with
///   ``Durability/fsync`` it is also on the storage device, so it survives power loss.
///   There is no in-memory buffer.
/// - **Within budget.** The file never grows past `maximumBytes`, its 64-byte header
///   included. Without overwrite, an append that does not fit throws
///   ``HoardError/Code/logFull`` and changes nothing; a message that could never fit
///   throws ``HoardError/Code/messageLargerThanBudget``. With overwrite, the oldest
///   messages make room; what remains is always the newest messages in order, and at
///   least the message just appended.
/// - **Safe to share.** Any number of threads and tasks may use one instance. Several
///   instances, in one process or in several, may open the same file: they take turns
///   through a `flock(2)` lock on the file (exclusive to append, shared to read), so each
///   sees the others' appends and no two records ever interleave. An instance that
///   appends keeps the lock for up to a millisecond (the *append lease*), so another
///   instance or process waits at most about that long.
/// - **Damage is found, never returned.** Every record carries a CRC-32C. A crash in
///   the middle of an append leaves a torn record that opening the log drops; any other
///   damage makes reads throw ``HoardError/Code/fileCorrupted`` with the byte offset,
///   and ``recover()`` keeps every intact message. No bytes in the file make it crash,
///   and none make it return a message that was not appended. (One limit: records
///   appended in the last lease before a crash are found by walking on from the
///   header, so damage among them reads as the end of the log, not as an error.)
/// - **Never rewritten by mistake.** A file that is not a message log, a log of an
///   unknown format version, and a log created with another budget or overwrite setting
///   are never written to: the last one stays readable, and ``isWritable`` is `false`.
///
/// The file format, the per-record check and the append lease that makes an append
/// one system call are described in <doc:TheMessageLogFormat>.
public final class MessageLog<Message: Sendable>: Sendable {
    /// When an append's bytes are known to be on the storage device.
    public enum Durability: Sendable, Hashable {
        /// When ``MessageLog/append(_:)`` returns, the message is in the operating
        /// system's cache: it survives the process crashing, not the machine losing
        /// power. After a power loss the newest appends may be missing: a torn last
        /// append is dropped on open, and when the system wrote the file's pages out of
        /// order reads may throw ``HoardError/Code/fileCorrupted`` until
        /// ``MessageLog/recover()``; never is a wrong message returned.
        case none
        /// Each append (each ``MessageLog/append(contentsOf:)`` batch) ends with a sync
        /// (`fdatasync`, `F_FULLFSYNC` on Apple platforms), so it survives power loss.
        /// An append that writes a checkpoint (see <doc:TheMessageLogFormat>) syncs once
        /// more, after that header and before its records, so that a power loss never
        /// leaves a header that still claims the records being overwritten.
        case fsync
    }

    /// The log file.
    public let fileURL: URL
    /// The file's byte budget, header included. For a log opened with
    /// ``init(forReadingFrom:codec:logger:)``, the budget the file was created with.
    public let maximumBytes: Int
    /// Whether a full log overwrites its oldest messages rather than refusing new
    /// ones. For a log opened with ``init(forReadingFrom:codec:logger:)``, the file's setting.
    public let overwritesOldMessages: Bool
    /// When an append's bytes are on the storage device.
    public let durability: Durability

    let codec: ValueCodec<Message>
    let path: String
    /// Where what happens to the file without an error reaching a caller is logged.
    let log: _MessageLogLogger
    /// Whether this instance was opened only to read (``init(forReadingFrom:codec:logger:)``).
    let readsOnly: Bool
    let state: Mutex<_LogState>
    /// The generation of the latest lease whose time is up: an append that finds its
    /// lease expired lets it go before going on (see ``_LogLease``).
    let leaseExpiry = Atomic<UInt64>(0)
    /// The generation of the lease this instance holds, or 0: lets a release timer whose
    /// lease is gone stop without waiting for the mutex.
    let leaseHeld = Atomic<UInt64>(0)

    /// Opens the log at `fileURL`, creating the file when it is missing.
    ///
    /// An existing log created with another `maximumBytes` or `overwritesOldMessages`
    /// opens for reading only: ``isWritable`` is `false` and appends throw
    /// ``HoardError/Code/fileNotWritable``. So does a log in a newer format version
    /// (reads and appends throw ``HoardError/Code/unsupportedFormat``) and one whose
    /// header is damaged (they throw ``HoardError/Code/fileCorrupted``, and
    /// ``recover()`` rebuilds it). A torn last append, left by a crash, is dropped.
    ///
    /// ```swift
    /// let log = try MessageLog<Data>(
    ///     fileURL: url, maximumBytes: 64 << 10, overwritesOldMessages: true, codec: .cacheValue)
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: A file URL. Its directory must exist.
    ///   - maximumBytes: The most bytes the file may hold, its 64-byte header
    ///     included; at least 72 (and at most 256 TiB). Each message takes 8 bytes more
    ///     than its encoding.
    ///   - overwritesOldMessages: Whether a full log drops its oldest messages to make
    ///     room (`true`) or refuses new ones (`false`).
    ///   - durability: Whether each append waits for the storage device. Defaults to
    ///     ``Durability/none``.
    ///   - codec: How messages become bytes and back.
    ///   - logger: Where the log reports what happens without an error reaching a
    ///     caller: a torn last append dropped on open (`notice`), a log that opened for
    ///     reading only (`notice`) or with an unusable header (`warning`), a lease
    ///     header the background timer could not write (`warning`), and what
    ///     ``recover()`` repaired (`warning`). Metadata: `hoard.store` (the file),
    ///     `hoard.tier` (`log`), `hoard.operation`, `hoard.error`. Nothing is logged per
    ///     append or per read. `nil` (the default) logs nothing.
    /// - Throws: ``HoardError/Code/invalidConfiguration`` for a budget outside
    ///   72 bytes…256 TiB or a URL that is not a file URL; ``HoardError/Code/fileCorrupted`` (offset 0) when
    ///   the file exists and is not a message log, in which case it is not changed;
    ///   ``HoardError/Code/storageFull`` when the storage is full;
    ///   ``HoardError/Code/ioFailed`` when the file cannot be opened, locked or read,
    ///   or the path names something other than a regular file (a FIFO, a device, a
    ///   directory; a symbolic link is followed), which is refused without waiting and
    ///   not changed.
    public init(
        fileURL: URL,
        maximumBytes: Int,
        overwritesOldMessages: Bool,
        durability: Durability = .none,
        codec: ValueCodec<Message>,
        logger: Logger? = nil
    ) throws(HoardError) {
        guard fileURL.isFileURL else {
            throw HoardError(.invalidConfiguration, "a message log needs a file URL, not \(fileURL.absoluteString)")
        }
        guard (_LogHeader.minimumBytes..._LogHeader.maximumBytes).contains(maximumBytes) else {
            throw HoardError(
                .invalidConfiguration,
                "maximumBytes is \(maximumBytes), but a message log needs at least \(_LogHeader.minimumBytes) "
                    + "(a 64-byte header and one 8-byte record prefix) and at most \(_LogHeader.maximumBytes)",
                path: fileURL.path)
        }
        let path = fileURL.path
        self.fileURL = fileURL
        self.maximumBytes = maximumBytes
        self.overwritesOldMessages = overwritesOldMessages
        self.durability = durability
        self.codec = codec
        self.path = path
        self.readsOnly = false
        let log = _MessageLogLogger(logger: logger, path: path)
        self.log = log
        let file = try _LogFile.open(path: path, writable: true, create: true)
        do throws(HoardError) {
            let opened = try Self._open(
                file, maximumBytes: maximumBytes, overwritesOldMessages: overwritesOldMessages,
                durability: durability, log: log)
            state = Mutex(opened)
        } catch {
            // A log this call created and could not start (no room for its header)
            // leaves no empty file behind.
            file.removeIfCreatedEmpty()
            file.close()
            throw error
        }
    }

    /// Opens an existing log to read it, with the budget and overwrite setting it was
    /// created with. The file is never created or written; a torn last append is
    /// skipped by reads rather than dropped.
    ///
    /// ```swift
    /// let log = try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
    /// for message in try log.newestMessages(10) { print(message.count) }
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: The log file.
    ///   - codec: How bytes become messages.
    ///   - logger: Where the log reports what happens without an error reaching a
    ///     caller (for a reader, only a lease it never takes; kept for symmetry with
    ///     the writing initializer). `nil` (the default) logs nothing.
    /// - Throws: ``HoardError/Code/invalidConfiguration`` for a URL that is not a
    ///   file URL; ``HoardError/Code/ioFailed`` when there is no file, it cannot be
    ///   read, or the path names something other than a regular file (a FIFO is refused
    ///   without waiting for a writer); ``HoardError/Code/fileCorrupted`` (offset 0) when it is not a message
    ///   log or its header is damaged; ``HoardError/Code/unsupportedFormat`` for a
    ///   format version this version of Hoard does not know.
    public init(forReadingFrom fileURL: URL, codec: ValueCodec<Message>, logger: Logger? = nil) throws(HoardError) {
        guard fileURL.isFileURL else {
            throw HoardError(.invalidConfiguration, "a message log needs a file URL, not \(fileURL.absoluteString)")
        }
        let path = fileURL.path
        let file = try _LogFile.open(path: path, writable: false, create: false)
        let header: _LogHeader
        do throws(HoardError) {
            try file.lock(exclusive: false)
            defer { file.unlock() }
            header = try Self._validHeader(file.readHeader().parsed, path: path)
        } catch {
            file.close()
            throw error
        }
        self.fileURL = fileURL
        self.maximumBytes = header.maximumBytes
        self.overwritesOldMessages = header.overwritesOldMessages
        self.durability = .none
        self.codec = codec
        self.path = path
        self.log = _MessageLogLogger(logger: logger, path: path)
        self.readsOnly = true
        state = Mutex(_LogState(file: file, isWritable: false))
    }

    deinit {
        state.withLock { state in
            _endLease(&state)
            state.file.close()
        }
    }

    // MARK: Where the log stands

    /// Whether appends are accepted: the file was created with this instance's
    /// `maximumBytes` and `overwritesOldMessages`, in a format version this code
    /// writes, its header was intact when last read, and it can be written.
    ///
    /// - Complexity: O(1); reads no file.
    public var isWritable: Bool {
        state.withLock { $0.isWritable }
    }

    /// The number of messages in the log now, as its header counts them.
    ///
    /// - Throws: ``HoardError/Code/fileCorrupted`` when the header is damaged,
    ///   ``HoardError/Code/unsupportedFormat``, or ``HoardError/Code/ioFailed``.
    /// - Complexity: O(1): reads the 64-byte header under a shared file lock.
    public var count: Int {
        get throws(HoardError) {
            try _withFileLock(exclusive: false) { _, header throws(HoardError) in header.count }
        }
    }

    /// Whether the log holds no message now.
    ///
    /// - Throws: As ``count``.
    /// - Complexity: O(1): reads the 64-byte header under a shared file lock.
    public var isEmpty: Bool {
        get throws(HoardError) { try count == 0 }
    }
}

/// What a ``MessageLog`` keeps behind its mutex.
struct _LogState: Sendable {
    /// The open file.
    var file: _LogFile
    /// Whether appends were accepted when the header was last read.
    var isWritable: Bool
    /// A header whose most recent append is known to be intact (this instance wrote
    /// it, or a read checked it). While the file's header equals it, appends skip
    /// checking the previous append and may use ``window``. While ``lease`` is held it
    /// is the exact header, ahead of the checkpoint in the file.
    var trusted: _LogHeader?
    /// Where appends read the records they evict: the file through a read-ahead window
    /// over the oldest records, valid while the file's header is `trusted`. Kept here,
    /// and passed `inout`, so that an append copies neither the file nor the window.
    var evictions: _WindowSlotSource
    /// The read-ahead window of ``evictions``.
    var window: _LogWindow? {
        get { evictions.window }
        set { evictions.window = newValue }
    }
    /// The append lease, while this instance holds the file's exclusive lock across
    /// appends; `trusted` is then the exact header and the file holds a checkpoint.
    var lease: _LogLease?
    /// The generation of the latest lease taken.
    var leaseGeneration: UInt64 = 0

    init(file: _LogFile, isWritable: Bool, trusted: _LogHeader? = nil) {
        self.file = file
        self.evictions = _WindowSlotSource(file: file, window: nil)
        self.isWritable = isWritable
        self.trusted = trusted
    }
}
