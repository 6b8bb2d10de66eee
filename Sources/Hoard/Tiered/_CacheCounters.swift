import Synchronization

/// The counters behind ``CacheStatistics``, updated without a lock.
///
/// Memory hits are not counted here: the memory tier counts its own hits under its
/// lock, which keeps an atomic increment off the hottest path. `memoryHits` counts
/// only reads answered from the queue of pending writes.
final class _CacheCounters: Sendable {
    let memoryHits = Atomic<Int>(0)
    let localHits = Atomic<Int>(0)
    let remoteHits = Atomic<Int>(0)
    let misses = Atomic<Int>(0)
    let promotions = Atomic<Int>(0)
    let fetches = Atomic<Int>(0)
    let coalescedWaits = Atomic<Int>(0)
    let staleHits = Atomic<Int>(0)
    let errors = Atomic<Int>(0)

    func snapshot(memoryTierHits: Int) -> CacheStatistics {
        var statistics = CacheStatistics()
        statistics.memoryHits = memoryTierHits + memoryHits.load(ordering: .relaxed)
        statistics.localHits = localHits.load(ordering: .relaxed)
        statistics.remoteHits = remoteHits.load(ordering: .relaxed)
        statistics.misses = misses.load(ordering: .relaxed)
        statistics.promotions = promotions.load(ordering: .relaxed)
        statistics.fetches = fetches.load(ordering: .relaxed)
        statistics.coalescedWaits = coalescedWaits.load(ordering: .relaxed)
        statistics.staleHits = staleHits.load(ordering: .relaxed)
        statistics.errors = errors.load(ordering: .relaxed)
        return statistics
    }

    func reset() {
        memoryHits.store(0, ordering: .relaxed)
        localHits.store(0, ordering: .relaxed)
        remoteHits.store(0, ordering: .relaxed)
        misses.store(0, ordering: .relaxed)
        promotions.store(0, ordering: .relaxed)
        fetches.store(0, ordering: .relaxed)
        coalescedWaits.store(0, ordering: .relaxed)
        staleHits.store(0, ordering: .relaxed)
        errors.store(0, ordering: .relaxed)
    }
}
