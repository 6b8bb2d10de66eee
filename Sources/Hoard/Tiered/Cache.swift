import Foundation
import Synchronization

/// One cache over every tier: memory, local stores (a ``DiskStore`` by default),
/// remote stores, and a fetch closure.
///
/// ```swift
/// let users = try Cache<Int, User>(configuration: .init(name: "users")) { id in
///     try await api.user(id)          // runs once per missing key, however many callers wait
/// }
/// let user = try await users.value(for: 42)   // memory → disk → remote → fetch
/// let cached = users.cachedValue(for: 42)     // memory → disk only, synchronous
/// users[7] = User(name: "Ada")                // memory now, stores behind
/// await users.flush()                         // wait for the stores
/// ```
///
/// There are two reads with two names. ``value(for:maxAge:newerThan:)`` (async)
/// tries memory, the local stores, the remote stores, then the fetch closure;
/// ``cachedValue(for:maxAge:newerThan:)`` and the subscript read memory and the
/// local stores only, synchronously. A hit below memory is promoted into the
/// faster tiers. Concurrent misses for one key run the fetch once (single-flight);
/// a thrown error reaches every waiter and leaves nothing behind.
///
/// Every change goes through the cache's one serial writer: memory at once, the
/// stores behind (write-behind, the default), in order, many writes per store
/// transaction. Promotions and fetched values take the same path and are dropped
/// when the key was written after the read began, so a read never puts an older
/// value back over a newer one, and never sees an older store value while a newer
/// write waits. Blocking store work reached from `async` methods runs on Hoard's
/// own threads, never on Swift's cooperative pool. Failures behind the caller's
/// back go to ``events`` and the configuration's `onError`.
///
/// A short-lived program (a command-line tool) calls ``flush()`` before it ends, to
/// know its writes reached the stores and to see their failures. When the process
/// exits normally without it (`exit(_:)`, or returning from `main`), Hoard's
/// `atexit` handler still waits for every cache's queued writes, for at most 30
/// seconds; a crash, a signal or `_exit` loses them.
public final class Cache<Key: CacheKey, Value: Sendable>: Sendable {
    /// The closure that produces a value no tier holds; `nil` means there is none.
    public typealias Fetch = @Sendable (Key) async throws -> Value?

    /// The configuration the cache was created with.
    public let configuration: Configuration
    @usableFromInline let memory: MemoryCache<Key, _CacheSlot<Value>>

    @usableFromInline let localStores: [any CacheStore]
    @usableFromInline let remoteStores: [any RemoteCacheStore]
    @usableFromInline let codec: ValueCodec<Value>?
    @usableFromInline let fetch: Fetch?
    @usableFromInline let clock: any CacheClock
    @usableFromInline let writer: _CacheWriter<Key, Value>
    /// Where `async` reads run their local-store lookups.
    @usableFromInline let executor = _BlockingExecutor.shared
    @usableFromInline let flights = _SingleFlight<Key, CacheEntry<Value>?>()
    /// The reads below memory in progress, shared by concurrent readers of a key.
    @usableFromInline let sharedReads = _SharedReads<Key, CacheEntry<Value>?>()
    /// The local stores, when every one can look up without waiting (so that an
    /// `async` read may run its local lookup on the caller's thread); else `nil`.
    @usableFromInline let nonWaitingLocalStores: [any _NonWaitingLookup]?
    @usableFromInline let counters = _CacheCounters()
    @usableFromInline let observers = _Observers<Key, Value, CacheEvent<Key>>()
    let invalidationTasks: Mutex<[Task<Void, Never>]>
    /// The keys noted by ``remember(_:)`` and ``remembering(_:while:)``, by their
    /// strings, pruned to those memory holds or is taking in (see ``_NotedKeys``).
    let keyStrings: Mutex<_NotedKeys<Key>>
    /// Seconds added to every lifetime so stale values can be served (0 without
    /// stale-while-revalidate).
    @usableFromInline let grace: TimeInterval

