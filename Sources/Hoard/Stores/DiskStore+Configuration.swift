import Foundation
import Logging

extension DiskStore {
    /// How a ``DiskStore`` limits, stores and reports.
    ///
    /// ```swift
    /// let store = try DiskStore(named: "com.example.app", configuration: .init(
    ///     byteLimit: 512 << 20,             // 512 MiB of values
    ///     defaultExpiry: .days(7),
    ///     onEvent: { event in logger.warning("\(event)") }))
    /// ```
    public struct Configuration: Sendable {
        /// The most bytes of values the store holds, or `nil` for no byte limit.
        /// Defaults to `nil`. Must be at least 1.
        ///
        /// Counts the values' sizes only; the directory also holds keys, dates and
        /// the index's own structure. A write that takes the store over the limit
        /// evicts least-recently-accessed entries (never the ones just written) down
        /// to ``lowWaterMark`` of it. A single value larger than the limit is
        /// refused with ``HoardError/Code/valueTooLarge``.
        public var byteLimit: Int?

        /// The most entries the store holds, or `nil` for no count limit. Defaults to
        /// `nil`. Must be at least 1.
        ///
        /// A write that takes the store over the limit evicts least-recently-accessed
        /// entries (never the ones just written) down to ``lowWaterMark`` of it.
        public var countLimit: Int?

        /// The fraction of a limit the store evicts down to once a write exceeds it:
        /// at 0.75 a store limited to 1,000 entries that reaches 1,001 evicts down to
        /// 750. Only the limit the write exceeded is trimmed to this fraction; the
        /// other one, if set, is only kept. Must satisfy `0 < lowWaterMark <= 1`.
        /// Defaults to 0.75.
        ///
        /// Each round of evictions reads the access order in one pass over all
        /// entries, so a low-water mark near 1 makes writes at the limit pay that
        /// pass for a few evictions each: at 1, every write that exceeds the limit
        /// does.
        public var lowWaterMark: Double

        /// The lifetime of values written with the typed
        /// ``DiskStore/set(_:for:expires:in:codec:)`` without an explicit ``Expiry``.
        /// Defaults to ``Expiry/never``.
        public var defaultExpiry: Expiry

        /// The largest value, in bytes, kept inline in the index; larger values are
        /// written to their own file in `blobs/`. Defaults to 32 KiB (32,768). Must be
        /// between 0 and 1 GiB.
        ///
        /// A value a row of the index cannot hold with its key and namespace
        /// (SQLite's length limit, 1,000,000,000 bytes unless SQLite was built with
        /// another, less a margin for the row's other columns) goes to a file
        /// whatever this threshold says.
        public var spillThreshold: Int

        /// How many SQLite connections the store reads through, beside its one
        /// write connection. Defaults to the number of active processor cores, at
        /// most 16. Must be between 1 and 64.
        ///
        /// In the index's WAL mode, reads on different connections run at once and
        /// never wait for the writer: a read takes a connection free at the time
        /// and waits only when all are reading. Each connection is opened at its
        /// first use and keeps a page cache of its own (``pageCacheBytes``).
        public var readerCount: Int

        /// How long a write waits for another connection (another instance, another
        /// process) to release the store's write lock before it throws
        /// ``HoardError/Code/busy``, in seconds. Defaults to 5. Must not be negative;
        /// SQLite waits at most `Int32.max` milliseconds (about 24.8 days), so a longer
        /// timeout waits that long.
        public var busyTimeout: TimeInterval

        /// How stale a recorded access time may get, in seconds: a read records an
        /// access only when this instance has not recorded one for the entry within
        /// this time. Eviction order is least-recently-accessed at this resolution:
        /// with the default of 1 second, an entry read a second or more after
        /// another was written or read outlives it. Reads record in memory and
        /// never write: the times reach the index in a transaction of their own,
        /// off the reader's thread, once ``accessFlushCount`` of them wait or the
        /// oldest is ``accessFlushInterval`` old, and before every trim. Each recorded
        /// time costs one row write of its own (not the entry's row) when the times
        /// are flushed, about as much as a small read (`Benchmarks/README.md` has
        /// the figures), so a larger resolution makes random reads over many
        /// entries cheaper at the price of a coarser eviction order; 0 records
        /// every read.
        public var accessTimeResolution: TimeInterval

