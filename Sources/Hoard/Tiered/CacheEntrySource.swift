/// Which tier of a ``Cache`` answered a read: where the value of a ``CacheEntry``
/// came from.
///
/// A ``Cache`` sets it on every entry its reads return
/// (``Cache/entry(for:maxAge:newerThan:)``, ``Cache/cachedEntry(for:maxAge:newerThan:)``),
/// for that read alone: it costs nothing to compute, and unlike a difference of
/// ``Cache/statistics`` it stays right while other tasks read the same cache.
public enum CacheEntrySource: Sendable, Hashable, CustomStringConvertible {
    /// The memory tier.
    case memory
    /// A write still queued for the stores (write-behind): the value is in none of
    /// them yet, and was no longer in memory.
    case pendingWrite
    /// A local store, by its position in ``Cache/Configuration/localStores``
    /// (0 for a cache's default ``DiskStore``).
    case local(Int)
    /// A remote store, by its position in ``Cache/Configuration/remoteStores``.
    case remote(Int)
    /// The fetch closure: no tier held the value (this read ran the fetch, or
    /// waited for a fetch of the same key that another read started).
    case fetch

    public var description: String {
        switch self {
        case .memory: "memory"
        case .pendingWrite: "a pending write"
        case .local(let index): "local store \(index)"
        case .remote(let index): "remote store \(index)"
        case .fetch: "fetch"
        }
    }
}
