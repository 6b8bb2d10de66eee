import Foundation

/// What the tiers that answer synchronously (memory, queued writes, local stores)
/// know about a key.
enum _LocalLookup<Value: Sendable> {
    /// A value, with its stored date and logical expiry; `stale` when it is past its
    /// lifetime but within the stale-while-revalidate grace period.
    case hit(CacheEntry<Value>, stale: Bool)
    /// A remembered "fetch found nothing" (negative caching).
    case negative
    /// Nothing. `masked` when a queued removal hides whatever slower tiers still hold.
    case miss(masked: Bool)
}

extension Cache {
    // MARK: Synchronous reads

    /// The value for `key` from memory or the local stores; never waits on the
    /// network or a fetch.
    ///
    /// A local-store hit is promoted into memory. A value past its lifetime but
    /// within the stale-while-revalidate grace period is returned and refreshed once
    /// in the background.
    ///
    /// - Parameters:
    ///   - maxAge: The oldest, in seconds since it was stored, an entry may be.
    ///   - newerThan: A date the entry must have been stored after.
    /// - Complexity: O(1) for a memory hit.
    @inlinable
    public func value(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) -> Value? {
        if grace == 0, let slot = memory.value(for: key, maxAge: maxAge, newerThan: newerThan) {
            if case .value(let value) = slot { return value }
            return nil
        }
        return valueBelowMemory(for: key, maxAge: maxAge, newerThan: newerThan)
    }

    /// The rest of a synchronous read once memory has missed (or when stale values
    /// are in play and memory's expiry must be looked at).
    @usableFromInline
    func valueBelowMemory(for key: Key, maxAge: TimeInterval?, newerThan: Date?) -> Value? {
        switch lookUpLocally(key, maxAge: maxAge, newerThan: newerThan, checksMemory: grace > 0) {
        case .hit(let entry, let stale):
            if stale { serveStale(key) }
            return entry.value
        case .negative:
            return nil
        case .miss:
            counters.misses.add(1, ordering: .relaxed)
            return nil
        }
    }

    /// The value for `key` from memory or the local stores, or `defaultValue`
    /// (which is not stored).
    public func value(for key: Key, default defaultValue: @autoclosure () -> Value) -> Value {
        value(for: key) ?? defaultValue()
    }

    /// The entry for `key` (value, stored date, expiry) from memory or the local
    /// stores, with the same rules as ``value(for:maxAge:newerThan:)``.
    public func entry(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) -> CacheEntry<Value>? {
        localEntry(for: key, maxAge: maxAge, newerThan: newerThan)
    }

    func localEntry(for key: Key, maxAge: TimeInterval?, newerThan: Date?) -> CacheEntry<Value>? {
        switch lookUpLocally(key, maxAge: maxAge, newerThan: newerThan) {
        case .hit(let entry, let stale):
            if stale { serveStale(key) }
            return entry
        case .negative:
            return nil
        case .miss:
            counters.misses.add(1, ordering: .relaxed)
            return nil
        }
    }

    /// Reads like ``value(for:maxAge:newerThan:)``; assigning writes memory at once
    /// and the stores behind (or, in write-through mode, the local stores before it
    /// returns), with the default lifetime. Assigning `nil` removes the entry from
    /// every tier.
    @inlinable
    public subscript(key: Key) -> Value? {
        get { value(for: key) }
        set { assign(newValue, for: key, expires: nil) }
    }

    /// Reads like ``value(for:maxAge:newerThan:)``; assigning stores the value with
    /// this lifetime: `cache[key, expires: .minutes(5)] = value`.
    public subscript(key: Key, expires expiry: Expiry) -> Value? {
        get { value(for: key) }
        set { assign(newValue, for: key, expires: expiry) }
    }

    /// The value for `key` if it is fresh enough: `cache[key, maxAge: 60]`.
    public subscript(key: Key, maxAge maxAge: TimeInterval?, newerThan newerThan: Date? = nil) -> Value? {
        value(for: key, maxAge: maxAge, newerThan: newerThan)
    }

    // MARK: Lookup

