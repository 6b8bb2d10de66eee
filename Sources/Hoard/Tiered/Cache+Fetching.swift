import Foundation
import Synchronization

extension Cache {
    // MARK: Asynchronous reads

    /// The value for `key` from any tier, or from the fetch closure given at init.
    ///
    /// Tries memory, the local stores, the remote stores, then the fetch closure. A
    /// hit below memory is promoted into the faster tiers, unless the key was
    /// written, removed or cleared after this read began. Concurrent calls that
    /// miss for the same key run the fetch once and all receive its result; a
    /// fetched value is written to every tier. An entry older than `maxAge` (or not
    /// newer than `newerThan`) is skipped, so with a fetch closure it is fetched
    /// again; if that fetch returns `nil`, the source has no value for the key, and
    /// the key is removed from every tier (unless it was written, removed or cleared
    /// after this read began), so that a read without a filter does not return the
    /// skipped value. A fetch that returns `nil` when no tier held a value writes
    /// nothing to the stores. `maxAge` is 0 or more seconds (`.infinity` for any age); a NaN or
    /// negative `maxAge` or a NaN `newerThan`, which no entry satisfies, is refused
    /// before any tier is read. Local-store work runs on Hoard's own threads, never on the cooperative
    /// pool. For a read that never waits on the network or a fetch, use
    /// ``cachedValue(for:maxAge:newerThan:)`` or the subscript.
    ///
    /// - Returns: The value, or `nil` when no tier holds it and there is no fetch
    ///   closure or it returned `nil`.
    /// - Throws: ``HoardError/Code/invalidArgument`` for a NaN or negative `maxAge`
    ///   or a NaN `newerThan` (no tier is read, nothing is fetched); the fetch
    ///   closure's error (every waiter receives the same one; nothing is stored and
    ///   the next call fetches again); or `CancellationError` when the calling task
    ///   is cancelled while waiting (a remote store's read that fails once it is
    ///   cancelled ends the read so, and is not reported: the store answered the
    ///   cancellation). Store failures are reported, not thrown.
    @inlinable  // CacheBenchmarks "memory hit: Cache async value(for:)"
    public func value(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) async throws -> Value? {
        try await value(for: key, maxAge: maxAge, newerThan: newerThan, fetch: fetch)
    }

    /// The value for `key` from any tier, or from `fetch` when none holds it.
    ///
    /// Like ``value(for:maxAge:newerThan:)`` with a per-call fetch closure (`nil`
    /// for none). If a fetch for `key` is already running, this call waits for that
    /// one instead.
    @inlinable  // CacheBenchmarks "memory hit: Cache async value(for:)"
    public func value(
        for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil,
        fetch: Fetch?
    ) async throws -> Value? {
        try HoardError.checkReadFilters(maxAge: maxAge, newerThan: newerThan, key: key.cacheKeyString)
        if grace == 0, let slot = memory.value(for: key, maxAge: maxAge, newerThan: newerThan) {
            if case .value(let value) = slot { return value }
            noteNegativeHit()
            return nil
        }
        return try await entry(for: key, maxAge: maxAge, newerThan: newerThan, fetch: fetch, checksMemory: grace > 0)?
            .value
    }

    /// The value for `key` from any tier or the fetch closure, or `defaultValue`
    /// (which is not stored) when there is none or the fetch fails.
    public func value(for key: Key, default defaultValue: @autoclosure () -> Value) async -> Value {
        let found = try? await value(for: key)
        return found ?? defaultValue()
    }

    /// The value for `key` from any tier or the fetch closure:
    /// `try await cache[async: url]`. Reads like ``value(for:maxAge:newerThan:)``.
    public subscript(async key: Key, maxAge maxAge: TimeInterval? = nil, newerThan newerThan: Date? = nil) -> Value? {
        get async throws { try await value(for: key, maxAge: maxAge, newerThan: newerThan) }
    }

