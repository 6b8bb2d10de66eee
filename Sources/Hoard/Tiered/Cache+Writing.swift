import Foundation

extension Cache {
    // MARK: Writes

    /// Stores `value` in every tier and returns when every store has it.
    ///
    /// Memory is updated at once; the stores are written through the cache's serial
    /// writer, after any writes queued before, so the last write to a key wins in every
    /// tier. Store work runs on Hoard's own threads.
    ///
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: Its key.
    ///   - expires: The entry's lifetime; `nil` (the default) uses
    ///     ``Configuration/defaultExpiry``.
    /// - Throws: ``HoardError/Code/invalidArgument`` at once, changing no tier,
    ///   when `expires` gives a NaN date (`.after(.nan)`). Otherwise the first
    ///   error a store threw; memory keeps the value then. A store that did not
    ///   apply the write is not read for `key` until it applies a later change of
    ///   it: the removal of `key` that the writer sends it with its next batch or
    ///   ``flush()``, or a newer write.
    public func set(_ value: Value, for key: Key, expires: Expiry? = nil) async throws {
        let dates = dates(for: expires)
        try HoardError.checkWriteDates(
            storedAt: dates.storedAt, expiresAt: dates.memoryExpiry, key: key.cacheKeyString)
        let cost = memory.cost(of: .value(value))
        try await writer.apply(setting(value, for: key, dates: dates)) {
            setMemory(value, for: key, dates: dates, cost: cost)
        }
    }

    /// Writes an entry as it is, keeping its stored date and expiry (for example one
    /// read with ``entry(for:maxAge:newerThan:)`` from another cache), and returns
    /// when every store has it. The copies in the local and remote stores expire no
    /// later than ``Configuration/localExpiry`` and ``Configuration/remoteExpiry``
    /// allow from now.
    ///
    /// - Throws: ``HoardError/Code/invalidArgument`` at once, changing no tier,
    ///   when the entry's stored date is not a finite date or its expiry is NaN.
    ///   Otherwise the first error a store threw; memory keeps the value then. A
    ///   store that did not apply the write is not read for `key` until it
    ///   applies a later change of it: the removal of `key` that the writer sends
    ///   it with its next batch or ``flush()``, or a newer write.
    public func set(_ entry: CacheEntry<Value>, for key: Key) async throws {
        try HoardError.checkWriteDates(storedAt: entry.storedAt, expiresAt: entry.expiresAt, key: key.cacheKeyString)
        let physical = entry.expiresAt.map { $0.addingTimeInterval(grace) }
        let now = clock.now()
        let dates = _WriteDates(
            storedAt: entry.storedAt, memoryExpiry: physical,
            localExpiry: capped(physical, by: configuration.localExpiry, now: now),
            remoteExpiry: capped(physical, by: configuration.remoteExpiry, now: now))
        let cost = memory.cost(of: .value(entry.value))
        try await writer.apply(setting(entry.value, for: key, dates: dates)) {
            setMemory(entry.value, for: key, dates: dates, cost: cost)
        }
    }

    /// Removes `key` from every tier and returns when every store has removed it.
    ///
    /// - Throws: The first error a store threw. A store that did not remove `key`
    ///   is not read for it until it applies a later change of it: the removal
    ///   that the writer sends it again with its next batch or ``flush()``, or a
    ///   newer write.
    public func removeValue(for key: Key) async throws {
        try await writer.apply(.remove(key, remote: true)) {
            removeFromMemory(key)
        }
    }

    /// Removes every entry of this cache from the chosen tiers (the cache's namespace
    /// only: other caches sharing a store keep theirs), and returns when every chosen
    /// store has done it.
    ///
    /// The removal is queued behind the writes made before it, so none of them
    /// reappears afterwards; until it is applied, reads already treat the chosen
    /// stores as empty (a write queued before it stays readable while a store the
    /// clear leaves alone is yet to receive it). A read that began before the
    /// clear promotes nothing it found. The update streams (``updates(for:)``) of
    /// the keys it removes from memory and the local stores receive `nil`.
    ///
    /// - Parameters:
    ///   - clearsMemory: Empty the memory tier.
    ///   - disk: Empty this cache's namespace in the local stores
    ///     (``Configuration/localStores``: by default the cache's ``DiskStore``).
    ///   - remote: Empty this cache's namespace in the remote stores.
    /// - Throws: The first error a store threw; memory is cleared either way. A
    ///   store that did not apply the clear is not read at all until it applies
    ///   the clear of this cache's namespace that the writer sends it again with
    ///   its next batch or ``flush()``.
    public func clear(memory clearsMemory: Bool = true, disk: Bool = true, remote: Bool = true) async throws {
        try await writer.apply(.removeAll(local: disk, remote: remote)) {
            if clearsMemory { memory.removeAll() }
            publishClear(.cleared, memory: clearsMemory, localStores: disk)
        }
    }

    /// Waits until every write queued so far has reached the stores, then until
    /// every store that did not apply a change (and so may hold the value it
    /// replaced or removed) has been sent the removals that repair it once, and
    /// the configuration's `onError` and `timings` have been called for all of it.
    ///
    /// A store that is reachable again therefore holds no value this cache knows
    /// to be replaced or removed once `flush()` returns: a program that flushes
    /// and exits leaves no such value for its next run to read. A repair the store
    /// fails again is not reported (the change it repairs was); the store stays
    /// unread for those keys, and the next batch or `flush()` sends the repair
    /// again. With no such store, the repairs cost nothing.
    ///
    /// A short-lived program calls it before it ends. A normal exit without it
    /// (`exit(_:)`, returning from `main`) still flushes, repairs included, in an
    /// `atexit` handler, for at most 30 seconds; an `onError`, `timings` or log
    /// handler that itself calls `exit` makes that handler wait the whole bound.
    public func flush() async {
        await writer.flush()
    }

