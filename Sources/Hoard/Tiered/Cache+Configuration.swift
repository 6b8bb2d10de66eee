import Foundation
import Logging

extension Cache {
    /// How a ``Cache`` is built: its tiers, lifetimes and write mode.
    ///
    /// ```swift
    /// var configuration = Cache<String, User>.Configuration(name: "users")
    /// configuration.memory = .init(countLimit: 10_000, policy: .tinyLFU)
    /// configuration.defaultExpiry = .hours(1)
    /// configuration.staleWhileRevalidate = 60
    /// let users = try Cache(configuration: configuration) { id in try await api.user(id) }
    /// ```
    public struct Configuration: Sendable {
        /// The cache's name: the namespace it uses in every store, and the name of its
        /// default disk store. Must be one path component: not empty, `.` or `..`, no
        /// `/` or NUL, at most 255 bytes (else the cache throws
        /// ``HoardError/Code/invalidName``).
        public var name: String

        /// Limits, policy and sharding of the memory tier. Its `defaultExpiry` is
        /// ignored: ``defaultExpiry`` applies to every tier. Defaults to 10,000
        /// entries, LRU.
        public var memory: MemoryCache<Key, Value>.Configuration

        /// The local (synchronous, on this machine) stores below memory, in the order
        /// reads try them. Defaults to ``LocalStores/defaultDisk``.
        public var localStores: LocalStores

        /// The byte limit of the default disk store (``LocalStores/defaultDisk``):
        /// past it, a write evicts least-recently-accessed entries, as
        /// ``DiskStore/Configuration/byteLimit`` says. Defaults to
        /// ``defaultDiskByteLimit`` (150,000,000 bytes); `nil`
        /// lets the store grow without bound. Must be at least 1. Stores given with
        /// ``LocalStores/stores(_:)`` keep their own limits.
        public var diskByteLimit: Int?

        /// The default of ``diskByteLimit``: 150,000,000 bytes.
        public static var defaultDiskByteLimit: Int { 150_000_000 }

        /// Stores shared over the network, tried after the local stores. Defaults to none.
        public var remoteStores: [any RemoteCacheStore]

        /// The lifetime of entries written without an explicit ``Expiry``, in every
        /// tier. Defaults to ``Expiry/never``. A NaN lifetime (`.after(.nan)`) is
        /// rejected, as in ``localExpiry`` and ``remoteExpiry``.
        public var defaultExpiry: Expiry

        /// The lifetime of entries in the local stores when it should differ from
        /// ``defaultExpiry``; `nil` (the default) uses the entry's own lifetime.
        /// A shorter lifetime here never outlives the entry's own. It bounds every
        /// copy in the local stores, counted from when the copy is made: a value
        /// written or fetched here, promoted from a remote store, or written as an
        /// entry (`set(_ entry:for:)`). With remote
        /// stores, this is how long a local copy can outlive an invalidation this
        /// instance missed.
        public var localExpiry: Expiry?

        /// The lifetime of entries in the remote stores when it should differ from
        /// ``defaultExpiry``; `nil` (the default) uses the entry's own lifetime. It
        /// bounds every copy written there, counted from the write.
        public var remoteExpiry: Expiry?

        /// How `cache[key] = value` reaches the stores. Defaults to
        /// ``WriteMode/writeBehind``.
        public var writeMode: WriteMode

        /// The most bytes of values waiting for the stores in write-behind mode.
        /// Defaults to ``defaultWriteQueueByteLimit`` (64 MiB); `nil` for no bound.
        /// Must be at least 1.
        ///
        /// Past it, `cache[key] = value` blocks its thread until the writer has
        /// applied enough (a producer faster than the stores goes at their pace;
        /// nothing is dropped), and a value found in a slower tier is promoted into
        /// memory only. A value's size is its ``CacheValue/cacheCost`` (the byte
        /// count of `Data` and `String`; a cost below zero counts as 0, and one
        /// past 2^32 − 1 as 2^32 − 1, as in the memory tier); values of other types
        /// count as a running average of the encoded sizes of recent batches
        /// (1 KiB until the first batch is encoded). A single value larger than
        /// the budget is queued when the queue is empty. The async writes
        /// (``Cache/set(_:for:expires:)``) return once applied, so they never
        /// wait for room.
        public var writeQueueByteLimit: Int?

        /// The default of ``writeQueueByteLimit``: 64 MiB.
        public static var defaultWriteQueueByteLimit: Int { 64 << 20 }

        /// Seconds past its expiry during which a value is still served, at once,
        /// while one background fetch refreshes it. `nil` (the default) serves no
        /// stale values. Needs a fetch closure to refresh. Must be finite: to serve
        /// stale values for as long as a refresh takes, give a bound as long as you
        /// like (`365 * 86_400`). The refresh belongs to the read that found the
        /// stale value: a write, removal or clear of the key made since that read
        /// began is never replaced by it (nothing is refreshed, or the refreshed
        /// value is dropped). A refresh whose fetch returns `nil` removes the stale
        /// value from every tier (again unless the key changed since that read), so
        /// a value the source no longer has is not served for the rest of the grace
        /// period; with ``negativeCaching``, memory then remembers the miss.
        public var staleWhileRevalidate: TimeInterval?

