/// A snapshot of a ``Cache``'s counters, since its creation or its last
/// ``Cache/resetStatistics()``.
///
/// Every read is counted once, where it was answered: a memory hit counts in
/// ``memory`` only; a disk hit counts a memory miss and a local hit. Concurrent
/// `async` readers of one key share one lookup below memory and one fetch: it
/// counts once, as a hit where it was answered or as a miss and a fetch; the
/// others count as ``coalescedWaits``.
public struct CacheStatistics: Sendable, Hashable, CustomStringConvertible {
    /// What one tier answered.
    public struct Tier: Sendable, Hashable, CustomStringConvertible {
        /// Reads this tier answered with a value. For memory, reads answered by a
        /// write still queued for the stores count here too.
        public var hits = 0
        /// Reads that looked in this tier and found nothing usable (absent,
        /// expired, too old for `maxAge`/`newerThan`, or not decodable). One per
        /// lookup, whatever the number of stores in the tier; a read that a
        /// queued removal answers does not look in the stores and is no miss there.
        public var misses = 0
        /// Values found in a slower tier and copied into this one. Always zero for
        /// the remote tier.
        public var promotions = 0

        /// Creates counters at zero.
        public init() {}

        public var description: String { "hits \(hits), misses \(misses), promotions \(promotions)" }
    }

    /// The memory tier. Its misses count every read that went below memory, the
    /// synchronous and the asynchronous ones.
    public var memory = Tier()
    /// The local stores together (by default the cache's ``DiskStore``).
    public var local = Tier()
    /// The remote stores together; consulted by asynchronous reads only.
    public var remote = Tier()
    /// Entries the memory tier evicted to stay within its limits or for memory
    /// pressure (the stores still hold them).
    public var evictions = 0
    /// The part of ``evictions`` made because the system signalled memory pressure.
    public var memoryPressureEvictions = 0
    /// Entries the memory tier dropped because they had expired.
    public var expirations = 0
    /// Reads that no tier could answer: one per read that then returned `nil`
    /// without a fetch closure, and one per fetch (however many callers waited
    /// for it).
    public var misses = 0
    /// Reads answered by a remembered "not found" (``Cache/Configuration/negativeCaching``).
    public var negativeHits = 0
    /// Stale values served while a background refresh ran
    /// (``Cache/Configuration/staleWhileRevalidate``).
    public var staleHits = 0
    /// Promotions and fetched values not written because the key was written,
    /// removed, cleared or invalidated after the read began (the newer value won).
    public var droppedPromotions = 0
    /// Times a fetch closure ran (a foreground read's, or a background refresh).
    public var fetches = 0
    /// Fetches that threw.
    public var fetchFailures = 0
    /// Callers that waited for a read another caller had started (its lookup of
    /// the local and remote stores, then its fetch, for the same key and filters),
    /// or for a fetch of the same key, instead of starting their own.
    public var coalescedWaits = 0
    /// Store reads that failed (a store that could not be read; the read went on
    /// to the next tier).
    public var readFailures = 0
    /// Store writes, removals and clears that failed (write-behind, write-through,
    /// awaited writes and promotions), and values that could not be encoded: one
    /// per failed store call.
    public var writeFailures = 0
    /// Stored values that could not be decoded as `Value` (each left in its store).
    public var decodeFailures = 0
    /// Every failure: ``readFailures``, ``writeFailures``, ``decodeFailures`` and
    /// ``fetchFailures`` together.
    public var errors: Int { readFailures + writeFailures + decodeFailures + fetchFailures }

    /// Creates a snapshot with every counter at zero.
    public init() {}

    public var description: String {
        "memory (\(memory)), local (\(local)), remote (\(remote)), evictions \(evictions), "
            + "expirations \(expirations), misses \(misses), "
            + "negative hits \(negativeHits), stale hits \(staleHits), dropped promotions \(droppedPromotions), "
            + "fetches \(fetches), fetch failures \(fetchFailures), coalesced waits \(coalescedWaits), "
            + "read failures \(readFailures), write failures \(writeFailures), decode failures \(decodeFailures)"
    }
}