    // MARK: Helpers

    /// The subscript setter: memory at once, stores behind (in write-through mode,
    /// the local stores before returning). Store failures are reported. While the
    /// values queued for the stores are over
    /// ``Configuration/writeQueueByteLimit``, it waits for the writer first.
    ///
    /// A cache without stores, with no read in flight, writes memory directly from
    /// code specialised in the caller's module: the common case costs about what
    /// `MemoryCache.set` costs. Inlinable for that (the memory-only `cache[k] = v`
    /// row of `CacheBenchmarks`); everything past it is not.
    @inlinable  // CacheBenchmarks "memory set: Cache (no stores)"
    func assign(_ value: Value?, for key: Key, expires: Expiry?) {
        if let expires, expires._isNaN {
            refuseAssignment(for: key)
            return
        }
        if !writer.hasStores, let value, writer.isQuiet {
            let now = clock.now()
            let entry = CacheEntry(
                value: _CacheSlot.value(value), storedAt: now, expiresAt: memoryExpiry(expires, storedAt: now))
            memory.set(entry, for: key)
            if observers.ifActive != nil { publishSet(key, value) }
            if !writer.isQuiet { reassignInOrder(value, entry, for: key) }
            return
        }
        assignInOrder(value, for: key, expires: expires)
    }

    /// Reports an assignment whose lifetime gives a NaN date
    /// (`cache[key, expires: .after(.nan)] = value`) as a failed write of `key`,
    /// with ``HoardError/Code/invalidArgument``, and removes the key's older value
    /// from every tier, as a value that cannot be encoded does: an assignment
    /// reports its failure after the fact, and a read must not then return the
    /// value it was to replace.
    @usableFromInline
    func refuseAssignment(for key: Key) {
        let error = HoardError(
            .invalidArgument,
            "the lifetime gives a NaN expiry date; the value was not stored and the older one removed",
            key: key.cacheKeyString)
        report(CacheFailure(key: key.cacheKeyString, tier: .memory, operation: .write, error: error))
        assign(nil, for: key, expires: nil)
    }

    /// After a memory-only assignment that skipped the writer, when a read began
    /// meanwhile and may have missed the value: gives the write its place in the
    /// order, so that the read's fetched value is dropped, and writes memory again
    /// over whatever that read put back.
    @usableFromInline
    func reassignInOrder(_ value: Value, _ entry: CacheEntry<_CacheSlot<Value>>, for key: Key) {
        let dates = _WriteDates(
            storedAt: entry.storedAt, memoryExpiry: entry.expiresAt, localExpiry: nil, remoteExpiry: nil)
        // The cost closure is user code: run it before the writer's lock is taken.
        let cost = memory.cost(of: entry.value)
        writer.write(setting(value, for: key, dates: dates)) { memory.set(entry, for: key, cost: cost) }
    }

    /// Publishes a set of `key` to the event and update streams.
    @usableFromInline
    func publishSet(_ key: Key, _ value: Value) {
        publish(.set(key), key: key, value: value)
    }

    /// ``assign(_:for:expires:)`` through the writer: specialised, with the writer's
    /// queuing of a change, for the cache's types.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    func assignInOrder(_ value: Value?, for key: Key, expires: Expiry?) {
        // Closure literals passed straight to the writer stay on the stack.
        let blocking = configuration.writeMode == .writeThrough
        if let value {
            let dates = self.dates(for: expires)
            let kind = setting(value, for: key, dates: dates)
            let cost = memory.cost(of: .value(value))
            if blocking {
                // A store's failure is reported (events, onError, statistics) by
                // the writer; the subscript has no way to throw it.
                try? writer.applyBlocking(kind) { setMemory(value, for: key, dates: dates, cost: cost) }
            } else {
                writer.write(kind, waitsForRoom: true) { setMemory(value, for: key, dates: dates, cost: cost) }
            }
        } else if blocking {
            try? writer.applyBlocking(.remove(key, remote: true)) { removeFromMemory(key) }
        } else {
            writer.write(.remove(key, remote: true)) { removeFromMemory(key) }
        }
    }

    /// Writes a fetched value to every tier unless `key` changed since `ticket`.
    ///
    /// - Returns: Whether the value was written.
    func write(_ value: Value, for key: Key, dates: _WriteDates, ifUnchangedSince ticket: UInt64) -> Bool {
        let cost = memory.cost(of: .value(value))
        return writer.write(setting(value, for: key, dates: dates), ifUnchangedSince: ticket) {
            setMemory(value, for: key, dates: dates, cost: cost)
        }
    }

    /// The writer's operation for storing `value`.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    func setting(_ value: Value, for key: Key, dates: _WriteDates) -> _CacheWriter<Key, Value>.Operation.Kind {
        .set(key, value, dates)
    }

    /// The memory side of a write (run by the writer, in order, under its lock):
    /// the value at `cost` (computed before, as the cost closure is user code), the
    /// key's string for invalidations, and the event.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    func setMemory(_ value: Value, for key: Key, dates: _WriteDates, cost: Int) {
        memory.set(
            CacheEntry(value: .value(value), storedAt: dates.storedAt, expiresAt: dates.memoryExpiry), for: key,
            cost: cost)
        remember(key)
        publish(.set(key), key: key, value: value)
    }

    /// The memory side of a removal.
    @usableFromInline
    func removeFromMemory(_ key: Key) {
        memory.removeValue(for: key)
        publish(.removed(key), key: key, value: nil)
    }
}
