import Foundation

extension Cache {
    // MARK: Asynchronous reads

    /// The value for `key` from any tier, or from the fetch closure given at init.
    ///
    /// Tries memory, the local stores, the remote stores, then the fetch closure. A
    /// hit below memory is promoted into the faster tiers. Concurrent calls that miss
    /// for the same key run the fetch once and all receive its result; a fetched
    /// value is written to every tier. An entry older than `maxAge` (or not newer than
    /// `newerThan`) is skipped, so with a fetch closure it is fetched again.
    ///
    /// - Returns: The value, or `nil` when no tier holds it and there is no fetch
    ///   closure or it returned `nil`.
    /// - Throws: The fetch closure's error (every waiter receives the same one; nothing
    ///   is stored and the next call fetches again), or `CancellationError` when the
    ///   calling task is cancelled while waiting. Store failures are reported, not thrown.
    public func value(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) async throws -> Value? {
        try await value(for: key, maxAge: maxAge, newerThan: newerThan, fetch: fetch)
    }

    /// The value for `key` from any tier, or from `fetch` when none holds it.
    ///
    /// Like ``value(for:maxAge:newerThan:)-(_,_,_)`` with a per-call fetch closure. If
    /// a fetch for `key` is already running, this call waits for that one instead.
    public func value(
        for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil,
        fetch: Fetch?
    ) async throws -> Value? {
        if grace == 0, let slot = memory.value(for: key, maxAge: maxAge, newerThan: newerThan) {
            if case .value(let value) = slot { return value }
            return nil
        }
        switch lookUpLocally(key, maxAge: maxAge, newerThan: newerThan, checksMemory: grace > 0) {
        case .hit(let entry, let stale):
            if stale { serveStale(key, fetch: fetch) }
            return entry.value
        case .negative:
            return nil
        case .miss(let masked):
            if !masked, let value = await lookUpRemotely(key, maxAge: maxAge, newerThan: newerThan) {
                return value
            }
        }
        counters.misses.add(1, ordering: .relaxed)
        guard let fetch else { return nil }
        return try await fetchAndStore(key, using: fetch)
    }

    /// The value for `key` from any tier, or `defaultValue` (which is not stored),
    /// for callers without a fetch closure.
    public func value(for key: Key, default defaultValue: @autoclosure () -> Value) async -> Value {
        let found = try? await value(for: key, fetch: nil)
        return found ?? defaultValue()
    }

    /// The value for `key` from any tier or the fetch closure:
    /// `try await cache[async: url]`.
    public subscript(async key: Key, maxAge maxAge: TimeInterval? = nil, newerThan newerThan: Date? = nil) -> Value? {
        get async throws { try await value(for: key, maxAge: maxAge, newerThan: newerThan) }
    }

    /// The entry for `key` (value, stored date, expiry) from any tier, or fetched.
    public func entry(for key: Key, maxAge: TimeInterval? = nil, newerThan: Date? = nil) async throws -> CacheEntry<Value>? {
        if case .hit(let entry, let stale) = lookUpLocally(key, maxAge: maxAge, newerThan: newerThan) {
            if stale { serveStale(key) }
            return entry
        }
        guard try await value(for: key, maxAge: maxAge, newerThan: newerThan) != nil else { return nil }
        switch lookUpLocally(key, maxAge: nil, newerThan: nil) {
        case .hit(let entry, _): return entry
        case .negative, .miss: return nil
        }
    }

    // MARK: Remote tier and fetch

    func lookUpRemotely(_ key: Key, maxAge: TimeInterval?, newerThan: Date?) async -> Value? {
        let keyString = key.cacheKeyString
        for (index, store) in remoteStores.enumerated() {
            let stored: StoredEntry?
            do {
                stored = try await store.entry(for: keyString, in: namespace)
            } catch {
                report(CacheFailure(key: keyString, tier: .remote(index), operation: .read, error: error))
                continue
            }
            guard let stored,
                Self.passes(storedAt: stored.storedAt, maxAge: maxAge, newerThan: newerThan, now: clock.now()),
                let value = decode(stored, key: key, tier: .remote(index), removeFrom: nil)
            else { continue }
            counters.remoteHits.add(1, ordering: .relaxed)
            promote(value, stored, for: key, from: .remote(index), intoLocalStoresBefore: localStores.count)
            return value
        }
        return nil
    }

    /// Runs `fetch` once for every concurrent caller missing `key`, and stores what it
    /// returns in every tier before any caller resumes.
    func fetchAndStore(_ key: Key, using fetch: @escaping Fetch) async throws -> Value? {
        try await flights.run(key, joined: { counters.coalescedWaits.add(1, ordering: .relaxed) }) {
            self.counters.fetches.add(1, ordering: .relaxed)
            let value = try await fetch(key)
            self.publish(.fetched(key, found: value != nil))
            if let value {
                self.store(value, for: key, expires: nil, event: nil)
            } else if let seconds = self.configuration.negativeCaching {
                self.memory.set(.missing, for: key, expires: .after(seconds))
            }
            return value
        }
    }

    /// Starts one background refresh of `key` unless one is running; failures are
    /// reported.
    func serveStale(_ key: Key, fetch: Fetch? = nil) {
        counters.staleHits.add(1, ordering: .relaxed)
        guard let fetch = fetch ?? self.fetch, !flights.isRunning(key) else { return }
        Task {
            do {
                _ = try await self.fetchAndStore(key, using: fetch)
            } catch {
                self.report(CacheFailure(key: key.cacheKeyString, tier: .fetch, operation: .fetch, error: error))
            }
        }
    }
}
