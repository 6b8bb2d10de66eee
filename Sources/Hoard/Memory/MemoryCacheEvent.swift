/// A change in a ``MemoryCache``, as its ``MemoryCache/events`` stream reports it.
public enum MemoryCacheEvent<Key: Hashable & Sendable>: Sendable, Hashable {
    /// A value was stored for the key (new, or replacing an older one).
    case set(Key)
    /// The key's entry was removed by `removeValue(for:)`, a `nil` assignment, or a
    /// write whose cost exceeds the cost limit.
    case removed(Key)
    /// The key's entry was evicted: to respect a limit, by `purge`, or for memory
    /// pressure; `reason` says which.
    case evicted(Key, reason: EvictionReason)
    /// The key's entry expired and was removed.
    case expired(Key)
    /// Every entry was removed by `removeAll()`; carries how many there were.
    case removedAll(count: Int)
}

/// Why an entry was evicted. Prints as its case name (`countLimit`).
public enum EvictionReason: String, Sendable, Hashable, CustomStringConvertible {
    /// The entry count went over its limit.
    case countLimit
    /// The total cost went over its limit.
    case costLimit
    /// A `purge(downTo…)` call asked for room.
    case purge
    /// The system signalled memory pressure (see ``MemoryPressureResponse``).
    case memoryPressure

    public var description: String { rawValue }
}

/// Which entries a cache gives up first when it must make room.
public enum EvictionPolicy: Sendable, Hashable {
    /// Exact least-recently-used: the entry read or written longest ago goes first
    /// (in its shard: see ``MemoryCache/Configuration/shards``, one for all but
    /// large caches limited by count alone). Predictable, and best when recent use
    /// predicts the next use.
    case lru
    /// W-TinyLFU (as in Caffeine): a 1% LRU admission window in front of a
    /// segmented-LRU main space, with a 4-bit count-min sketch deciding whether an
    /// entry leaving the window is used often enough to displace one in the main
    /// space. Resists one-pass scans and usually hits more often than LRU.
    case tinyLFU
}

/// The observers of a memory cache.
@usableFromInline
typealias _MemoryObservers<Key: Hashable & Sendable, Value: Sendable> = _Observers<Key, Value, MemoryCacheEvent<Key>>
