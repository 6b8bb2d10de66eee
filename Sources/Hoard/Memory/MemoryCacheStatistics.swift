/// A snapshot of a ``MemoryCache``'s counters since it was created (or since
/// ``MemoryCache/resetStatistics()``).
public struct MemoryCacheStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Reads that returned a value.
    public var hits: Int
    /// Reads that returned nothing: absent, expired, or too old for the read's
    /// `maxAge` / `newerThan`.
    public var misses: Int
    /// Entries evicted to respect a limit, by `purge`, or for memory pressure.
    public var evictions: Int
    /// The part of ``evictions`` made because the system signalled memory pressure.
    public var memoryPressureEvictions: Int
    /// Entries removed because they expired.
    public var expirations: Int

    /// Creates a snapshot.
    public init(
        hits: Int = 0, misses: Int = 0, evictions: Int = 0, memoryPressureEvictions: Int = 0, expirations: Int = 0
    ) {
        self.hits = hits
        self.misses = misses
        self.evictions = evictions
        self.memoryPressureEvictions = memoryPressureEvictions
        self.expirations = expirations
    }

    /// `hits / (hits + misses)`, or 0 before any read.
    public var hitRatio: Double {
        let reads = hits + misses
        return reads == 0 ? 0 : Double(hits) / Double(reads)
    }

    public var description: String {
        let ratio = (hitRatio * 1000).rounded() / 10
        return "hits \(hits), misses \(misses) (hit ratio \(ratio)%), evictions \(evictions)"
            + (memoryPressureEvictions > 0 ? " (\(memoryPressureEvictions) for memory pressure)" : "")
            + ", expirations \(expirations)"
    }
}
