import Foundation
import Logging
import Synchronization

/// What a tier knows about a key: memory, queued writes and the local stores
/// (which answer synchronously), or a remote store (a hit only).
@usableFromInline
enum _LocalLookup<Value: Sendable>: Sendable {
    /// A value, with its stored date and logical expiry; `stale` when it is past its
    /// lifetime but within the stale-while-revalidate grace period.
    case hit(CacheEntry<Value>, stale: Bool)
    /// A remembered "fetch found nothing" (negative caching).
    case negative
    /// Nothing. `masked` when a queued removal hides whatever slower tiers still hold;
    /// `rejected` when a tier held a value that the read's freshness filters
    /// (`maxAge`, `newerThan`) skipped.
    case miss(masked: Bool, rejected: Bool)
}

extension Cache {
    // MARK: Synchronous reads

    /// The value for `key` from memory or the local stores; never waits on the
    /// network and never runs the fetch closure.
    ///
    /// Use ``value(for:maxAge:newerThan:)`` to go through every tier and the fetch
    /// closure. A local-store hit is promoted into memory (unless the key was
    /// written meanwhile). A value past its lifetime but within the
    /// stale-while-revalidate grace period is returned and refreshed once in the
    /// background. This call blocks the calling thread for as long as the local
    /// stores take; from `async` code prefer the `async` reads, which run that
    /// work on Hoard's own threads.
    ///
    /// No entry satisfies a NaN or negative `maxAge` or a NaN `newerThan`: this read
    /// cannot throw, so with such a filter it is a miss in every tier (the
    /// asynchronous reads refuse it with ``HoardError/Code/invalidArgument``).
    ///
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - maxAge: The oldest, in seconds since it was stored, an entry may be: 0
    ///     or more (`.infinity` for any age).
    ///   - newerThan: A date the entry must have been stored after.
    /// - Complexity: O(1) for a memory hit.
    @inlinable @inline(__always)  // CacheBenchmarks "memory hit: Cache"
    public func cachedValue(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) -> Value? {
        if grace == 0, let slot = memory.value(for: key, maxAge: maxAge, newerThan: newerThan) {
            if case .value(let value) = slot { return value }
            noteNegativeHit()
            return nil
        }
        return cachedEntryBelowMemory(for: key, maxAge: maxAge, newerThan: newerThan, checksMemory: grace > 0)?.value
    }

    /// The value for `key` from memory or the local stores, or `defaultValue`
    /// (which is not stored). Never waits on the network or a fetch.
    public func cachedValue(for key: Key, default defaultValue: @autoclosure () -> Value) -> Value {
        cachedValue(for: key) ?? defaultValue()
    }

    /// The entry for `key` (value, stored date, expiry) from memory or the local
    /// stores, with the same rules as ``cachedValue(for:maxAge:newerThan:)``.
    public func cachedEntry(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) -> CacheEntry<Value>? {
        cachedEntryBelowMemory(for: key, maxAge: maxAge, newerThan: newerThan, checksMemory: true)
    }

    /// Reads like ``cachedValue(for:maxAge:newerThan:)``; assigning writes memory at
    /// once and the stores behind (or, in write-through mode, every store before
    /// it returns), with the default lifetime. Assigning `nil` removes the entry
    /// from every tier. A store that fails to apply the change is reported and is
    /// not read for the key until it applies a later change of it (the removal of
    /// the key that the writer sends it with its next batch or ``flush()``, or a
    /// newer write), so no read returns the value the assignment replaced or
    /// removed.
    @inlinable  // CacheBenchmarks "memory hit: Cache", "memory set: Cache (no stores)"
    public subscript(key: Key) -> Value? {
        get { cachedValue(for: key) }
        set { assign(newValue, for: key, expires: nil) }
    }

    /// Reads like ``cachedValue(for:maxAge:newerThan:)``; assigning stores the value
    /// with this lifetime: `cache[key, expires: .minutes(5)] = value`.
    public subscript(key: Key, expires expiry: Expiry) -> Value? {
        get { cachedValue(for: key) }
        set { assign(newValue, for: key, expires: expiry) }
    }

    /// The value for `key` if it is fresh enough: `cache[key, maxAge: 60]`. Reads
    /// like ``cachedValue(for:maxAge:newerThan:)``.
    public subscript(key: Key, maxAge maxAge: TimeInterval?, newerThan newerThan: Date? = nil) -> Value? {
        cachedValue(for: key, maxAge: maxAge, newerThan: newerThan)
    }

