import Synchronization

/// The counters behind ``CacheStatistics``, updated without a lock.
///
/// Memory hits and misses are not counted here: the memory tier counts its own
/// under its lock, which keeps an atomic increment off the hottest path; the
/// snapshot corrects them for negative hits (memory holds a "not found") and for
/// reads answered by a queued write.
@usableFromInline
final class _CacheCounters: Sendable {
    @usableFromInline let pendingHits = Atomic<Int>(0)
    /// Reads of a cache without stores that looked in memory a second time (a
    /// write without a read in flight may have landed since the first look): the
    /// memory tier counted both looks, and the first look's miss is taken back.
    @usableFromInline let repeatedMemoryLookups = Atomic<Int>(0)
    @usableFromInline let negativeHits = Atomic<Int>(0)
    @usableFromInline let localHits = Atomic<Int>(0)
    @usableFromInline let localMisses = Atomic<Int>(0)
    @usableFromInline let remoteHits = Atomic<Int>(0)
    @usableFromInline let remoteMisses = Atomic<Int>(0)
    @usableFromInline let memoryPromotions = Atomic<Int>(0)
    @usableFromInline let localPromotions = Atomic<Int>(0)
    @usableFromInline let droppedPromotions = Atomic<Int>(0)
    @usableFromInline let misses = Atomic<Int>(0)
    @usableFromInline let staleHits = Atomic<Int>(0)
    @usableFromInline let fetches = Atomic<Int>(0)
    @usableFromInline let fetchFailures = Atomic<Int>(0)
    @usableFromInline let coalescedWaits = Atomic<Int>(0)
    @usableFromInline let readFailures = Atomic<Int>(0)
    @usableFromInline let writeFailures = Atomic<Int>(0)
    @usableFromInline let decodeFailures = Atomic<Int>(0)
    /// Local lookups of `async` reads that ran on Hoard's executor, as a local
    /// store could not answer without waiting (not part of ``CacheStatistics``:
    /// tests read it to see which path a read took).
    @usableFromInline let executorLookups = Atomic<Int>(0)

    func snapshot(memoryTier: MemoryCacheStatistics) -> CacheStatistics {
        let pending = pendingHits.load(ordering: .relaxed)
        let negative = negativeHits.load(ordering: .relaxed)
        var statistics = CacheStatistics()
        statistics.memory.hits = max(0, memoryTier.hits - negative) + pending
        let repeated = repeatedMemoryLookups.load(ordering: .relaxed)
        statistics.memory.misses = max(0, memoryTier.misses - pending - repeated)
        statistics.memory.promotions = memoryPromotions.load(ordering: .relaxed)
        statistics.evictions = memoryTier.evictions
        statistics.memoryPressureEvictions = memoryTier.memoryPressureEvictions
        statistics.expirations = memoryTier.expirations
        statistics.local.hits = localHits.load(ordering: .relaxed)
        statistics.local.misses = localMisses.load(ordering: .relaxed)
        statistics.local.promotions = localPromotions.load(ordering: .relaxed)
        statistics.remote.hits = remoteHits.load(ordering: .relaxed)
        statistics.remote.misses = remoteMisses.load(ordering: .relaxed)
        statistics.misses = misses.load(ordering: .relaxed)
        statistics.negativeHits = negative
        statistics.staleHits = staleHits.load(ordering: .relaxed)
        statistics.droppedPromotions = droppedPromotions.load(ordering: .relaxed)
        statistics.fetches = fetches.load(ordering: .relaxed)
        statistics.fetchFailures = fetchFailures.load(ordering: .relaxed)
        statistics.coalescedWaits = coalescedWaits.load(ordering: .relaxed)
        statistics.readFailures = readFailures.load(ordering: .relaxed)
        statistics.writeFailures = writeFailures.load(ordering: .relaxed)
        statistics.decodeFailures = decodeFailures.load(ordering: .relaxed)
        return statistics
    }

    /// Counts a reported failure under its kind.
    func count(_ failure: CacheFailure) {
        switch failure.operation {
        case .read: readFailures.add(1, ordering: .relaxed)
        case .write, .remove, .encode: writeFailures.add(1, ordering: .relaxed)
        case .decode: decodeFailures.add(1, ordering: .relaxed)
        case .fetch: fetchFailures.add(1, ordering: .relaxed)
        }
    }

    func reset() {
        pendingHits.store(0, ordering: .relaxed)
        repeatedMemoryLookups.store(0, ordering: .relaxed)
        negativeHits.store(0, ordering: .relaxed)
        localHits.store(0, ordering: .relaxed)
        localMisses.store(0, ordering: .relaxed)
        remoteHits.store(0, ordering: .relaxed)
        remoteMisses.store(0, ordering: .relaxed)
        memoryPromotions.store(0, ordering: .relaxed)
        localPromotions.store(0, ordering: .relaxed)
        droppedPromotions.store(0, ordering: .relaxed)
        misses.store(0, ordering: .relaxed)
        staleHits.store(0, ordering: .relaxed)
        fetches.store(0, ordering: .relaxed)
        fetchFailures.store(0, ordering: .relaxed)
        coalescedWaits.store(0, ordering: .relaxed)
        readFailures.store(0, ordering: .relaxed)
        writeFailures.store(0, ordering: .relaxed)
        decodeFailures.store(0, ordering: .relaxed)
    }
}
