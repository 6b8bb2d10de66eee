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
    /// ``Cache/clear(memory:disk:remote:)`` removed every entry of this cache from
    /// the tiers it chose; the event does not say which.
    case cleared
    /// Another instance changed the key (or everything, for `nil`) in a remote store,
    /// and the memory tier dropped it.
    case invalidated(Key?)
    /// A failure behind the caller's back.
    case failed(CacheFailure)
}

extension CacheEvent: CustomStringConvertible {
    /// The event as `evicted(key, countLimit)`: the case and its values, with no
    /// module path.
    public var description: String {
        switch self {
        case .set(let key): "set(\(key))"
        case .removed(let key): "removed(\(key))"
        case .evicted(let key, let reason): "evicted(\(key), \(reason))"
        case .expired(let key): "expired(\(key))"
        case .fetched(let key, let found): "fetched(\(key), found: \(found))"
        case .promoted(let key, let tier): "promoted(\(key), from: \(tier))"
        case .cleared: "cleared"
        case .invalidated(let key): "invalidated(\(key.map { "\($0)" } ?? "all"))"
        case .failed(let failure): "failed(\(failure))"
        }
    }
}
