/// A change or notable moment in a ``Cache``, as its ``Cache/events`` stream
/// reports it.
public enum CacheEvent<Key: Hashable & Sendable>: Sendable {
    /// A value was written for the key.
    case set(Key)
    /// The key's entry was removed from every tier.
    case removed(Key)
    /// The memory tier evicted the key (the stores may still hold it).
    case evicted(Key, reason: EvictionReason)
    /// The key's entry expired in memory.
    case expired(Key)
    /// The fetch closure ran for the key; `found` is false when it returned `nil`.
    case fetched(Key, found: Bool)
    /// A value was found below memory and copied into the faster tiers.
    case promoted(Key, from: CacheTier)
    /// Every entry was removed from the listed tiers.
    case cleared
    /// Another instance changed the key (or everything, for `nil`) in a remote store,
    /// and the memory tier dropped it.
    case invalidated(Key?)
    /// A failure behind the caller's back.
    case failed(CacheFailure)
}

/// A snapshot of a ``Cache``'s counters.
public struct CacheStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Reads answered by the memory tier.
    public var memoryHits = 0
    /// Reads answered by a local store (then promoted into memory).
    public var localHits = 0
    /// Reads answered by a remote store (then promoted).
    public var remoteHits = 0
    /// Reads no tier could answer (before any fetch).
    public var misses = 0
    /// Values copied from a slower tier into faster ones.
    public var promotions = 0
    /// Times a fetch closure ran.
    public var fetches = 0
    /// Callers that waited for a fetch another caller had started, instead of
    /// starting their own.
    public var coalescedWaits = 0
    /// Stale values served while a background refresh ran.
    public var staleHits = 0
    /// Failures: store errors, damaged entries, failed fetches.
    public var errors = 0

    /// Creates a snapshot with every counter at zero.
    public init() {}

    public var description: String {
        "memory hits \(memoryHits), local hits \(localHits), remote hits \(remoteHits), misses \(misses), "
            + "promotions \(promotions), fetches \(fetches), coalesced waits \(coalescedWaits), "
            + "stale hits \(staleHits), errors \(errors)"
    }
}
