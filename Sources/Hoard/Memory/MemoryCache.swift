import Foundation
import Synchronization

/// A thread-safe, synchronous in-memory cache with count and cost limits, exact LRU
/// or W-TinyLFU eviction, and per-entry lifetimes.
///
/// Every method can be called from any thread or task without `await`: state lives
/// behind a lock (one per shard), held for O(1) work plus O(1) per entry evicted
/// (``removeAll()`` holds every shard's lock while it empties them all).
/// The cost closure and the key's hashing run before the lock is taken; the key's
/// `==` runs under it, and so may the `deinit` of a value replaced, removed or
/// evicted. Neither may call back into the same cache.
/// A value just written is readable until it is evicted, expires or is removed.
///
/// ```swift
/// let cache = try MemoryCache<String, Data>(configuration: .init(countLimit: 1_000))
/// cache["avatar"] = imageData
/// if let data = cache["avatar", maxAge: 60] { show(data) }
/// cache.set(token, for: "session", expires: .minutes(15))
/// ```
///
/// Over a limit the cache evicts down to the configuration's low-water mark (75% of
/// the limit by default). Expired entries are misses; they are removed when read and
/// by ``removeExpired()``. Changes can be watched with ``updates(for:)`` and
/// ``events``; ``statistics`` counts hits, misses, evictions and expirations.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The configuration the cache was created with.
    public let configuration: Configuration

    @usableFromInline let shards: _MemoryShards<Key, Value>
    @usableFromInline let shardMask: Int
    @usableFromInline let clock: any CacheClock
    @usableFromInline let observers = _MemoryObservers<Key, Value>()
    @usableFromInline let costOf: (@Sendable (Value) -> Int)?
    @usableFromInline let defaultExpiry: Expiry
    /// The cache's registration with its memory-pressure source, set once the cache
    /// exists; releasing it (with the cache) ends it.
    let pressureObservation = Mutex<MemoryPressureObservation?>(nil)

    /// Creates an empty cache.
    ///
    /// - Parameters:
    ///   - configuration: Limits, policy, default lifetime and sharding. Defaults to
    ///     no limits, LRU, entries that never expire, one shard.
    ///   - clock: Where the cache reads the time. Defaults to ``SystemClock``; tests
    ///     pass a ``ManualClock``.
    /// - Throws: ``HoardError/Code/invalidConfiguration`` when a setting is out of
    ///   range.
    public init(configuration: Configuration = .init(), clock: any CacheClock = SystemClock()) throws(HoardError) {
        let shardCount = try configuration.validated()
        self.configuration = configuration
        self.clock = clock
        self.defaultExpiry = configuration.defaultExpiry
        self.costOf = configuration.cost ?? _defaultCost(of: Value.self)
        shardMask = shardCount - 1
        shards = _MemoryShards(count: shardCount) { _ in
            _MemoryShard(
                countLimit: configuration.countLimit.map { $0 / shardCount },
                costLimit: configuration.costLimit.map { $0 / shardCount },
                lowWaterMark: configuration.lowWaterMark,
                policy: configuration.policy)
        }
        if let response = configuration.memoryPressure {
            let observation = response.source.observe { [weak self] level in
                self?.relieve(fraction: level == .critical ? response.criticalFraction : response.warningFraction)
            }
            pressureObservation.withLock { $0 = observation }
        }
    }

    deinit {
        observers.finishAll()
    }

    /// The index of the shard that holds keys with this hash (`_HashIndex.hash(of:)`).
    ///
    /// Takes the top bits: a shard's index uses the low ones.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    func shard(for hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash &>> 54) & shardMask
    }

    // MARK: Reading

    /// The value for `key`, if the cache holds a live one that is fresh enough.
    ///
    /// A hit marks the entry as recently used. An expired entry is removed and
    /// counts as a miss; an entry older than `maxAge` or not newer than `newerThan`
    /// is a miss but stays for other readers. No entry satisfies a NaN or negative
    /// `maxAge` or a NaN `newerThan`: such a read is always a miss (this read cannot
    /// throw; ``Cache``'s asynchronous reads refuse those filters with
    /// ``HoardError/Code/invalidArgument``).
    ///
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - maxAge: The oldest, in seconds since it was stored, an entry may be: 0
    ///     or more (`.infinity` for any age).
    ///   - newerThan: A date the entry must have been stored after.
    /// - Returns: The value, or `nil`.
    /// - Complexity: O(1). A hit allocates nothing.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" (every read runs it).
    @inlinable
    public func value(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) -> Value? {
        let hash = _HashIndex.hash(of: key)
        let newerThanSeconds = newerThan?.timeIntervalSinceReferenceDate
        return shards.withLock(shard(for: hash)) { shard in
            guard
                let i = shard.lookup(
                    key, hash: hash, clock: clock, maxAge: maxAge, newerThan: newerThanSeconds, observers: observers)
            else { return nil }
            return shard.nodes[Int(i)].entry?.value
        }
    }

    /// The entry for `key` (value, stored date, expiry), with the same rules as
    /// ``value(for:maxAge:newerThan:)`` (a NaN or negative `maxAge` or a NaN
    /// `newerThan` is always a miss).
    ///
    /// - Complexity: O(1).
    public func entry(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) -> CacheEntry<Value>? {
        let hash = _HashIndex.hash(of: key)
        let newerThanSeconds = newerThan?.timeIntervalSinceReferenceDate
        return shards.withLock(shard(for: hash)) { shard -> CacheEntry<Value>? in
            guard
                let i = shard.lookup(
                    key, hash: hash, clock: clock, maxAge: maxAge, newerThan: newerThanSeconds, observers: observers)
            else { return nil }
            return shard.entry(at: i)
        }
    }

    /// Reads like ``value(for:maxAge:newerThan:)``; assigning stores the value with
    /// the default lifetime, and assigning `nil` removes the entry.
    ///
    /// - Complexity: O(1).
    // @inlinable: forwards to `value(for:)` and `set(_:for:)` (MemoryCacheBenchmarks
    // "get-hit 1T" and "set 1T"), which a call across modules would reach unspecialised.
    @inlinable
    public subscript(key: Key) -> Value? {
        get { value(for: key) }
        set {
            if let newValue {
                set(newValue, for: key)
            } else {
                removeValue(for: key)
            }
        }
    }

    /// The value for `key` if it is fresh enough: `cache["feed", maxAge: 60]`. Reads
    /// like ``value(for:maxAge:newerThan:)`` (a NaN or negative `maxAge` or a NaN
    /// `newerThan` is always a miss).
    // @inlinable: forwards to `value(for:)` (MemoryCacheBenchmarks "get-hit 1T").
    @inlinable
    public subscript(key: Key, maxAge maxAge: TimeInterval?, newerThan newerThan: Date? = nil) -> Value? {
        value(for: key, maxAge: maxAge, newerThan: newerThan)
    }

    /// The value for `key` if it was stored after `newerThan` (a NaN date is always a
    /// miss).
    // @inlinable: forwards to `value(for:)` (MemoryCacheBenchmarks "get-hit 1T").
    @inlinable
    public subscript(key: Key, newerThan newerThan: Date) -> Value? {
        value(for: key, newerThan: newerThan)
    }

    /// Whether the cache holds a live entry for `key`. Does not count as a read and
    /// does not change eviction order.
    ///
    /// - Complexity: O(1).
    public func contains(_ key: Key) -> Bool {
        let hash = _HashIndex.hash(of: key)
        let now = clock.now().timeIntervalSinceReferenceDate
        return shards.withLock(shard(for: hash)) { $0.peek(key, hash: hash, now: now) != nil }
    }

    /// The live entry for `key`, as ``entry(for:maxAge:newerThan:)`` finds it, but
    /// without counting a read or changing eviction order (a ``Cache``'s second
    /// look at an entry it has already read).
    ///
    /// - Complexity: O(1).
    func peekEntry(for key: Key) -> CacheEntry<Value>? {
        let hash = _HashIndex.hash(of: key)
        let now = clock.now().timeIntervalSinceReferenceDate
        return shards.withLock(shard(for: hash)) { shard -> CacheEntry<Value>? in
            guard let i = shard.slot(of: key, hash: hash), now < shard.nodes[Int(i)].expiresAt else { return nil }
            return shard.entry(at: i)
        }
    }

    /// The number of entries, expired ones not yet removed included.
    ///
    /// - Complexity: O(shards).
    public var count: Int {
        (0..<shards.count).reduce(0) { total, i in total + shards.withLock(i) { $0.count } }
    }

    /// The total cost of the entries (each counted at most 2^32 − 1, as
    /// ``Configuration/cost`` says), or `Int.max` if it is more.
    ///
    /// - Complexity: O(shards).
    public var totalCost: Int {
        (0..<shards.count).reduce(0) { total, i in
            let (sum, overflow) = total.addingReportingOverflow(shards.withLock(i) { $0.totalCost })
            return overflow ? .max : sum
        }
    }

    // MARK: Writing

    /// Stores `value` for `key`, replacing any older value.
    ///
    /// The entry is the most recently used. If a limit is now exceeded, the cache
    /// evicts down to its low-water mark, never the entry just written.
    ///
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: Its key.
    ///   - expires: Its lifetime; `nil` (the default) uses the configuration's
    ///     ``Configuration/defaultExpiry``.
    /// - Returns: `true` when stored; `false` when the value's cost alone exceeds the
    ///   cost limit (of one shard), or `expires` gives a NaN date (`.after(.nan)`),
    ///   in which case nothing is stored and any older value for `key` is removed,
    ///   so a read never returns the outdated value.
    /// - Complexity: O(1) amortised, plus O(1) per evicted entry.
    // @inlinable: MemoryCacheBenchmarks "set 1T" (every write runs it).
    @inlinable
    @discardableResult
    public func set(_ value: Value, for key: Key, expires: Expiry? = nil) -> Bool {
        let cost = max(0, costOf?(value) ?? 0)
        let now = clock.now()
        let expiresAt = (expires ?? defaultExpiry).date(storedAt: now)?.timeIntervalSinceReferenceDate ?? .infinity
        if expiresAt.isNaN {
            _ = removeValue(for: key)
            return false
        }
        let hash = _HashIndex.hash(of: key)
        return shards.withLock(shard(for: hash)) { shard in
            // Whether anyone observes is read under the lock (as in every writer):
            // `updates(for:)` registers under it, so a write it precedes is published.
            shard.set(
                value, for: key, hash: hash, cost: cost, storedAt: now.timeIntervalSinceReferenceDate,
                expiresAt: expiresAt, observers: observers.ifActive)
        }
    }

    /// Stores an entry as it is, keeping its stored date and expiry (for example
    /// one read with ``entry(for:maxAge:newerThan:)`` from another cache).
    ///
    /// - Returns: `true` when stored; `false` when its cost exceeds the cost limit,
    ///   its stored date is not a finite date or its expiry is NaN, in which case
    ///   nothing is stored and any older value for `key` is removed.
    @discardableResult
    public func set(_ entry: CacheEntry<Value>, for key: Key) -> Bool {
        guard (try? HoardError.checkWriteDates(storedAt: entry.storedAt, expiresAt: entry.expiresAt, key: nil)) != nil
        else {
            _ = removeValue(for: key)
            return false
        }
        return set(entry, for: key, cost: cost(of: entry.value))
    }

    /// The cost the configuration gives `value` (its `cost` closure, user code, or
    /// the default), at least 0.
    // @inlinable: `Cache`'s inlinable disk-hit promotion calls it (CacheBenchmarks
    // "disk hit" rows).
    @inlinable
    func cost(of value: Value) -> Int {
        max(0, costOf?(value) ?? 0)
    }

    /// `set(_:for:)` of an entry, with the value's cost already computed
    /// by `cost(of:)`, for a caller that must not run the cost closure where it
    /// stores (a ``Cache`` orders its memory writes under its writer's lock).
    // @inlinable: `Cache`'s inlinable disk-hit promotion calls it (CacheBenchmarks
    // "disk hit" rows).
    @inlinable
    @discardableResult
    func set(_ entry: CacheEntry<Value>, for key: Key, cost: Int) -> Bool {
        let hash = _HashIndex.hash(of: key)
        return shards.withLock(shard(for: hash)) { shard in
            shard.set(
                entry.value, for: key, hash: hash, cost: cost, storedAt: entry.storedAt.timeIntervalSinceReferenceDate,
                expiresAt: entry.expiresAt?.timeIntervalSinceReferenceDate ?? .infinity, observers: observers.ifActive)
        }
    }

    /// Removes the entry for `key`.
    ///
    /// - Returns: The removed value (even if it had expired), or `nil` if there was none.
    /// - Complexity: O(1).
    @discardableResult
    public func removeValue(for key: Key) -> Value? {
        let hash = _HashIndex.hash(of: key)
        return shards.withLock(shard(for: hash)) { $0.removeValue(for: key, hash: hash, observers: observers.ifActive) }
    }

    /// Removes every entry. Update streams of removed keys receive `nil`; the events
    /// stream receives one ``MemoryCacheEvent/removedAll(count:)``.
    ///
    /// All at once: it holds every shard's lock until it is done, so a write on
    /// another thread lands either before it (the entry is removed, and its event
    /// comes before `removedAll`) or after it (the entry stays, and its event comes
    /// after). Replaying the events stream in order always gives what the cache holds.
    ///
    /// - Complexity: O(n).
    public func removeAll() {
        removeAll(fromShard: 0, removed: 0)
    }

    /// Empties shard `i` and, still holding its lock, the shards after it; publishes
    /// `removedAll` (`removed` plus what they held) once every shard is locked and
    /// empty. Shard locks are taken in ascending order, and nothing else holds two.
    private func removeAll(fromShard i: Int, removed: Int) {
        guard i < shards.count else {
            observers.ifActive?.publish(.removedAll(count: removed))
            return
        }
        shards.withLock(i) { shard in
            removeAll(fromShard: i + 1, removed: removed + shard.removeAll(observers: observers.ifActive))
        }
    }

    /// Removes every expired entry.
    ///
    /// - Returns: How many entries were removed.
    /// - Complexity: O(n) when some entry has a finite lifetime, O(shards) otherwise.
    @discardableResult
    public func removeExpired() -> Int {
        let now = clock.now().timeIntervalSinceReferenceDate
        return (0..<shards.count).reduce(0) { total, i in
            total + shards.withLock(i) { $0.removeExpired(now: now, observers: observers.ifActive) }
        }
    }

    /// Evicts entries, policy order first, until the total cost is at most `cost`.
    ///
    /// With several shards each evicts in its own policy order, down to its share of
    /// `cost`: shares are as even as the shards' costs allow, a shard that holds less
    /// than its share leaves the rest to the others, and one left below its share by
    /// an entry's cost leaves the difference to the shards after it.
    ///
    /// - Complexity: O(shards log shards), plus O(1) per evicted entry.
    public func purge(downTo cost: Int) {
        purge(count: .max, cost: max(0, cost))
    }

    /// Evicts entries, policy order first, until at most `count` remain.
    ///
    /// Unless other writes interleave, exactly `count` remain when the cache held
    /// more. With several shards each evicts in its own policy order, down to its
    /// share of `count`: shares are as even as the shards' counts allow, and a shard
    /// that holds fewer entries than its share leaves the rest to the others.
    ///
    /// - Complexity: O(shards log shards), plus O(1) per evicted entry.
    public func purge(downToCount count: Int) {
        purge(count: max(0, count), cost: .max)
    }

    /// Evicts in every shard down to its share of `count` and of `cost` (`.max`: no
    /// target), taking one shard's lock at a time.
    ///
    /// The shares are split from what each shard holds when the purge starts; a
    /// shard that keeps less than its share (it shrank meanwhile, or its entries'
    /// costs do not add up to its share exactly) leaves the difference to the next.
    /// The targets of all the shards never add up to more than `count` and `cost`.
    private func purge(count: Int, cost: Int) {
        let countShares = count == .max ? nil : shares(of: count) { $0.count }
        let costShares = cost == .max ? nil : shares(of: cost) { $0.totalCost }
        var target = (count: Int.max, cost: Int.max)
        var spare = (count: 0, cost: 0)
        evictEachShard(reason: .purge) { i, _, _ in
            target = (countShares.map { $0[i] + spare.count } ?? .max, costShares.map { $0[i] + spare.cost } ?? .max)
            return target
        } kept: { count, cost in
            spare = (countShares == nil ? 0 : target.count - count, costShares == nil ? 0 : target.cost - cost)
        }
    }

    /// `total` split among the shards by what each holds now (`held`, read under
    /// its lock); one shard's share is `total` itself, without reading it.
    private func shares(of total: Int, held: (borrowing _MemoryShard<Key, Value>) -> Int) -> [Int] {
        guard shards.count > 1 else { return [total] }
        return Self.shares(of: total, among: (0..<shards.count).map { i in shards.withLock(i) { held($0) } })
    }

    /// `total` split into one share per shard, where the shards hold `held`: as
    /// evenly as it goes, no share more than its shard holds, and what a shard
    /// cannot use shared among the others, so the shares add up to
    /// `min(total, held.sum())`.
    ///
    /// - Complexity: O(shards log shards).
    static func shares(of total: Int, among held: [Int]) -> [Int] {
        var shares = held
        var remaining = total
        let order = held.indices.sorted { (held[$0], $0) < (held[$1], $1) }
        for (rank, i) in order.enumerated() {
            let shardsLeft = order.count - rank
            let share = remaining / shardsLeft
            guard held[i] <= share else {
                // This shard and every one after it (each holding at least as much)
                // can use more than an even part of the rest: split it evenly, the
                // remainder one each.
                for (k, j) in order[rank...].enumerated() {
                    shares[j] = share + (k < remaining % shardsLeft ? 1 : 0)
                }
                break
            }
            remaining -= held[i]
        }
        return shares
    }

    /// Evicts in every shard, one lock at a time, in its policy's order, down to the
    /// entry count and cost `targets` gives for the shard (its index, count and
    /// cost), then tells `kept` the count and cost the shard has left.
    func evictEachShard(
        reason: EvictionReason, targets: (_ shard: Int, _ count: Int, _ cost: Int) -> (count: Int, cost: Int),
        kept: (_ count: Int, _ cost: Int) -> Void = { _, _ in }
    ) {
        for i in 0..<shards.count {
            let left = shards.withLock(i) { shard in
                let (count, cost) = targets(i, shard.count, shard.totalCost)
                shard.evict(
                    toCount: count, toCost: cost, reason: reason, protecting: -1, observers: observers.ifActive)
                return (count: shard.count, cost: shard.totalCost)
            }
            kept(left.count, left.cost)
        }
    }

    // MARK: Statistics

    /// Hits, misses, evictions and expirations since creation or the last reset.
    ///
    /// - Complexity: O(shards).
    public var statistics: MemoryCacheStatistics {
        (0..<shards.count).reduce(into: MemoryCacheStatistics()) { total, i in
            shards.withLock(i) { shard in
                total.hits += shard.hits
                total.misses += shard.misses
                total.evictions += shard.evictions
                total.memoryPressureEvictions += shard.pressureEvictions
                total.expirations += shard.expirations
            }
        }
    }

    /// Sets every counter of ``statistics`` back to zero.
    public func resetStatistics() {
        for i in 0..<shards.count {
            shards.withLock(i) { shard in
                shard.hits = 0
                shard.misses = 0
                shard.evictions = 0
                shard.pressureEvictions = 0
                shard.expirations = 0
            }
        }
    }
}

/// The cost function a value type gets by default: `CacheValue.cacheCost` when it
/// conforms, none otherwise.
func _defaultCost<Value: Sendable>(of _: Value.Type) -> (@Sendable (Value) -> Int)? {
    guard let type = Value.self as? any CacheValue.Type else { return nil }
    func make<T: CacheValue>(_: T.Type) -> @Sendable (Value) -> Int {
        { ($0 as! T).cacheCost }  // Value is T: checked above.
    }
    return make(type)
}
