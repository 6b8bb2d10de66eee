import Foundation

/// The error every `Hoard` API throws.
///
/// A `HoardError` carries a ``Code`` a caller can switch on, a message a person can
/// read, the key or path involved when there is one, and the underlying error that
/// caused it, if any. Its `description` is a sentence that says what went wrong and
/// what to look at.
///
/// ```swift
/// do {
///     let user = try codec.decode(bytes)
/// } catch let error as HoardError where error.code == .decodingFailed {
///     // the stored bytes are stale or damaged: treat as a miss
/// }
/// ```
public struct HoardError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in later versions, so
    /// `switch` over it with a `default` clause.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The raw name of the code, stable across versions.
        public let rawValue: String

        /// Creates a code from its raw name.
        public init(_ rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// A configuration value is out of range (a negative limit, a low-water mark
        /// outside `0 < mark <= 1`, a shard count below one, …).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A value could not be turned into bytes.
        public static let encodingFailed = Code("encodingFailed")
        /// Stored bytes could not be turned back into a value: damaged, or written by
        /// an older version of the type.
        public static let decodingFailed = Code("decodingFailed")
        /// No codec is available for the value type: it is neither `CacheValue` nor
        /// `Codable`, and none was given.
        public static let noCodec = Code("noCodec")
        /// A path that should hold a Hoard store holds something else: a file, a
        /// directory with other contents, or a database that is not a Hoard store.
        /// Nothing at the path was changed.
        public static let notAStore = Code("notAStore")
        /// The store or log was written in a format version this version of Hoard
        /// cannot read. Nothing was changed.
        public static let unsupportedFormat = Code("unsupportedFormat")
        /// The disk (or the file size limit of the process) is full. The operation
        /// had no effect; the store stays usable and works again once there is room.
        public static let storageFull = Code("storageFull")
        /// The operating system refused access to a file or directory of the store.
        /// The operation had no effect.
        public static let permissionDenied = Code("permissionDenied")
        /// Another connection (in this process or another one) held the store's
        /// write lock for longer than the busy timeout, or a store that needs
        /// migrating to the current format is open in another instance or process.
        /// Nothing was changed.
        public static let busy = Code("busy")
        /// The store's index database is damaged beyond what removing single entries
        /// repairs.
        public static let storeDamaged = Code("storeDamaged")
        /// A value is larger than the store can hold: over its byte limit on its own,
        /// or (with its key and namespace) over what its index can hold. Nothing was
        /// stored.
        public static let valueTooLarge = Code("valueTooLarge")
        /// A file operation (open, read, write, sync, lock) of a store or log failed
        /// for another reason; `underlying` says which.
        public static let ioFailed = Code("ioFailed")
        /// An HTTP fetch got a response outside 200–299.
        public static let httpFailed = Code("httpFailed")
        /// A message is larger than a message log can ever hold: more than its byte
        /// budget minus the 64-byte header and the record's 8-byte prefix, or more
        /// than the format's limit of 2 GiB - 1 bytes.
        public static let messageLargerThanBudget = Code("messageLargerThanBudget")
        /// A message log that does not overwrite old messages has no room left for
        /// this message. Nothing was written.
        public static let logFull = Code("logFull")
        /// The file cannot be written as asked: it is a log created with a different
        /// budget or overwrite setting, or it is read-only. It was not changed.
        public static let fileNotWritable = Code("fileNotWritable")
        /// The file's bytes are not what they should be: not a log at all, or a log
        /// with a damaged header or record. ``HoardError/offset`` says where.
        public static let fileCorrupted = Code("fileCorrupted")
        /// A write to a ``SettingsStore`` would add an item while all settings stores
        /// together already hold ``SettingsStore/Configuration/itemLimit`` items. The
        /// message names the limit, its configured value and the current count.
        /// Nothing was stored.
        public static let settingsItemLimitReached = Code("settingsItemLimitReached")
        /// A value's encoded bytes are more than a ``SettingsStore``'s
        /// ``SettingsStore/Configuration/valueByteLimit``. The message names the
        /// limit, its configured value and the value's size. Nothing was stored.
        public static let settingsValueTooLarge = Code("settingsValueTooLarge")
        /// A name that would become part of a file or suite name (a settings
        /// namespace, a store name) is empty, too long, or holds characters that
        /// could reach outside Hoard's own folders and suites. Nothing was touched.
        public static let invalidName = Code("invalidName")
        /// An argument of a write is outside what any store can keep: a stored date
        /// that is not a finite date (NaN or infinite), or an expiry that is NaN. The
        /// change was refused alone; nothing was stored for it. Or a freshness filter
        /// of a read that no entry can satisfy: a NaN or negative `maxAge`, a NaN
        /// `newerThan`; no tier was read and nothing was fetched.
        public static let invalidArgument = Code("invalidArgument")
    }

    /// What kind of failure this is.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The string form of the key involved, when the failure concerns one key.
    public let key: String?
    /// The file system path involved, when there is one.
    public let path: String?
    /// The byte offset in the file where the failure was found, when there is one
    /// (for example the damaged record of a ``Code/fileCorrupted`` error).
    public let offset: Int?
    /// The error that caused this one, when there is one.
    public let underlying: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        key: String? = nil,
        path: String? = nil,
        offset: Int? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.key = key
        self.path = path
        self.offset = offset
        self.underlying = underlying
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let key { text += " (key: \(key.prefix(200)))" }
        if let path { text += " (path: \(path))" }
        if let offset { text += " (at byte offset \(offset))" }
        if let underlying { text += " — caused by: \(underlying)" }
        return text
    }
}
