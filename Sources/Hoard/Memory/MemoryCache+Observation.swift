extension MemoryCache {
    /// A stream of the value for `key`: the current value at once (`nil` if there is
    /// none), then every later change in the order it happened: the new value on
    /// each write, `nil` on removal, eviction or expiry.
    ///
    /// ```swift
    /// for await user in cache.updates(for: userID) {
    ///     render(user)   // nil when the entry goes away
    /// }
    /// ```
    ///
    /// The stream buffers without bound, so a consumer should keep up. It ends when
    /// the consuming task is cancelled or the cache is deallocated.
    public func updates(for key: Key) -> AsyncStream<Value?> {
        let (stream, continuation) = AsyncStream<Value?>.makeStream(bufferingPolicy: .unbounded)
        let hash = _HashIndex.hash(of: key)
        let now = clock.now().timeIntervalSinceReferenceDate
        let id = shards.withLock(shard(for: hash)) { shard in
            // Registered and seeded under the shard lock, under which every writer
            // also asks whether anyone observes: no change to `key` can slip between
            // the current value and the first update.
            let id = observers.addUpdates(for: key, continuation)
            continuation.yield(shard.peek(key, hash: hash, now: now))
            return id
        }
        continuation.onTermination = { [weak observers] _ in
            observers?.removeUpdates(for: key, id)
        }
        return stream
    }

    /// A stream of every change from now on: sets, removals, evictions with their
    /// reason, expirations and `removeAll`.
    ///
    /// Each access returns a new, independent stream. It buffers without bound, so
    /// a consumer should keep up; it ends when the consuming task is cancelled or the
    /// cache is deallocated.
    public var events: AsyncStream<MemoryCacheEvent<Key>> {
        let (stream, continuation) = AsyncStream<MemoryCacheEvent<Key>>.makeStream(bufferingPolicy: .unbounded)
        let id = observers.addEvents(continuation)
        continuation.onTermination = { [weak observers] _ in
            observers?.removeEvents(id)
        }
        return stream
    }
}