    /// The namespace of this cache's entries in every store: its name, in NFC (as
    /// its keys are: see ``CacheKey``).
    @usableFromInline let namespace: String

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - configuration: Tiers, lifetimes and write mode.
    ///   - clock: Where every tier reads the time. Defaults to ``SystemClock``.
    ///   - fetch: Produces values no tier holds; `nil` (the default) for a cache that
    ///     is only filled by writes.
    /// - Throws: ``HoardError/Code/invalidConfiguration`` for an out-of-range setting
    ///   (or a memory cost limit with no way to cost a value);
    ///   ``HoardError/Code/invalidName`` when ``Configuration/name`` is not one path
    ///   component;
    ///   ``HoardError/Code/noCodec`` when there are stores but no codec (possible
    ///   only when a configuration made with ``Configuration/memoryOnly(name:)``
    ///   is given stores); the default disk store's error when it cannot be opened.
    ///   Nothing is created on disk when the initializer throws.
    public init(
        configuration: Configuration,
        clock: any CacheClock = SystemClock(),
        fetch: Fetch? = nil
    ) throws(HoardError) {
        try configuration.validate()
        self.configuration = configuration
        namespace = _normalized(configuration.name)
        self.clock = clock
        self.fetch = fetch
        grace = fetch == nil ? 0 : (configuration.staleWhileRevalidate ?? 0)

        var memoryConfiguration = MemoryCache<Key, _CacheSlot<Value>>.Configuration(
            countLimit: configuration.memory.countLimit,
            costLimit: configuration.memory.costLimit,
            lowWaterMark: configuration.memory.lowWaterMark,
            policy: configuration.memory.policy,
            defaultExpiry: .never,
            shards: configuration.memory.shards,
            memoryPressure: configuration.memory.memoryPressure)
        if let cost = configuration.memory.cost ?? _defaultCost(of: Value.self) {
            memoryConfiguration.cost = { slot in
                if case .value(let value) = slot { cost(value) } else { 0 }
            }
        }
        memory = try MemoryCache(configuration: memoryConfiguration, clock: clock)

        // Everything that can fail without side effects is checked before the
        // default disk store creates its directory.
        let codec = configuration.codec ?? (try? ValueCodec<Value>.automatic())
        let hasStores: Bool
        switch configuration.localStores {
        case .none: hasStores = !configuration.remoteStores.isEmpty
        case .stores(let stores): hasStores = !stores.isEmpty || !configuration.remoteStores.isEmpty
        case .defaultDisk: hasStores = true
        }
        if hasStores && codec == nil {
            throw HoardError(
                .noCodec,
                "\(Value.self) is neither Codable nor CacheValue, and the cache has stores: "
                    + "pass a ValueCodec in the configuration, or use no stores")
        }
        self.codec = codec
        switch configuration.localStores {
        case .none: localStores = []
        case .stores(let stores): localStores = stores
        case .defaultDisk:
            localStores = [
                try DiskStore(
                    named: configuration.name, configuration: .init(byteLimit: configuration.diskByteLimit),
                    clock: clock)
            ]
        }
        let nonWaiting = localStores.compactMap { $0 as? any _NonWaitingLookup }
        nonWaitingLocalStores = !localStores.isEmpty && nonWaiting.count == localStores.count ? nonWaiting : nil
        remoteStores = configuration.remoteStores
        keyStrings = Mutex(_NotedKeys(pruneAt: (configuration.memory.countLimit ?? 100_000) * 2))
        invalidationTasks = Mutex([])

        let observers = self.observers
        let counters = self.counters
        let logger = configuration.logger
        let name = configuration.name
        let report: @Sendable (CacheFailure) -> Void = { failure in
            counters.count(failure)
            observers.publish(.failed(failure))
        }
        // The log handler is the user's code too: it runs with `onError`, on the
        // writer's callback queue, where it may write to this cache.
        let onError = configuration.onError
        var logAndHandle: (@Sendable (CacheFailure) -> Void)?
        if logger != nil || onError != nil {
            logAndHandle = { failure in
                logger?.log(failure, cache: name)
                onError?(failure)
            }
        }
        writer = _CacheWriter(
            namespace: namespace, localStores: localStores, remoteStores: remoteStores,
            codec: codec, queueByteLimit: configuration.writeQueueByteLimit, size: _defaultCost(of: Value.self),
            timings: configuration.timings,
            onError: logAndHandle,
            repairRetry: configuration.repairRetryInterval.map {
                _RepairRetry(interval: .seconds($0), sleep: configuration._repairRetrySleep)
            },
            report: report)
        // A program that exits normally without `flush()` still loses no write.
        if writer.hasStores { _ExitFlush.shared.register(writer) }
        startListeningForInvalidations()
    }

