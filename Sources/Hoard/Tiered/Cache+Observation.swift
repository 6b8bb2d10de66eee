import Foundation

extension Cache {
    /// A stream of the value for `key`: the current value from memory or the local
    /// stores at once (`nil` if none), then the new value each time this cache writes
    /// or fetches it, and `nil` when it removes it (``removeValue(for:)``, a
    /// ``clear(memory:disk:remote:)`` of memory and the local stores, another
    /// instance's invalidation).
    ///
    /// The current value is read on the calling thread, as
    /// ``cachedEntry(for:maxAge:newerThan:)`` reads it: this call may block for as
    /// long as the local stores take.
    ///
    /// Values arrive in the order the changes were made. When the key changes while
    /// the current value is being read, the stream starts with the change instead
    /// (it is newer), so its latest value is always the cache's. Evictions from
    /// memory are not changes (the stores still hold the value). The stream buffers
    /// without bound, so a consumer should keep up; it ends when the consuming task
    /// is cancelled or the cache is deallocated.
    public func updates(for key: Key) -> AsyncStream<Value?> {
        let (stream, continuation) = AsyncStream<Value?>.makeStream(bufferingPolicy: .unbounded)
        // Registered before the read, so no change after it is missed; the read's
        // value is sent only if no change was sent meanwhile.
        let (id, published) = observers.addUpdatesAwaitingStart(for: key, continuation)
        observers.yieldStartingValue(
            cachedEntry(for: key)?.value, for: key, id: id, ifNothingPublishedSince: published)
        continuation.onTermination = { [weak observers] _ in
            observers?.removeUpdates(for: key, id)
        }
        return stream
    }

    /// A stream of every event from now on: sets, removals, memory evictions and
    /// expirations, fetches, promotions, invalidations and failures.
    ///
    /// Each access returns a new, independent stream that buffers without bound.
    /// Memory evictions and expirations arrive through a second path, so their order
    /// relative to the other events is not guaranteed.
    public var events: AsyncStream<CacheEvent<Key>> {
        let (stream, continuation) = AsyncStream<CacheEvent<Key>>.makeStream(bufferingPolicy: .unbounded)
        let id = observers.addEvents(continuation)
        let memoryEvents = memory.events
        let forwarding = Task {
            for await event in memoryEvents {
                switch event {
                case .evicted(let key, let reason): continuation.yield(.evicted(key, reason: reason))
                case .expired(let key): continuation.yield(.expired(key))
                case .set, .removed, .removedAll: break
                }
            }
        }
        continuation.onTermination = { [weak observers] _ in
            observers?.removeEvents(id)
            forwarding.cancel()
        }
        return stream
    }

    /// Hits, misses and promotions per tier, fetches, coalesced waits, stale and
    /// negative hits and failures since creation or ``resetStatistics()``.
    public var statistics: CacheStatistics { counters.snapshot(memoryTier: memory.statistics) }

    /// Sets every counter of ``statistics`` back to zero.
    public func resetStatistics() {
        counters.reset()
        memory.resetStatistics()
    }

    /// The number of entries in the memory tier: values, remembered "not found"
    /// results (``Configuration/negativeCaching``), and expired entries not yet
    /// removed. O(shards).
    public var memoryCount: Int { memory.count }

    /// The bytes of values written to memory and still waiting for the stores, as
    /// counted against ``Configuration/writeQueueByteLimit`` (values of a size known
    /// only once encoded count as a running average of the encoded sizes of recent
    /// batches, 1 KiB until the first batch is encoded).
    public var queuedWriteBytes: Int { writer.queuedBytes }

    /// The total cost of the entries in the memory tier (0 when values have no cost).
    public var memoryCost: Int { memory.totalCost }

    // MARK: Cross-instance invalidation

    func startListeningForInvalidations() {
        guard !remoteStores.isEmpty else { return }
        let tasks = remoteStores.map { store in
            let invalidations = store.invalidations(in: namespace)
            return Task { [weak self] in
                for await invalidation in invalidations {
                    guard let self else { return }
                    self.invalidate(invalidation)
                }
            }
        }
        invalidationTasks.withLock { $0 = tasks }
    }

    /// Drops a key another instance changed from memory and the local stores,
    /// through the writer: in order with this instance's own writes, and so that
    /// no read that began before it promotes what it found.
    ///
    /// A key this cache cannot rebuild from its string is looked for among the
    /// noted keys twice: first without the writer's lock, then, when that finds
    /// nothing, again under it as the removal is ordered. Every promotion notes its
    /// key before it takes the writer's lock (``remembering(_:while:)``), and a
    /// write notes it under that lock, so a copy memory took in before the removal
    /// was ordered is found and dropped, and one that comes after it is dropped by
    /// the removal itself (the read's ticket sees the string changed).
    func invalidate(_ invalidation: RemoteInvalidation) {
        switch invalidation {
        case .all:
            writer.write(.removeAll(local: true, remote: false)) {
                memory.removeAll()
                publishClear(.invalidated(nil), memory: true, localStores: true)
            }
        case .missed:
            // Memory is refilled from the local stores at their cost, not the
            // origin's; the local copies are kept when localExpiry bounds them.
            let clearsLocalStores = configuration.localExpiry == nil
            writer.write(.removeAll(local: clearsLocalStores, remote: false)) {
                memory.removeAll()
                publishClear(.invalidated(nil), memory: true, localStores: clearsLocalStores)
            }
        case .key(let keyString):
            guard let key = key(forCacheKeyString: keyString) else {
                configuration._invalidationWillBeOrdered?(keyString)
                writer.write(.removeLocally(keyString)) {
                    // Under the writer's lock: a read that noted the key since the
                    // lookup above has taken it into memory by now, or will be
                    // dropped.
                    if let key = keyStrings.withLock({ $0.take(keyString) }) {
                        memory.removeValue(for: key)
                        publish(.invalidated(key), key: key, value: nil)
                        return
                    }
                    // Memory does not hold the key; a stream may still watch it.
                    guard let observers = observers.ifActive else { return }
                    for key in observers.updatedKeys where key.cacheKeyString == keyString {
                        observers.publishUpdate(key: key, value: nil)
                    }
                }
                return
            }
            writer.write(.remove(key, remote: false)) {
                memory.removeValue(for: key)
                publish(.invalidated(key), key: key, value: nil)
            }
        }
    }
}