    /// Looks through memory (unless the caller already did), the queue of pending
    /// writes and the local stores, promoting a local hit into memory. Counts hits, not misses (the caller knows
    /// whether slower tiers follow).
    func lookUpLocally(
        _ key: Key, maxAge: TimeInterval?, newerThan: Date?, checksMemory: Bool = true
    ) -> _LocalLookup<Value> {
        let now = clock.now()
        if checksMemory, let entry = memory.entry(for: key, maxAge: maxAge, newerThan: newerThan) {
            guard case .value(let value) = entry.value else { return .negative }
            return hit(value, storedAt: entry.storedAt, expiresAt: entry.expiresAt, now: now)
        }
        if let pending = writer.pending(key) {
            guard case .value(let value, let storedAt, let expiresAt) = pending,
                expiresAt.map({ $0 > now }) ?? true,
                Self.passes(storedAt: storedAt, maxAge: maxAge, newerThan: newerThan, now: now)
            else { return .miss(masked: true) }
            counters.memoryHits.add(1, ordering: .relaxed)
            memory.set(CacheEntry(value: .value(value), storedAt: storedAt, expiresAt: expiresAt), for: key)
            return hit(value, storedAt: storedAt, expiresAt: expiresAt, now: now)
        }
        let keyString = key.cacheKeyString
        for (index, store) in localStores.enumerated() {
            let stored: StoredEntry?
            do {
                stored = try store.entry(for: keyString, in: namespace)
            } catch {
                report(CacheFailure(key: keyString, tier: .local(index), operation: .read, error: error))
                continue
            }
            guard let stored,
                Self.passes(storedAt: stored.storedAt, maxAge: maxAge, newerThan: newerThan, now: now),
                let value = decode(stored, key: key, tier: .local(index), removeFrom: store)
            else { continue }
            counters.localHits.add(1, ordering: .relaxed)
            promote(value, stored, for: key, from: .local(index), intoLocalStoresBefore: index)
            return hit(value, storedAt: stored.storedAt, expiresAt: stored.expiresAt, now: now)
        }
        return .miss(masked: false)
    }

    func hit(_ value: Value, storedAt: Date, expiresAt: Date?, now: Date) -> _LocalLookup<Value> {
        let logicalExpiry = expiresAt.map { $0.addingTimeInterval(-grace) }
        return .hit(
            CacheEntry(value: value, storedAt: storedAt, expiresAt: logicalExpiry),
            stale: isStale(expiresAt: expiresAt, now: now))
    }

    static func passes(storedAt: Date, maxAge: TimeInterval?, newerThan: Date?, now: Date) -> Bool {
        if let maxAge, now.timeIntervalSince(storedAt) > maxAge { return false }
        if let newerThan, !(storedAt > newerThan) { return false }
        return true
    }

    /// Decodes stored bytes; on failure removes the entry from `store`, reports it,
    /// and returns `nil` (a stale format never breaks a read).
    func decode(_ stored: StoredEntry, key: Key, tier: CacheTier, removeFrom store: (any CacheStore)?) -> Value? {
        guard let codec else { return nil }
        do {
            return try codec.decode(stored.data)
        } catch {
            report(CacheFailure(key: key.cacheKeyString, tier: tier, operation: .decode, error: error))
            if let store {
                do {
                    try store.removeValue(for: key.cacheKeyString, in: namespace)
                } catch {
                    report(CacheFailure(key: key.cacheKeyString, tier: tier, operation: .remove, error: error))
                }
            }
            return nil
        }
    }

    /// Copies a value found in a slower tier into memory, and into the local stores
    /// that come before `index` (every local store for a remote hit).
    func promote(_ value: Value, _ stored: StoredEntry, for key: Key, from tier: CacheTier, intoLocalStoresBefore index: Int) {
        memory.set(CacheEntry(value: .value(value), storedAt: stored.storedAt, expiresAt: stored.expiresAt), for: key)
        remember(key)
        for (position, store) in localStores.prefix(index).enumerated() {
            do {
                try store.set(stored.data, for: key.cacheKeyString, in: namespace, storedAt: stored.storedAt, expiresAt: stored.expiresAt)
            } catch {
                report(CacheFailure(key: key.cacheKeyString, tier: .local(position), operation: .write, error: error))
            }
        }
        counters.promotions.add(1, ordering: .relaxed)
        publish(.promoted(key, from: tier))
    }
}