        /// Seconds a fetch that returned `nil` is remembered, so the key is not
        /// fetched again meanwhile. `nil` (the default) remembers nothing. Kept in
        /// memory only.
        public var negativeCaching: TimeInterval?

        /// Spread of relative lifetimes, as a fraction: at 0.1 an entry written with
        /// `.minutes(10)` lives between 9 and 11 minutes, so entries written together
        /// do not expire together. Must be in `0..<1`. Defaults to 0.
        public var expiryJitter: Double

        /// How values become bytes for the stores. `nil` (the default) uses
        /// ``ValueCodec/automatic()``: the type's own encoding for a ``CacheValue``
        /// (`Data`, `String`), JSON for a `Codable` value, whichever initializer
        /// made the configuration. A type that is neither needs a codec
        /// (``init(name:codec:)``) or no stores (``memoryOnly(name:)``).
        public var codec: ValueCodec<Value>?

        /// Called for every failure that happens behind the caller's back (a
        /// write-behind write, a promotion, a damaged entry, a background refresh),
        /// after it is also published on ``Cache/events``. Defaults to `nil`.
        ///
        /// A failure of a store write (or an encoding) is handed over on a serial
        /// queue of the cache's own, in order, never on the thread the cache's writes
        /// wait for: the closure may write to the cache, in write-through mode too.
        /// ``Cache/flush()`` returns once it has been called for the writes flushed.
        /// Other failures reach it on the thread that met them.
        public var onError: (@Sendable (CacheFailure) -> Void)?

        /// Where failures behind the caller's back are logged, once each, at
        /// `warning` (or `debug` for a promotion a newer write made unnecessary),
        /// with `hoard.store` (the cache's name), `hoard.tier`,
        /// `hoard.operation`, `hoard.key` and `hoard.error` metadata. Nothing on
        /// the read or write path itself is logged at `info` or above. `nil` (the
        /// default) logs nothing.
        ///
        /// A failure of a store write (or an encoding) is logged where ``onError``
        /// gets it, just before: on the cache's serial callback queue, so a log
        /// handler may write to the cache, in write-through mode too.
        public var logger: Logger?

        /// Seconds after which the cache retries, on its own, the repair of a store
        /// that failed a change: `nil` retries only with the next write or
        /// ``Cache/flush()``. Defaults to ``defaultRepairRetryInterval`` (5
        /// seconds). Must be more than zero and at most a day.
        ///
        /// A store that fails a write (unreachable, busy, a full disk) may still
        /// hold the value the write replaced or removed. The cache does not read
        /// that key from the store until it has removed it there, and sends the
        /// removal with the store's next share of a write, or with a flush. A cache
        /// that writes nothing more would leave the older value in the store for
        /// every other cache over it, so while a repair is owed the cache flushes
        /// after this many seconds, doubling the wait after each retry the store
        /// fails (up to five minutes, or this interval when it is longer) and
        /// starting over once every repair is applied. A failed repair is not
        /// reported again: the failure of the write it repairs was.
        public var repairRetryInterval: TimeInterval?

        /// The default of ``repairRetryInterval``: 5 seconds.
        public static var defaultRepairRetryInterval: TimeInterval { 5 }

        /// For tests: waits for the delay of a timed repair retry in place of
        /// `Task.sleep(for:)`.
        var _repairRetrySleep: (@Sendable (Duration) async throws -> Void)?

        /// Called with the duration of every fetch, store read and store write
        /// (one per batch and store), for metrics (the `HoardMetrics` product turns
        /// them into swift-metrics timers). Fetches and store reads are timed on the
        /// thread that did the work: keep it short. Store writes are handed over
        /// afterwards, as ``onError`` gets their failures: on a serial queue of the
        /// cache's own, which the cache's writes never wait for, before
        /// ``Cache/flush()`` returns. `nil` (the default) times nothing and costs
        /// nothing.
        public var timings: (@Sendable (CacheTiming) -> Void)?

        /// For tests: called with the string of another instance's invalidation of
        /// a key this cache cannot rebuild from its string, once the cache has
        /// looked for the key outside the writer's lock and before the writer orders
        /// the removal, so that a test can hold the invalidation there.
        var _invalidationWillBeOrdered: (@Sendable (String) -> Void)?

        /// Creates a configuration whose values are stored with `codec`; every other
        /// setting starts at its documented default (memory over the default
        /// ``DiskStore``). For value types that are neither `Codable` nor
        /// ``CacheValue``.
        public init(name: String, codec: ValueCodec<Value>) {
            self.init(name: name, storing: codec)
        }

        /// A configuration with no stores (memory, and the fetch closure, only), for
        /// value types with no codec. Giving it stores later needs a ``codec`` too.
        public static func memoryOnly(name: String) -> Self {
            var configuration = Self(name: name, storing: nil)
            configuration.localStores = .none
            return configuration
        }