    deinit {
        for task in invalidationTasks.withLock({ $0 }) { task.cancel() }
        observers.finishAll()
    }

    // MARK: Reporting

    /// Counts a failure met on a read or a fetch, and hands it to the logger, the
    /// event streams and `onError`, on the calling thread (the writer's failures
    /// take ``_CacheWriter/report``). Every failure takes one of the two, once.
    @usableFromInline
    func report(_ failure: CacheFailure) {
        counters.count(failure)
        configuration.logger?.log(failure, cache: configuration.name)
        observers.ifActive?.publish(.failed(failure))
        configuration.onError?(failure)
    }

    /// Publishes an event that changes no key's value.
    @usableFromInline
    func publish(_ event: CacheEvent<Key>) {
        observers.ifActive?.publish(event)
    }

    /// Publishes an event and the key's new value to its update streams.
    @usableFromInline
    func publish(_ event: CacheEvent<Key>, key: Key, value: Value?) {
        observers.ifActive?.publish(event, key: key, value: value)
    }

    /// Publishes a clear of the chosen tiers (`.cleared`, or another instance's
    /// `.invalidated(nil)`) and `nil` to the update streams of the keys it removed:
    /// every key when it emptied memory and the local stores (or there are none);
    /// the keys memory does not hold when it emptied the local stores only. Memory
    /// emptied over local stores that still hold the values is not a change (as
    /// for an eviction).
    func publishClear(_ event: CacheEvent<Key>, memory clearsMemory: Bool, localStores clearsLocalStores: Bool) {
        guard let observers = observers.ifActive else { return }
        if clearsMemory && (clearsLocalStores || localStores.isEmpty) {
            observers.publish(event, keys: nil, value: nil)
        } else if clearsLocalStores && !localStores.isEmpty {
            let removed = observers.updatedKeys.filter { !memory.contains($0) }
            observers.publish(event, keys: removed, value: nil)
        } else {
            observers.publish(event)
        }
    }

    // MARK: Lifetimes

    @usableFromInline
    func dates(for expiry: Expiry?) -> _WriteDates {
        let now = clock.now()
        let own = jittered(expiry ?? configuration.defaultExpiry).date(storedAt: now)
        func capped(_ tier: Expiry?) -> Date? {
            guard let tierDate = tier.flatMap({ jittered($0).date(storedAt: now) }) else { return own }
            guard let own else { return tierDate }
            return min(own, tierDate)
        }
        let grace = self.grace
        return _WriteDates(
            storedAt: now,
            memoryExpiry: own.map { $0.addingTimeInterval(grace) },
            localExpiry: capped(configuration.localExpiry).map { $0.addingTimeInterval(grace) },
            remoteExpiry: capped(configuration.remoteExpiry).map { $0.addingTimeInterval(grace) })
    }

    /// `expiresAt` (a physical expiry, grace included) shortened to what `tier`
    /// (``Configuration/localExpiry`` or ``Configuration/remoteExpiry``) allows for
    /// a copy made at `now`: a value copied into a tier of stores (a promotion, an
    /// entry written as it is) lives there no longer than a value written there.
    @usableFromInline
    func capped(_ expiresAt: Date?, by tier: Expiry?, now: Date) -> Date? {
        guard let tier, let cap = jittered(tier).date(storedAt: now)?.addingTimeInterval(grace) else {
            return expiresAt
        }
        guard let expiresAt else { return cap }
        return min(expiresAt, cap)
    }

    /// The memory tier's expiry of a value written at `now` with `expiry` (`nil`:
    /// the default), jittered, with the stale-while-revalidate grace.
    @inlinable  // CacheBenchmarks "memory set: Cache (no stores)"
    func memoryExpiry(_ expiry: Expiry?, storedAt now: Date) -> Date? {
        var own = expiry ?? configuration.defaultExpiry
        if configuration.expiryJitter > 0 { own = jittered(own) }
        return own.date(storedAt: now).map { $0.addingTimeInterval(grace) }
    }

    @usableFromInline
    func jittered(_ expiry: Expiry) -> Expiry {
        guard configuration.expiryJitter > 0, case .after(let seconds) = expiry else { return expiry }
        let spread = configuration.expiryJitter
        return .after(seconds * Double.random(in: (1 - spread)...(1 + spread)))
    }

