import Foundation

extension Cache {
    // MARK: Writes

    /// Stores `value` in every tier and returns when every store has it.
    ///
    /// Memory is updated at once; the stores are written through the cache's serial
    /// writer, after any writes queued before, so the last write to a key wins in every
    /// tier.
    ///
    /// - Parameters:
    ///   - expires: The entry's lifetime; `nil` (the default) uses
    ///     ``Configuration/defaultExpiry``.
    /// - Throws: The first error a store threw. Memory keeps the value either way.
    public func set(_ value: Value, for key: Key, expires: Expiry? = nil) async throws {
        let dates = store(value, for: key, expires: expires, event: .set(key), queue: false)
        if configuration.writeMode == .writeThrough {
            try writeLocally(value, for: key, dates: dates, throwing: true)
            try await writer.apply(.set(key, value, storedAt: dates.storedAt, localExpiry: nil, remoteExpiry: dates.remoteExpiry, local: false))
        } else {
            try await writer.apply(.set(key, value, storedAt: dates.storedAt, localExpiry: dates.localExpiry, remoteExpiry: dates.remoteExpiry, local: true))
        }
    }

    /// Writes an entry as it is, keeping its stored date and expiry (for example one
    /// read with ``entry(for:maxAge:newerThan:)-(_,_,_)`` from another cache), and
    /// returns when every store has it.
    public func set(_ entry: CacheEntry<Value>, for key: Key) async throws {
        let physical = entry.expiresAt.map { $0.addingTimeInterval(grace) }
        memory.set(CacheEntry(value: .value(entry.value), storedAt: entry.storedAt, expiresAt: physical), for: key)
        remember(key)
        publish(.set(key), key: key, value: entry.value)
        try await writer.apply(.set(key, entry.value, storedAt: entry.storedAt, localExpiry: physical, remoteExpiry: physical, local: true))
    }

    /// Removes `key` from every tier and returns when every store has removed it.
    ///
    /// - Throws: The first error a store threw.
    public func removeValue(for key: Key) async throws {
        memory.removeValue(for: key)
        publish(.removed(key), key: key, value: nil)
        try await writer.apply(.remove(key))
    }

    /// Removes every entry of this cache from the chosen tiers (the cache's namespace
    /// only: other caches sharing a store keep theirs), and returns when every chosen
    /// store has done it.
    ///
    /// The removal is queued behind the writes made before it, so none of them
    /// reappears afterwards; until it is applied, reads already treat the chosen
    /// stores as empty.
    ///
    /// - Parameters:
    ///   - clearsMemory: Empty the memory tier.
    ///   - disk: Empty this cache's namespace in the local stores
    ///     (``Configuration/localStores``: by default the cache's ``DiskStore``).
    ///   - remote: Empty this cache's namespace in the remote stores.
    /// - Throws: The first error a store threw; memory is cleared either way.
    public func clear(memory clearsMemory: Bool = true, disk: Bool = true, remote: Bool = true) async throws {
        if clearsMemory { memory.removeAll() }
        publish(.cleared)
        guard disk || remote else { return }
        try await writer.apply(.removeAll(local: disk, remote: remote))
    }

    /// Waits until every write queued so far has reached the stores.
    public func flush() async {
        await writer.flush()
    }

    // MARK: Helpers

    /// The subscript setter: memory at once, stores behind (local stores before
    /// returning in write-through mode). Failures are reported.
    @usableFromInline
    func assign(_ value: Value?, for key: Key, expires: Expiry?) {
        guard let value else {
            memory.removeValue(for: key)
            publish(.removed(key), key: key, value: nil)
            writer.enqueue(.remove(key))
            return
        }
        let dates = store(value, for: key, expires: expires, event: .set(key), queue: false)
        if configuration.writeMode == .writeThrough {
            try? writeLocally(value, for: key, dates: dates, throwing: false)
            writer.enqueue(.set(key, value, storedAt: dates.storedAt, localExpiry: nil, remoteExpiry: dates.remoteExpiry, local: false))
        } else {
            writer.enqueue(.set(key, value, storedAt: dates.storedAt, localExpiry: dates.localExpiry, remoteExpiry: dates.remoteExpiry, local: true))
        }
    }

    /// Puts `value` in memory (and, when `queue` is true, queues the store writes).
    @discardableResult
    func store(_ value: Value, for key: Key, expires: Expiry?, event: CacheEvent<Key>?, queue: Bool = true) -> _WriteDates {
        let dates = dates(for: expires)
        memory.set(CacheEntry(value: .value(value), storedAt: dates.storedAt, expiresAt: dates.memoryExpiry), for: key)
        remember(key)
        publish(event ?? .set(key), key: key, value: value)
        if queue {
            writer.enqueue(.set(key, value, storedAt: dates.storedAt, localExpiry: dates.localExpiry, remoteExpiry: dates.remoteExpiry, local: true))
        }
        return dates
    }

    /// Writes the local stores synchronously (write-through mode).
    func writeLocally(_ value: Value, for key: Key, dates: _WriteDates, throwing: Bool) throws {
        guard !localStores.isEmpty, let codec else { return }
        let keyString = key.cacheKeyString
        let data: Data
        do {
            data = try codec.encode(value)
        } catch {
            report(CacheFailure(key: keyString, tier: .memory, operation: .encode, error: error))
            if throwing { throw error }
            return
        }
        var firstError: (any Error)?
        for (index, store) in localStores.enumerated() {
            do {
                try store.set(data, for: keyString, in: namespace, storedAt: dates.storedAt, expiresAt: dates.localExpiry)
            } catch {
                report(CacheFailure(key: keyString, tier: .local(index), operation: .write, error: error))
                firstError = firstError ?? error
            }
        }
        if throwing, let firstError { throw firstError }
    }
}