    /// The entry for `key` (value, stored date, expiry) from any tier, or fetched;
    /// reads like ``value(for:maxAge:newerThan:)``. Its ``CacheEntry/source`` says
    /// which tier answered this read: memory, a write still queued for the stores, a
    /// local or remote store (by position), or the fetch.
    ///
    /// - Throws: As ``value(for:maxAge:newerThan:)``: ``HoardError/Code/invalidArgument``
    ///   for a NaN or negative `maxAge` or a NaN `newerThan`, the fetch closure's
    ///   error, or `CancellationError`.
    public func entry(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) async throws -> CacheEntry<
        Value
    >? {
        try HoardError.checkReadFilters(maxAge: maxAge, newerThan: newerThan, key: key.cacheKeyString)
        return try await entry(for: key, maxAge: maxAge, newerThan: newerThan, fetch: fetch, checksMemory: true)
    }

    // MARK: Below memory

    /// The asynchronous read below memory (or from memory, with `checksMemory`).
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func entry(
        for key: Key, maxAge: TimeInterval?, newerThan: Date?, fetch: Fetch?, checksMemory: Bool
    ) async throws -> CacheEntry<Value>? {
        if checksMemory, let found = lookUpMemory(key, maxAge: maxAge, newerThan: newerThan) {
            return answer(found, key: key, fetch: fetch, ticket: nil)
        }
        return try await sharedEntryBelowMemory(for: key, maxAge: maxAge, newerThan: newerThan, fetch: fetch)
    }