        init(name: String, storing codec: ValueCodec<Value>?) {
            self.name = name
            memory = .init(countLimit: 10_000)
            localStores = .defaultDisk
            diskByteLimit = Self.defaultDiskByteLimit
            remoteStores = []
            defaultExpiry = .never
            localExpiry = nil
            remoteExpiry = nil
            writeMode = .writeBehind
            writeQueueByteLimit = Self.defaultWriteQueueByteLimit
            staleWhileRevalidate = nil
            negativeCaching = nil
            expiryJitter = 0
            repairRetryInterval = Self.defaultRepairRetryInterval
            self.codec = codec
            onError = nil
            logger = nil
            timings = nil
        }

        func validate() throws(HoardError) {
            try _LocalNames.validateComponent(name, what: "a cache name")
            if let writeQueueByteLimit, writeQueueByteLimit < 1 {
                throw HoardError(
                    .invalidConfiguration, "writeQueueByteLimit must be at least 1, not \(writeQueueByteLimit)")
            }
            if let diskByteLimit, diskByteLimit < 1 {
                throw HoardError(.invalidConfiguration, "diskByteLimit must be at least 1, not \(diskByteLimit)")
            }
            if memory.costLimit != nil, memory.cost == nil, _defaultCost(of: Value.self) == nil {
                throw HoardError(
                    .invalidConfiguration,
                    "memory.costLimit needs a cost for \(Value.self): set memory.cost, "
                        + "or conform \(Value.self) to CacheValue")
            }
            guard expiryJitter >= 0, expiryJitter < 1 else {
                throw HoardError(.invalidConfiguration, "expiryJitter must be in 0..<1, not \(expiryJitter)")
            }
            if let grace = staleWhileRevalidate, !(grace >= 0 && grace.isFinite) {
                // An infinite grace would make the memory copy's expiry infinite and
                // the staleness test compare with NaN: never stale, never refreshed.
                throw HoardError(
                    .invalidConfiguration,
                    "staleWhileRevalidate must be a finite number of seconds, zero or more, not \(grace)")
            }
            for (name, expiry) in [
                ("defaultExpiry", defaultExpiry), ("localExpiry", localExpiry),
                ("remoteExpiry", remoteExpiry),
            ] {
                // Not interpolated: describing a NaN `Date` traps in Foundation.
                if let expiry, expiry._isNaN {
                    throw HoardError(.invalidConfiguration, "\(name) must not give a NaN date (.after(.nan), .at(NaN))")
                }
            }
            if let seconds = negativeCaching, !(seconds >= 0) {
                throw HoardError(.invalidConfiguration, "negativeCaching must be zero or more, not \(seconds)")
            }
            if let seconds = repairRetryInterval, !(seconds > 0 && seconds <= 86_400) {
                throw HoardError(
                    .invalidConfiguration,
                    "repairRetryInterval must be more than zero and at most a day, not \(seconds)")
            }
        }
    }

    /// The local stores of a cache.
    public enum LocalStores: Sendable {
        /// One ``DiskStore`` in the default location, named after the cache, limited
        /// to ``Configuration/diskByteLimit``.
        case defaultDisk
        /// No local store: memory (and remote stores, if any) only.
        case none
        /// These stores, in the order reads try them.
        case stores([any CacheStore])
    }

    /// How plain assignments reach the stores.
    public enum WriteMode: Sendable, Hashable {
        /// `cache[key] = value` updates memory at once and queues the store writes
        /// on the cache's serial writer, many per store transaction. ``Cache/flush()``
        /// waits for them.
        case writeBehind
        /// `cache[key] = value` writes the local stores before it returns; remote
        /// stores are still written in the background. The assignment blocks the
        /// calling thread until the writer has applied it locally, after every
        /// write queued before it (a batch whose remote stores are still
        /// answering included), so call it from a thread that may block, or use
        /// the awaited ``Cache/set(_:for:expires:)`` from `async` code. The
        /// cache's own callbacks (``Configuration/onError``,
        /// ``Configuration/timings``) may assign: the writer never waits for the
        /// thread they run on.
        case writeThrough
    }
}

extension Cache.Configuration where Value: Codable {
    /// Creates a configuration for a `Codable` value (stored as JSON unless it is
    /// also a ``CacheValue``); every other setting starts at its documented
    /// default (memory over the default ``DiskStore``).
    public init(name: String) {
        self.init(name: name, storing: nil)
    }
}

extension Cache.Configuration where Value: CacheValue {
    /// Creates a configuration for a ``CacheValue``, stored in the type's own
    /// encoding; every other setting starts at its documented default.
    public init(name: String) {
        self.init(name: name, storing: nil)
    }
}

extension Cache.Configuration where Value: CacheValue & Codable {
    /// Creates a configuration for a value that is both ``CacheValue`` and
    /// `Codable` (`Data`, `String`), stored in its ``CacheValue`` encoding, as
    /// every other initializer stores it; every other setting starts at its
    /// documented default.
    public init(name: String) {
        self.init(name: name, storing: nil)
    }
}