    // MARK: Lookup

    /// Counts a read answered by a remembered "not found".
    @usableFromInline
    func noteNegativeHit() {
        counters.negativeHits.add(1, ordering: .relaxed)
    }

    /// A synchronous read once memory has missed (or, with `checksMemory`, from the
    /// start): the local lookup under a ticket of its own, counting the miss.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache"
    func cachedEntryBelowMemory(
        for key: Key, maxAge: TimeInterval?, newerThan: Date?, checksMemory: Bool
    ) -> CacheEntry<Value>? {
        if checksMemory, let found = lookUpMemory(key, maxAge: maxAge, newerThan: newerThan) {
            return cachedAnswer(found, key: key, ticket: nil)
        }
        guard writer.hasStores else {
            return cachedAnswer(.miss(masked: false, rejected: false), key: key, ticket: nil)
        }
        // The stale refresh of a hit below memory runs under this ticket: it is
        // given back only after the answer.
        let (ticket, pending) = writer.beginRead(key)
        defer { writer.endRead(ticket) }
        let found = lookUpLocally(key, maxAge: maxAge, newerThan: newerThan, pending: pending, ticket: ticket)
        return cachedAnswer(found, key: key, ticket: ticket)
    }

    /// What a synchronous read answers with `found`, found under `ticket` (`nil`
    /// for memory's first look), starting a background refresh of a stale hit
    /// (``serveStale(_:fetch:readTicket:)``) and counting a miss.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache"
    func cachedAnswer(_ found: _LocalLookup<Value>, key: Key, ticket: UInt64?) -> CacheEntry<Value>? {
        switch found {
        case .hit(let entry, let stale):
            if stale { serveStale(key, readTicket: ticket) }
            return entry
        case .negative:
            return nil
        case .miss:
            counters.misses.add(1, ordering: .relaxed)
            return nil
        }
    }