        /// How many bytes of the index's pages each of the store's connections keeps
        /// in memory (SQLite's page cache): the write connection and every read
        /// connection (``readerCount``), so a store may hold up to
        /// `(1 + readerCount) × pageCacheBytes`. Defaults to 8 MiB, four times
        /// SQLite's default, because writing recorded access times touches pages
        /// all over the index (`Benchmarks/README.md` has the comparison). Must not
        /// be negative; 0 leaves SQLite's minimum.
        public var pageCacheBytes: Int

        /// How many recorded accesses the store keeps in memory before writing them
        /// to the index in one transaction, on a queue of the store's own (the read
        /// that reaches the count does not wait for it). They are also written
        /// before a trim or an eviction, after ``accessFlushInterval``, by
        /// ``DiskStore/flushAccessTimes()``, and when the store is deallocated;
        /// a write does not carry them. Defaults to 10,000. Must be at least 1.
        ///
        /// A flush rewrites every page of the access table that holds one of its
        /// times: over 100,000 entries (a few hundred such pages) a batch of 1,000
        /// random accesses already rewrites most of them, so batches of 10,000
        /// rewrite about a tenth of the pages per access; the larger the store,
        /// the smaller that difference. Each pending access takes 32 bytes of
        /// memory, and each entry read within the last ``accessTimeResolution`` a
        /// slot of the access table (48 to 96 bytes); a flush holds the store's write
        /// connection while it writes its batch (writes of this instance wait for
        /// it).
        public var accessFlushCount: Int

        /// The longest, in seconds, a recorded access waits in memory before it is
        /// written: a flush is queued that long after the first access recorded
        /// since the last one (by the system's clock), and a read that finds the
        /// oldest access this old by the store's clock queues one at once. Defaults
        /// to 1.
        ///
        /// A process that crashes loses at most this interval of access order (the
        /// entries keep their older access times), never a value or an entry.
        public var accessFlushInterval: TimeInterval

        /// Whether a value file is flushed to stable storage (`fsync`) before it is
        /// renamed into place, and the `blobs/` directory (once per `set` or batch)
        /// after, before the entry that names the file is committed; and whether
        /// creating the store flushes its directory. A flush that fails fails the
        /// write (nothing is committed) or the opening; a file system that cannot
        /// flush directories at all (`fsync` answers `EINVAL`, as some network and
        /// FUSE file systems do) is taken to have nothing to flush, as SQLite
        /// takes it. Defaults to `true`.
        ///
        /// A killed process never leaves a damaged entry either way: the kernel
        /// still writes what the process wrote. This setting is about power loss
        /// and operating system crashes; without the flushes, such a crash can
        /// leave an entry whose file is empty, short or missing, which reads report
        /// as damaged and treat as a miss.
        public var syncsValueFiles: Bool

        /// Whether opening creates the store when the directory does not exist or
        /// is empty. Defaults to `true`; tools that inspect a store pass `false` so
        /// that a wrong path is an error, not a new empty store.
        public var createsStore: Bool

        /// Whether opening deletes files left behind by interrupted writes:
        /// temporary files, and value files no entry refers to. Defaults to `true`.
        /// It happens only when no other instance or process has the store open,
        /// and is reported as ``DiskStoreEvent/collectedOrphans(files:bytes:)``. A
        /// name that cannot be deleted (a directory, which is never entered) is
        /// reported as ``DiskStoreEvent/failed(operation:namespace:key:error:)`` and
        /// left; the store opens all the same.
        public var collectsOrphansAtOpen: Bool

        /// Whether opening upgrades a store of an older format to the current one
        /// (which happens only when no other instance or process has it open).
        /// Defaults to `true`; tools that only inspect a store pass `false`, so that
        /// looking at a store never leaves it in a format that the older program
        /// writing it cannot open: such a store is then refused with
        /// ``HoardError/Code/unsupportedFormat``, naming its version, and nothing
        /// is changed.
        public var migratesFormat: Bool

        /// Called with every event the store reports, on the thread that caused it,
        /// never while the store holds a lock. Defaults to `nil`. Events at open
        /// (orphans collected, or an orphan that could not be deleted) reach only
        /// this handler, as no stream exists yet.
        public var onEvent: (@Sendable (DiskStoreEvent) -> Void)?

        /// Where the store's events are logged, once each: damaged entries removed
        /// and failures behind the caller's back at `warning`, values kept because
        /// they do not decode at `notice`, sweeps and evictions at `debug`; with
        /// `hoard.store` (the directory), `hoard.tier` (`disk`), `hoard.operation`,
        /// `hoard.key` and `hoard.error` metadata. Reads and writes themselves are
        /// never logged. `nil` (the default) logs nothing.
        public var logger: Logger?