    /// The read below memory, shared by concurrent reads of `key` with the same
    /// filters (``_SharedReads``): the first leads the walk, the others wait for
    /// its result (counted as ``CacheStatistics/coalescedWaits``). A reader whose
    /// leader was cancelled walks again itself; any other error of the walk (a
    /// `CancellationError` the fetch threw itself included) reaches every reader.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func sharedEntryBelowMemory(
        for key: Key, maxAge: TimeInterval?, newerThan: Date?, fetch: Fetch?
    ) async throws -> CacheEntry<Value>? {
        let name = _SharedReads<Key, CacheEntry<Value>?>.Name(
            key: key, maxAge: maxAge, newerThan: newerThan, fetches: fetch != nil)
        while true {
            let (ticket, pending) = writer.beginRead(key)
            let writer = self.writer
            let registered: Bool
            switch sharedReads.join(name, ticket: ticket, mayJoin: { !writer.hasChanged(key, since: $0) }) {
            case .joins(let flight):
                writer.endRead(ticket)
                counters.coalescedWaits.add(1, ordering: .relaxed)
                do {
                    return try await flight.wait()
                } catch is _WalkLeaderCancelled {
                    try Task.checkCancellation()
                    continue
                }
            case .leads(let isRegistered):
                registered = isRegistered
            }
            let result: Result<CacheEntry<Value>?, any Error>
            do {
                result = .success(
                    try await walkBelowMemory(
                        for: key, maxAge: maxAge, newerThan: newerThan, fetch: fetch, ticket: ticket, pending: pending))
            } catch {
                result = .failure(error)
            }
            // A leader stopped by its own cancellation found nothing for the others:
            // they walk again. Any other error is the walk's, theirs too.
            let shared = result.mapError { error -> any Error in
                error is CancellationError && Task.isCancelled ? _WalkLeaderCancelled() : error
            }
            sharedReads.finish(name, registered: registered, with: shared)
            writer.endRead(ticket)
            return try result.get()
        }
    }

    /// One walk below memory under `ticket` (from before the local lookup to the
    /// end of the remote lookup and the fetch), so that nothing it found or
    /// fetched lands over a newer write. The local stores are read on the
    /// caller's thread when they can answer without waiting
    /// (``lookUpLocallyWithoutWaiting(_:maxAge:newerThan:ticket:)``), else on
    /// Hoard's executor.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func walkBelowMemory(
        for key: Key, maxAge: TimeInterval?, newerThan: Date?, fetch: Fetch?, ticket: UInt64,
        pending: _CacheWriter<Key, Value>.Pending?
    ) async throws -> CacheEntry<Value>? {
        // A memory-only write that saw no read in flight wrote memory without a
        // sequence number: it is either there now, or made after this ticket.
        // (`contains` counts nothing, so a miss is counted once.)
        if !writer.hasStores, memory.contains(key) {
            // This second look counts a hit or a miss in the memory tier, and the
            // read's first look counted a miss: one of the two is taken back.
            counters.repeatedMemoryLookups.add(1, ordering: .relaxed)
            if let found = lookUpMemory(key, maxAge: maxAge, newerThan: newerThan) {
                return answer(found, key: key, fetch: fetch, ticket: ticket)
            }
        }
        let local: _LocalLookup<Value>
        if localStores.isEmpty || pending?.hidesLocalStores == true {
            local = lookUpLocally(key, maxAge: maxAge, newerThan: newerThan, pending: pending, ticket: ticket)
        } else if pending == nil,
            let found = lookUpLocallyWithoutWaiting(key, maxAge: maxAge, newerThan: newerThan, ticket: ticket)
        {
            local = found
        } else {
            counters.executorLookups.add(1, ordering: .relaxed)
            local = await executor.run {
                self.lookUpLocally(key, maxAge: maxAge, newerThan: newerThan, pending: pending, ticket: ticket)
            }
        }
        // Whether a tier held a value that the filters skipped.
        var rejected: Bool
        switch local {
        case .hit, .negative:
            return answer(local, key: key, fetch: fetch, ticket: ticket)
        case .miss(let masked, let rejectedLocally):
            rejected = rejectedLocally
            if !masked {
                let remote = try await lookUpRemotely(key, maxAge: maxAge, newerThan: newerThan, ticket: ticket)
                switch remote {
                case .hit, .negative:
                    return answer(remote, key: key, fetch: fetch, ticket: ticket)
                case .miss(_, let rejectedRemotely):
                    rejected = rejected || rejectedRemotely
                }
            }
        }
        guard let fetch else {
            counters.misses.add(1, ordering: .relaxed)
            return nil
        }
        // Memory's look (before this walk, or above) skipped what it holds too.
        if !rejected, maxAge != nil || newerThan != nil {
            rejected = memoryHoldsRejectedValue(key, maxAge: maxAge, newerThan: newerThan)
        }
        return try await fetchAndStore(key, using: fetch, ticket: ticket, replacingStale: rejected)
    }

    /// The entry a hit or a negative hit answers with, starting a background
    /// refresh for a stale one (see ``serveStale(_:fetch:readTicket:)`` for
    /// `ticket`).
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func answer(_ found: _LocalLookup<Value>, key: Key, fetch: Fetch?, ticket: UInt64?) -> CacheEntry<Value>? {
        guard case .hit(let entry, let stale) = found else { return nil }
        if stale { serveStale(key, fetch: fetch, readTicket: ticket) }
        return entry
    }

    // MARK: Remote tier and fetch

    /// The remote stores in order; a hit is decoded and promoted into memory and
    /// every local store unless the key changed since `ticket`. A store where the
    /// key is suspect (``_CacheWriter/isSuspect(_:in:)``) is skipped, as a miss.
    ///
    /// - Returns: The hit (stale or not, for ``answer(_:key:fetch:ticket:)``), or a
    ///   miss, `rejected` when a store held an entry the filters skipped.
    /// - Throws: `CancellationError` when a store's read fails once the calling
    ///   task is cancelled (a remote store waiting for a connection throws when
    ///   its caller is cancelled): the caller left, the store did not fail, so
    ///   nothing is reported and the read ends without trying the next tier or
    ///   the fetch.
    @usableFromInline
    func lookUpRemotely(
        _ key: Key, maxAge: TimeInterval?, newerThan: Date?, ticket: UInt64
    ) async throws -> _LocalLookup<Value> {
        guard !remoteStores.isEmpty else { return .miss(masked: false, rejected: false) }
        let keyString = key._storeKeyString
        var rejected = false
        for (index, store) in remoteStores.enumerated() {
            // A store that may hold an older value of the key is not asked.
            if writer.isSuspect(keyString, in: .remote(index)) { continue }
            let stored: StoredEntry?
            do {
                stored = try await _timed(configuration.timings, .read, .remote(index)) {
                    try await store.entry(for: keyString, in: namespace)
                }
            } catch {
                if Task.isCancelled { throw CancellationError() }
                report(CacheFailure(key: key.cacheKeyString, tier: .remote(index), operation: .read, error: error))
                continue
            }
            let now = clock.now()
            guard let stored else { continue }
            guard Self.passes(storedAt: stored.storedAt, maxAge: maxAge, newerThan: newerThan, now: now) else {
                rejected = true
                continue
            }
            guard let value = decode(stored, key: key, tier: .remote(index)) else { continue }
            counters.remoteHits.add(1, ordering: .relaxed)
            promote(
                value, stored, for: key, from: .remote(index), ticket: ticket, intoLocalStoresBefore: localStores.count)
            return hit(value, storedAt: stored.storedAt, expiresAt: stored.expiresAt, now: now, source: .remote(index))
        }
        counters.remoteMisses.add(1, ordering: .relaxed)
        return .miss(masked: false, rejected: rejected)
    }

    /// Runs `fetch` once for every concurrent caller missing `key`, and stores what
    /// it returns in every tier (unless the key changed since `ticket`, the ticket
    /// of the caller that started the fetch) before any caller resumes.
    ///
    /// A caller joins a running fetch only when the key has not changed since that
    /// fetch's read began: a read that begins after a change never receives a value
    /// fetched before it.
    ///
    /// With `replacingStale` (the read's freshness filters skipped a value of `key`
    /// in some tier), a fetch that returns `nil` removes the key from every tier, as
    /// a refresh of a stale value does (``fetchOnce(_:using:ticket:replacingStale:)``).
    /// A caller that joins another's fetch leaves this to that caller's read.
    @usableFromInline
    func fetchAndStore(
        _ key: Key, using fetch: @escaping Fetch, ticket: UInt64, replacingStale: Bool = false
    ) async throws -> CacheEntry<Value>? {
        let writer = self.writer
        return try await flights.run(
            key,
            ticket: ticket,
            joins: { !writer.hasChanged(key, since: $0) },
            joined: { counters.coalescedWaits.add(1, ordering: .relaxed) },
            led: { writer.retainRead(ticket) },
            // The ticket is held while a caller may still join the flight: the
            // writer remembers the changes that `joins` looks for only while a
            // read holds a ticket that old.
            forgotten: { writer.endRead(ticket) }
        ) {
            try await self.fetchOnce(key, using: fetch, ticket: ticket, replacingStale: replacingStale)
        }
    }

    /// The body of a flight for `key`: runs `fetch` and stores what it returns in
    /// every tier, unless the key changed since `ticket`.
    ///
    /// With `replacingStale` (a background refresh of a stale value, or a read whose
    /// freshness filters skipped a value of the key that a tier holds), a fetch that
    /// returns `nil` also removes that value from every tier, unless the key changed
    /// since `ticket`: the source no longer has one, so the value must not be served
    /// for the rest of its grace period or to the next read without a filter (nor
    /// come back from a store once a remembered miss in memory expires). Without it
    /// (no tier held a value for the read), `nil` writes nothing to the stores.
    func fetchOnce(
        _ key: Key, using fetch: @escaping Fetch, ticket: UInt64, replacingStale: Bool = false
    ) async throws -> CacheEntry<Value>? {
        counters.misses.add(1, ordering: .relaxed)
        counters.fetches.add(1, ordering: .relaxed)
        let value: Value?
        do {
            value = try await _timed(configuration.timings, .fetch, .fetch) { try await fetch(key) }
        } catch {
            // Reported once, where the fetch ran, however many readers joined it
            // (each of them receives the error too).
            report(CacheFailure(key: key.cacheKeyString, tier: .fetch, operation: .fetch, error: error))
            throw error
        }
        publish(.fetched(key, found: value != nil))
        guard let value else {
            if replacingStale {
                removeStale(key, ifUnchangedSince: ticket)
            } else if let seconds = configuration.negativeCaching {
                let expiresAt = clock.now().addingTimeInterval(seconds)
                let entry = CacheEntry(value: _CacheSlot<Value>.missing, storedAt: clock.now(), expiresAt: expiresAt)
                let cost = memory.cost(of: entry.value)
                // Noted before memory takes it in, as every key memory takes in:
                // another instance's invalidation must find it (``promote``).
                _ = remembering(key) {
                    writer.promoteToMemory(key, ticket: ticket) { memory.set(entry, for: key, cost: cost) }
                }
            }
            return nil
        }
        let dates = dates(for: nil)
        if !write(value, for: key, dates: dates, ifUnchangedSince: ticket) {
            noteDroppedPromotion(key)
        }
        return CacheEntry(
            value: value, storedAt: dates.storedAt, expiresAt: dates.memoryExpiry.map { $0.addingTimeInterval(-grace) },
            source: .fetch)
    }

    /// Removes `key`'s stale value (past its lifetime, or older than a read's
    /// freshness filters allow) from every tier, unless the key changed since
    /// `ticket`, after a fetch found that the source has no value for it; with
    /// negative caching, memory then remembers the miss. One write in the writer's
    /// order, so a write or removal made after the read began is never undone.
    func removeStale(_ key: Key, ifUnchangedSince ticket: UInt64) {
        let now = clock.now()
        let missing = configuration.negativeCaching.map { seconds in
            CacheEntry(value: _CacheSlot<Value>.missing, storedAt: now, expiresAt: now.addingTimeInterval(seconds))
        }
        let cost = missing.map { memory.cost(of: $0.value) } ?? 0
        writer.write(.remove(key, remote: true), ifUnchangedSince: ticket) {
            removeFromMemory(key)
            if let missing {
                memory.set(missing, for: key, cost: cost)
                remember(key)
            }
        }
    }

    /// Starts one background refresh of `key`, the stale value a read found, unless
    /// a fetch of it is running (which the refresh would only repeat) or the key
    /// changed since that read began; reports the refresh's failure once.
    ///
    /// The refresh belongs to the read: it runs under `readTicket`, the ticket of
    /// the read that found the stale value below memory (held by the caller during
    /// this call), so a write, removal or clear made while that read was looking
    /// leaves nothing to refresh, and one made while the refresh fetches drops its
    /// value. A stale hit in memory (`readTicket` is `nil`: memory's first look
    /// takes no ticket) is refreshed under a ticket taken here, and only when
    /// memory still holds a stale value for `key` under it: a change between the
    /// read and this call has replaced or removed the value the read found.
    ///
    /// The refresh is a flight of its own, started and registered in one step, so
    /// that of stale reads that race, one refreshes; foreground reads that miss
    /// meanwhile join it.
    @usableFromInline
    func serveStale(_ key: Key, fetch: Fetch? = nil, readTicket: UInt64?) {
        counters.staleHits.add(1, ordering: .relaxed)
        guard let fetch = fetch ?? self.fetch else { return }
        let ticket: UInt64
        if let readTicket {
            writer.retainRead(readTicket)
            ticket = readTicket
        } else {
            ticket = writer.beginRead(key).ticket
            guard let held = memory.peekEntry(for: key), case .value = held.value,
                isStale(expiresAt: held.expiresAt, now: clock.now())
            else {
                writer.endRead(ticket)
                return
            }
        }
        if writer.hasChanged(key, since: ticket) {
            writer.endRead(ticket)
            return
        }
        let writer = self.writer
        let started = flights.start(key, ticket: ticket, forgotten: { writer.endRead(ticket) }) {
            // A failure is reported where the fetch ran; reads that joined the
            // refresh receive it as well.
            return try await self.fetchOnce(key, using: fetch, ticket: ticket, replacingStale: true)
        }
        if !started { writer.endRead(ticket) }
    }
}