    /// The memory tier's answer, or `nil` when it holds nothing for `key`.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func lookUpMemory(_ key: Key, maxAge: TimeInterval?, newerThan: Date?) -> _LocalLookup<Value>? {
        guard let entry = memory.entry(for: key, maxAge: maxAge, newerThan: newerThan) else { return nil }
        guard case .value(let value) = entry.value else {
            counters.negativeHits.add(1, ordering: .relaxed)
            return .negative
        }
        return hit(value, storedAt: entry.storedAt, expiresAt: entry.expiresAt, now: clock.now(), source: .memory)
    }

    /// The one lookup below memory, for every calling convention: the queue of
    /// pending writes, then the local stores in order, promoting a hit into memory
    /// (and into the local stores before it) unless the key changed since
    /// `ticket`. Counts hits and the local tier's miss, not the overall miss (the
    /// caller knows whether slower tiers follow). Blocks for as long as the stores
    /// take (unless `pending` hides them): `async` callers run it on Hoard's
    /// executor.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache"
    func lookUpLocally(
        _ key: Key, maxAge: TimeInterval?, newerThan: Date?, pending: _CacheWriter<Key, Value>.Pending?, ticket: UInt64
    ) -> _LocalLookup<Value> {
        let now = clock.now()
        // Whether a queued clear of the remote stores only masks them.
        var remoteCleared = false
        switch pending {
        case nil:
            break
        case .removed(local: false, let remote)?:
            remoteCleared = remote
        case .removed(local: true, let remote)?:
            // A removal that left the remote stores alone (another instance's
            // invalidation, a clear of the local stores only) leaves them to answer.
            return .miss(masked: remote, rejected: false)
        case .value(let value, let storedAt, let expiresAt)?:
            guard expiresAt.map({ $0 > now }) ?? true else { return .miss(masked: true, rejected: false) }
            guard Self.passes(storedAt: storedAt, maxAge: maxAge, newerThan: newerThan, now: now) else {
                return .miss(masked: true, rejected: true)
            }
            counters.pendingHits.add(1, ordering: .relaxed)
            let entry = CacheEntry(value: _CacheSlot.value(value), storedAt: storedAt, expiresAt: expiresAt)
            let cost = memory.cost(of: entry.value)
            // Noted like any key memory takes in (before it does: see ``promote``),
            // so another instance's invalidation of it finds it.
            _ = remembering(key) {
                writer.promoteToMemory(key, ticket: ticket, memory: { memory.set(entry, for: key, cost: cost) })
            }
            return hit(value, storedAt: storedAt, expiresAt: expiresAt, now: now, source: .pendingWrite)
        }
        return lookUpLocalStores(
            key, maxAge: maxAge, newerThan: newerThan, now: now, ticket: ticket, masked: remoteCleared,
            withoutWaiting: false) ?? .miss(masked: remoteCleared, rejected: false)
    }

    /// The local lookup of an `async` read on the caller's own thread, when every
    /// local store can answer without waiting (``_NonWaitingLookup``): an inline
    /// value or a miss, read on a connection free now, with no lock to wait for.
    /// `nil` as soon as one store would wait (a value file to read, damage to
    /// remove, every connection busy, a lock held): the caller then runs
    /// ``lookUpLocally(_:maxAge:newerThan:pending:ticket:)`` on Hoard's executor.
    /// No user code runs here, as it may block: a cache with a timings callback
    /// always takes the executor, and so do bytes that do not decode (the
    /// executor's lookup reports them).
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func lookUpLocallyWithoutWaiting(_ key: Key, maxAge: TimeInterval?, newerThan: Date?, ticket: UInt64)
        -> _LocalLookup<Value>?
    {
        guard configuration.timings == nil, nonWaitingLocalStores != nil, codec != nil else { return nil }
        return lookUpLocalStores(
            key, maxAge: maxAge, newerThan: newerThan, now: clock.now(), ticket: ticket, masked: false,
            withoutWaiting: true)
    }

    /// The local stores in order, for both lookups above: the first entry that
    /// passes the filters and decodes is a hit, counted and promoted; the local
    /// tier's miss is counted (a miss is `masked` as the caller says, and
    /// `rejected` when a store held an entry the filters skipped). A store
    /// where the key is suspect (``_CacheWriter/isSuspect(_:in:)``: it may hold a
    /// value the cache replaced or removed) is skipped, as a miss.
    ///
    /// `withoutWaiting` reads each store with ``_NonWaitingLookup`` and gives up
    /// (`nil`) as soon as one would wait or an entry does not decode, reporting
    /// nothing; otherwise each store is read as long as it takes, with its read
    /// timed, and a failure is reported and skipped (never `nil`).
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func lookUpLocalStores(
        _ key: Key, maxAge: TimeInterval?, newerThan: Date?, now: Date, ticket: UInt64, masked: Bool,
        withoutWaiting: Bool
    ) -> _LocalLookup<Value>? {
        let keyString = key._storeKeyString
        var rejected = false
        for (index, store) in localStores.enumerated() {
            // A store that may hold an older value of the key is not asked.
            if writer.isSuspect(keyString, in: .local(index)) { continue }
            let stored: StoredEntry?
            if withoutWaiting, let nonWaiting = nonWaitingLocalStores {
                guard let found = nonWaiting[index]._entryWithoutWaiting(for: keyString, in: namespace) else {
                    return nil
                }
                stored = found
            } else {
                do {
                    stored = try _timed(configuration.timings, .read, .local(index)) {
                        try store.entry(for: keyString, in: namespace)
                    }
                } catch {
                    report(CacheFailure(key: key.cacheKeyString, tier: .local(index), operation: .read, error: error))
                    continue
                }
            }
            guard let stored else { continue }
            guard Self.passes(storedAt: stored.storedAt, maxAge: maxAge, newerThan: newerThan, now: now) else {
                rejected = true
                continue
            }
            let value: Value
            if withoutWaiting {
                guard let decoded = try? codec?.decode(stored.data) else { return nil }
                value = decoded
            } else {
                guard let decoded = decode(stored, key: key, tier: .local(index)) else { continue }
                value = decoded
            }
            counters.localHits.add(1, ordering: .relaxed)
            promote(value, stored, for: key, from: .local(index), ticket: ticket, intoLocalStoresBefore: index)
            return hit(value, storedAt: stored.storedAt, expiresAt: stored.expiresAt, now: now, source: .local(index))
        }
        if !localStores.isEmpty { counters.localMisses.add(1, ordering: .relaxed) }
        return .miss(masked: masked, rejected: rejected)
    }

    /// A hit on `value` that `source` answered.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func hit(
        _ value: Value, storedAt: Date, expiresAt: Date?, now: Date, source: CacheEntrySource
    ) -> _LocalLookup<Value> {
        let logicalExpiry = expiresAt.map { $0.addingTimeInterval(-grace) }
        return .hit(
            CacheEntry(value: value, storedAt: storedAt, expiresAt: logicalExpiry, source: source),
            stale: isStale(expiresAt: expiresAt, now: now))
    }

    /// Whether memory holds a value for `key` that `maxAge` / `newerThan` skip (not
    /// a remembered miss), for a read that is about to fetch because no tier
    /// answered it. Counts nothing and changes no eviction order.
    @usableFromInline
    func memoryHoldsRejectedValue(_ key: Key, maxAge: TimeInterval?, newerThan: Date?) -> Bool {
        guard let held = memory.peekEntry(for: key), case .value = held.value else { return false }
        return !Self.passes(storedAt: held.storedAt, maxAge: maxAge, newerThan: newerThan, now: clock.now())
    }

    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    static func passes(storedAt: Date, maxAge: TimeInterval?, newerThan: Date?, now: Date) -> Bool {
        if let maxAge, !(maxAge >= 0) || now.timeIntervalSince(storedAt) > maxAge { return false }
        if let newerThan, !(storedAt > newerThan) { return false }
        return true
    }

    /// Counts (and logs at `debug`) a promotion or fetched value that was not
    /// written because the key changed after the read began.
    @usableFromInline
    func noteDroppedPromotion(_ key: Key) {
        counters.droppedPromotions.add(1, ordering: .relaxed)
        configuration.logger?.debug(
            "promotion dropped: the key changed after the read began",
            metadata: [
                "hoard.store": "\(namespace)", "hoard.operation": "promote",
                "hoard.key": "\(key.cacheKeyString.prefix(200))",
            ])
    }

    /// Decodes stored bytes; on failure reports it and returns `nil`. The entry
    /// stays: its bytes are intact (the store checks that), they are just not a
    /// `Value` this codec reads (another type's, or an older format), and a write
    /// or a fetch replaces them.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func decode(_ stored: StoredEntry, key: Key, tier: CacheTier) -> Value? {
        guard let codec else { return nil }
        do {
            return try codec.decode(stored.data)
        } catch {
            report(CacheFailure(key: key.cacheKeyString, tier: tier, operation: .decode, error: error))
            return nil
        }
    }

    /// Copies a value found in a slower tier into memory, and into the local stores
    /// that come before `index` (every local store for a remote hit), through the
    /// writer: dropped when the key changed since `ticket`. The local copies expire
    /// no later than ``Configuration/localExpiry`` allows from now.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func promote(
        _ value: Value, _ stored: StoredEntry, for key: Key, from tier: CacheTier, ticket: UInt64,
        intoLocalStoresBefore index: Int
    ) {
        let entry = CacheEntry(value: _CacheSlot.value(value), storedAt: stored.storedAt, expiresAt: stored.expiresAt)
        let cost = memory.cost(of: entry.value)
        // The key is noted before memory takes it in: an invalidation of it from
        // another instance handled between the two must find it, or memory would
        // keep the copy it was to drop. (One handled before the promotion marks the
        // key changed, and the promotion is dropped.) No prune of the noted keys
        // drops it meanwhile.
        let made = remembering(key) { () -> Bool in
            if index == 0 {
                return writer.promoteToMemory(key, ticket: ticket) { memory.set(entry, for: key, cost: cost) }
            }
            let stores = _CacheWriter<Key, Value>.Operation.Kind.promote(
                key, value, stored.data, storedAt: stored.storedAt,
                expiresAt: capped(stored.expiresAt, by: configuration.localExpiry, now: clock.now()),
                localStoresBefore: index)
            return writer.promote(
                key, ticket: ticket, memory: { memory.set(entry, for: key, cost: cost) }, stores: stores)
        }
        guard made else {
            noteDroppedPromotion(key)
            return
        }
        counters.memoryPromotions.add(1, ordering: .relaxed)
        if index > 0 { counters.localPromotions.add(1, ordering: .relaxed) }
        publish(.promoted(key, from: tier))
    }
}