        /// For tests: SQLite's length limit (`SQLITE_LIMIT_LENGTH`) set on the
        /// store's connection, lower than SQLite's own, so that values too large
        /// for a row of the index need not be a gigabyte. `nil` (the default) keeps
        /// SQLite's.
        var indexLengthLimit: Int?

        /// For tests: called on a read connection, with its position among the
        /// store's read connections, while it holds the row it looked up, before
        /// the connection is released. `nil` (the default) for none.
        var readerGate: (@Sendable (Int) -> Void)?

        /// For tests: called by ``DiskStore/verify(repairing:progress:)`` after it
        /// has read a chunk of rows and before it reads their value files, outside
        /// every lock. `nil` (the default) for none.
        var verifyGate: (@Sendable () -> Void)?

        /// Creates a configuration; every parameter defaults as its property says.
        public init(
            byteLimit: Int? = nil,
            countLimit: Int? = nil,
            lowWaterMark: Double = 0.75,
            defaultExpiry: Expiry = .never,
            spillThreshold: Int = 32 << 10,
            busyTimeout: TimeInterval = 5,
            accessTimeResolution: TimeInterval = 1,
            accessFlushCount: Int = 10_000,
            accessFlushInterval: TimeInterval = 1,
            readerCount: Int = min(ProcessInfo.processInfo.activeProcessorCount, 16),
            pageCacheBytes: Int = 8 << 20,
            syncsValueFiles: Bool = true,
            createsStore: Bool = true,
            collectsOrphansAtOpen: Bool = true,
            migratesFormat: Bool = true,
            onEvent: (@Sendable (DiskStoreEvent) -> Void)? = nil,
            logger: Logger? = nil
        ) {
            self.byteLimit = byteLimit
            self.countLimit = countLimit
            self.lowWaterMark = lowWaterMark
            self.defaultExpiry = defaultExpiry
            self.spillThreshold = spillThreshold
            self.busyTimeout = busyTimeout
            self.accessTimeResolution = accessTimeResolution
            self.accessFlushCount = accessFlushCount
            self.accessFlushInterval = accessFlushInterval
            self.readerCount = readerCount
            self.pageCacheBytes = pageCacheBytes
            self.syncsValueFiles = syncsValueFiles
            self.createsStore = createsStore
            self.collectsOrphansAtOpen = collectsOrphansAtOpen
            self.migratesFormat = migratesFormat
            self.onEvent = onEvent
            self.logger = logger
        }

        /// Checks every setting.
        func validate() throws(HoardError) {
            if let byteLimit, byteLimit < 1 {
                throw HoardError(.invalidConfiguration, "byteLimit must be at least 1, not \(byteLimit)")
            }
            if let countLimit, countLimit < 1 {
                throw HoardError(.invalidConfiguration, "countLimit must be at least 1, not \(countLimit)")
            }
            guard lowWaterMark > 0, lowWaterMark <= 1 else {
                throw HoardError(
                    .invalidConfiguration, "lowWaterMark must be greater than 0 and at most 1, not \(lowWaterMark)")
            }
            guard spillThreshold >= 0, spillThreshold <= 1 << 30 else {
                throw HoardError(
                    .invalidConfiguration, "spillThreshold must be between 0 and 1 GiB, not \(spillThreshold)")
            }
            guard busyTimeout >= 0, busyTimeout.isFinite else {
                throw HoardError(.invalidConfiguration, "busyTimeout must be zero or more seconds, not \(busyTimeout)")
            }
            guard accessTimeResolution >= 0, accessFlushInterval >= 0 else {
                throw HoardError(
                    .invalidConfiguration, "accessTimeResolution and accessFlushInterval must not be negative")
            }
            guard pageCacheBytes >= 0 else {
                throw HoardError(.invalidConfiguration, "pageCacheBytes must not be negative, not \(pageCacheBytes)")
            }
            guard (1...64).contains(readerCount) else {
                throw HoardError(.invalidConfiguration, "readerCount must be between 1 and 64, not \(readerCount)")
            }
            guard accessFlushCount >= 1 else {
                throw HoardError(
                    .invalidConfiguration, "accessFlushCount must be at least 1, not \(accessFlushCount)")
            }
        }

        /// The byte count the store evicts down to once over ``byteLimit``.
        var byteLowWater: Int { byteLimit.map { _LowWaterMark.of($0, at: lowWaterMark) } ?? .max }
        /// The entry count the store evicts down to once over ``countLimit``.
        var countLowWater: Int { countLimit.map { _LowWaterMark.of($0, at: lowWaterMark) } ?? .max }
    }
}