    /// Whether an entry whose stored expiry (grace included) is `expiresAt` is past
    /// its own lifetime, and so is served only as a stale value.
    @usableFromInline
    func isStale(expiresAt: Date?, now: Date) -> Bool {
        guard grace > 0, let expiresAt else { return false }
        return now >= expiresAt.addingTimeInterval(-grace)
    }

    /// Notes which key `key.cacheKeyString` stands for, so that another instance's
    /// invalidation of that string finds the key in memory (``key(forCacheKeyString:)``),
    /// after memory took the key in (a write); a key noted before memory takes it
    /// in is noted with ``remembering(_:while:)``. Nothing to note without remote
    /// stores, or when the key type rebuilds the key from its string (`String`, the
    /// integers, `UUID`).
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    func remember(_ key: Key) {
        guard !remoteStores.isEmpty else { return }
        rememberForRemoteStores(key)
    }

    /// ``remember(_:)`` in a cache with remote stores.
    @usableFromInline
    func rememberForRemoteStores(_ key: Key) {
        let string = key.cacheKeyString
        if Key(cacheKeyString: string) == key { return }
        note(key, as: string, inFlight: false)
    }

    /// Notes `key` (as ``remember(_:)`` does) before `takingIn` takes it into
    /// memory (a promotion, a remembered "not found"), so that an invalidation
    /// handled between the two finds it; no prune drops the key while `takingIn`
    /// runs, nor afterwards while memory holds it (``_NotedKeys``).
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache"
    func remembering<Result>(_ key: Key, while takingIn: () -> Result) -> Result {
        guard !remoteStores.isEmpty, let string = noteInFlight(key) else { return takingIn() }
        defer { settleNote(string) }
        return takingIn()
    }

    /// Notes `key` in flight, for ``remembering(_:while:)``: its string, or `nil`
    /// when the key type rebuilds the key from it (nothing noted).
    @usableFromInline
    func noteInFlight(_ key: Key) -> String? {
        let string = key.cacheKeyString
        if Key(cacheKeyString: string) == key { return nil }
        note(key, as: string, inFlight: true)
        return string
    }

    /// Ends the in-flight note of ``noteInFlight(_:)``: the promotion was made or
    /// dropped.
    @usableFromInline
    func settleNote(_ string: String) {
        keyStrings.withLock { $0.settle(string) }
    }

    /// Notes `key` under `string` and prunes the table when it has grown past its
    /// threshold: the keys memory does not hold are looked for outside the table's
    /// lock (memory has locks of its own), and ``_NotedKeys`` keeps every key
    /// noted or in flight meanwhile.
    func note(_ key: Key, as string: String, inFlight: Bool) {
        let needsPruning = keyStrings.withLock { $0.note(key, as: string, inFlight: inFlight) }
        guard needsPruning else { return }
        let (generation, candidates) = keyStrings.withLock { $0.pruneCandidates() }
        let released = candidates.filter { !memory.contains($0.value) }
        keyStrings.withLock { $0.drop(released, notedBefore: generation, keeping: string) }
    }

    /// The key another instance's invalidation names by its string: rebuilt by the
    /// key type, or found among the keys this cache noted.
    func key(forCacheKeyString string: String) -> Key? {
        if let key = Key(cacheKeyString: string), key.cacheKeyString == string { return key }
        return keyStrings.withLock { $0.take(string) }
    }
}

/// The dates a ``Cache`` write stores: the entry's own expiry (jittered) plus the
/// grace period, and the store-specific expiries. (Not nested in the generic
/// `Cache`, so that using it costs no generic metadata lookup.)
@usableFromInline
struct _WriteDates: Sendable {
    @usableFromInline var storedAt: Date
    @usableFromInline var memoryExpiry: Date?
    @usableFromInline var localExpiry: Date?
    @usableFromInline var remoteExpiry: Date?

    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    init(storedAt: Date, memoryExpiry: Date?, localExpiry: Date?, remoteExpiry: Date?) {
        self.storedAt = storedAt
        self.memoryExpiry = memoryExpiry
        self.localExpiry = localExpiry
        self.remoteExpiry = remoteExpiry
    }
}
