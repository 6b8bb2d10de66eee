internal import CHoardPrefetch

/// W-TinyLFU as Caffeine describes it, with an adaptive window: new entries enter
/// an LRU admission window; entries leaving the window become candidates for the
/// main space, a segmented LRU (probation, and protected with 80% of the main
/// space). When the cache must evict, a candidate is compared with the main space's
/// least-recently-used probation entry, and the one the frequency sketch says was
/// used less often goes.
///
/// The window starts at 1% of the capacity, as in Caffeine, and then follows the
/// workload: a miss on a key that left the window recently (one of the last
/// `capacity / 64`, and at least the last 16) grows the window, a miss on a key
/// evicted from the main space recently shrinks it (`_GhostHistory`), by 1/32 of
/// its size (at least one entry). Each side's history counts the requests the cache
/// would have answered with that side slightly larger, as ARC's ghost lists do
/// (Megiddo & Modha, FAST 2003). Recency-heavy workloads grow the window towards an
/// LRU cache; frequency-heavy ones shrink it to a single entry, where the sketch
/// decides nearly everything.
///
/// Below its starting 1%, the window moves only once one side's misses are two
/// ahead of the other's, so that a single chance miss does not move a window a
/// frequency-heavy workload has shrunk (with 16 hashes a side and no such margin,
/// the Zipf trace at 1,000 entries lost about 0.0002 of its hit ratio). From 1% up
/// every miss moves it: the same margin there cost the `lirs-multi2` trace at 1,000
/// entries up to 0.01 of its hit ratio. (The history's size and this rule were
/// chosen by replaying the traces of `HitRatioTraceTests`; `Benchmarks/README.md`
/// gives the variants and their figures.)
///
/// The window never takes more than half the capacity. Both histories measure only
/// the margin between window and main space, and with a main space of a few
/// percent a frequency-heavy workload's hot keys live in the window anyway, so the
/// main space's margin looks worthless and the window stayed near the top after
/// the workload turned (4 of 6 runs with the bound at 80%, 0 of 6 at 50%,
/// `AdaptiveWindowTests`). Only count-weighted caches adapt; a cost-weighted cache
/// keeps the 1% window.
///
/// Weights are entry counts when the cache has a count limit, costs otherwise.
///
/// A hit touches neither the policy's lists nor the sketch when it happens: the
/// shard appends its slot to a buffer (`_MemoryShard.pendingHits`) and applies
/// the buffer, oldest first, every `hitBatch` hits and before anything else reads
/// or changes the policy (`applyHits`), so the policy sees the operations it would
/// see hit by hit, in the same order, with the cache misses of a batch's list
/// moves overlapped. Applying a hit adds one to its slot's own count of hits
/// (`_PolicySlot.hits`, beside the slot's queue, which the list move reads), and
/// the sketch counts those hits when it is asked about the slot (an eviction's
/// duel), when the entry leaves, and for every slot at once before the sketch's
/// sample could be complete (`countAllHits`). At 100,000 entries the sketch is 3 MB
/// that a hit would otherwise miss the processor's cache on, and whose lines push
/// the hash index and the nodes out of it. The sketch then sees the same hits,
/// later and grouped by entry: the estimates of the two entries in a duel are what
/// counting each hit at once would give, up to a reset that falls between a hit
/// and its counting (the hit lands in the next sample instead) and up to other
/// keys' counters they share.
///
/// - Complexity: Every operation is O(1) (the history's on average), amortised:
///   `countAllHits` visits every slot, once per `max(capacity, slots) / 8` hits at
///   most.
@usableFromInline
struct _TinyLFUPolicy {
    @usableFromInline var window = _LRUList()
    @usableFromInline var probation = _LRUList()
    @usableFromInline var protected = _LRUList()
    @usableFromInline var sketch: _FrequencySketch
    /// The total weight the policy is sized for (the shard's limit).
    let capacity: Int
    /// The window's share of `capacity`, between `windowRange`'s bounds.
    var windowCapacity: Int
    /// 80% of what the window leaves to the main space.
    @usableFromInline var protectedCapacity: Int
    /// The smallest and largest window: one entry, and half the capacity.
    var windowRange: ClosedRange<Int> { 1...max(1, capacity / 2) }
    /// Recently departed keys, which move the window; off in cost-weighted caches.
    var history: _GhostHistory
    /// While the window is below 1% of the capacity: misses on keys the history
    /// remembered as leaving the window, minus misses on keys it remembered as
    /// evicted from the main space, since the window last moved.
    var historyBalance = 0
    /// Entries moved from the window to the head of probation since the last
    /// eviction round; they are the candidates the next round judges.
    @usableFromInline var candidates = 0
    /// Whether weights are costs (cost-limited cache) or one per entry.
    @usableFromInline let weighsByCost: Bool
    /// Whether hits are counted at all: not in a cache that has no limit, whose
    /// sketch no eviction ever reads (a memory-pressure eviction then duels on
    /// insertions alone).
    @usableFromInline let countsHits: Bool
    /// Hits counted on their slots and not yet in the sketch, over all slots.
    @usableFromInline var uncountedHits = 0
    /// The sketch's `resets` when the slots' `full` marks were last valid: a reset
    /// halves the counters, so every mark is cleared after it (`refreshCounting`).
    var marksValidAtReset = 0
    /// The `uncountedHits` at which a hit has every slot's hits counted: what the
    /// sketch's sample still takes, at least `minimumHitsPerCount` and an eighth of
    /// the slots. Kept by `refreshCounting` after everything that changes the
    /// sketch or adds a slot, so that a hit compares one number.
    @usableFromInline var countingThreshold = 0
    /// The fewest uncounted hits that make a hit count every slot's
    /// (`countAllHits`), whatever the sketch's sample still takes: an eighth of the
    /// capacity (or of the slots, when there are more, as in a cost-weighted cache
    /// of entries that cost nothing), so that a pass over the slots costs a hit at
    /// most eight slot visits however few of the hits add to the sample.
    @usableFromInline let minimumHitsPerCount: Int

    /// The part of the capacity each side of the history remembers: 1/64.
    static let historyFraction = 64
    /// The fewest hashes each side remembers (for capacities below 1,024 entries).
    static let historyMinimum = 16
    /// How far one side's misses must be ahead for a window below 1% of the
    /// capacity to move.
    static let historyMargin = 2

    /// A policy for `capacity` weight. `adapts` turns the adaptive window on; it is
    /// off for cost weights (the history counts entries) and for caches that never
    /// evict.
    init(capacity: Int, sketchCapacity: Int, weighsByCost: Bool, adapts: Bool = true) {
        self.capacity = capacity
        self.weighsByCost = weighsByCost
        countsHits = adapts
        minimumHitsPerCount = max(16, min(capacity, _FrequencySketch.maxCapacity) / 8)
        windowCapacity = max(1, capacity / 100)
        protectedCapacity = max(0, Int(Double(capacity - windowCapacity) * 0.8))
        sketch = _FrequencySketch(capacity: sketchCapacity)
        // The history is sized like the sketch: from at most 2^20 entries.
        let remembered = min(capacity, _FrequencySketch.maxCapacity) / Self.historyFraction
        history = _GhostHistory(
            capacity: adapts && !weighsByCost ? max(Self.historyMinimum, remembered) : 0)
        countingThreshold = threshold(slotCount: 0)
    }

    /// Moves the split between the window and the main space by `delta` (an entry
    /// count), within `windowRange`. A smaller window hands its oldest entries to
    /// probation at the next insertion; a smaller main space gives up its entries as
    /// the cache evicts.
    mutating func resizeWindow(by delta: Int) {
        let resized = min(max(windowCapacity + delta, windowRange.lowerBound), windowRange.upperBound)
        guard resized != windowCapacity else { return }
        windowCapacity = resized
        protectedCapacity = max(0, Int(Double(capacity - resized) * 0.8))
    }

    /// The weight of an entry of the given cost.
    func weight(ofCost cost: Int) -> Int { weighsByCost ? cost : 1 }

    /// Adds the new entry in slot `i`, whose key's hash is `hash`, at the head of
    /// the window; the window's oldest entries beyond its share become candidates.
    @usableFromInline
    mutating func insert(
        _ i: Int32, hash: UInt64, links: inout _SlotArray<_Links>, slots: inout _SlotArray<_PolicySlot>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        sketch.record(hash)
        if history.isEnabled, let side = history.forget(hash) {
            let step = max(1, windowCapacity >> 5)
            let vote = side == .window ? 1 : -1
            if windowCapacity * 100 >= capacity {
                historyBalance = 0
                resizeWindow(by: vote * step)
            } else {
                historyBalance += vote
                if abs(historyBalance) >= Self.historyMargin {
                    resizeWindow(by: historyBalance > 0 ? step : -step)
                    historyBalance = 0
                }
            }
        }
        window.pushFront(i, weight: weight(of: i, info: info), in: &links)
        slots[i] = _PolicySlot(queue: .window)
        // Keep the window within its share: the oldest window entries become
        // candidates for the main space (the newest entry always stays).
        while window.weight > windowCapacity && window.count > 1 {
            let oldest = window.tail
            let w = weight(of: oldest, info: info)
            window.remove(oldest, weight: w, in: &links)
            probation.pushFront(oldest, weight: w, in: &links)
            slots[oldest].queue = .probation
            candidates += 1
            if history.isEnabled { history.remember(info[Int(oldest)].hash, leaving: .window) }
        }
        refreshCounting(slots: &slots)
    }

    /// Records a use of the entry in slot `i`.
    ///
    /// A hit on the window or the protected segment touches only the slot's policy
    /// state and links; the entry's cost is read only when it moves between segments
    /// of a cost-weighted cache. The hit is counted on the slot, not in the sketch
    /// (see the type's documentation).
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T: MemoryCache tinyLFU shards:1" (every W-TinyLFU hit runs it).
    @inlinable
    mutating func recordAccess(
        _ i: Int32, links: inout _SlotArray<_Links>, slots: inout _SlotArray<_PolicySlot>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        if countsHits { countHit(on: i, slots: &slots, info: info) }
        // Tests in order of likelihood, not a `switch`: the switch compiled to a jump
        // table, an indirect jump on every hit (MemoryCacheBenchmarks "get-hit 1T";
        // the runs are in Benchmarks/README.md).
        let queue = slots[i].queue
        if queue == .main {
            protected.moveToFront(i, in: &links)
        } else if queue == .window {
            window.moveToFront(i, in: &links)
        } else if queue == .probation {
            promote(i, links: &links, slots: &slots, info: info)
        }
    }

    /// How many hits a shard collects before it applies them (`applyHits`): 128
    /// slot numbers, 512 bytes a shard. The read that fills the buffer applies all
    /// of them, so a larger batch makes that one read wait longer; the sizes
    /// measured are in `Benchmarks/README.md`.
    @usableFromInline static let hitBatch = 128

    /// Records the hits on the given slots, oldest first, as `recordAccess` would
    /// one at a time.
    ///
    /// A hit's list move reads and writes its slot's links and its `_PolicySlot`,
    /// in arrays too large for the processor's caches at 100,000 entries. The loop
    /// prefetches both for the hit `prefetchDistance` ahead, so that the misses of
    /// several hits are in flight at once; a hit applied as it happens waits for
    /// each of its misses in turn. (The neighbours' links are not prefetched: the
    /// runs in `Benchmarks/README.md` found that no faster.)
    @usableFromInline
    mutating func applyHits(
        _ hits: borrowing _SlotArray<Int32>, links: inout _SlotArray<_Links>, slots: inout _SlotArray<_PolicySlot>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        let count = hits.count
        let distance = Self.prefetchDistance
        for k in 0..<min(count, distance) { prefetchState(of: hits[k], links: links, slots: slots) }
        for k in 0..<count {
            if k + distance < count { prefetchState(of: hits[k + distance], links: links, slots: slots) }
            recordAccess(hits[k], links: &links, slots: &slots, info: info)
        }
    }

    /// How many hits ahead `applyHits` prefetches a slot's links and state (the
    /// distances measured are in `Benchmarks/README.md`).
    static let prefetchDistance = 8

    /// Starts loading slot `i`'s links and `_PolicySlot`; changes nothing.
    func prefetchState(of i: Int32, links: borrowing _SlotArray<_Links>, slots: borrowing _SlotArray<_PolicySlot>) {
        hoard_prefetch_for_write(links.base + Int(i))
        hoard_prefetch_for_write(slots.base + Int(i))
    }

    /// Moves the entry in slot `i` from probation to the head of the protected
    /// segment, whose least-recently-used entries beyond its share go back to
    /// probation. A call, not inlined: keeping it out of `recordAccess` lets the
    /// common hit (window or protected) inline into the read.
    @usableFromInline
    mutating func promote(
        _ i: Int32, links: inout _SlotArray<_Links>, slots: inout _SlotArray<_PolicySlot>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        let w = weight(of: i, info: info)
        probation.remove(i, weight: w, in: &links)
        protected.pushFront(i, weight: w, in: &links)
        slots[i].queue = .main
        while protected.weight > protectedCapacity && protected.count > 1 {
            let demoted = protected.tail
            let w = weight(of: demoted, info: info)
            protected.remove(demoted, weight: w, in: &links)
            probation.pushFront(demoted, weight: w, in: &links)
            slots[demoted].queue = .probation
        }
    }

    /// Counts a hit on slot `i`, unless its key's counters are full; hands the
    /// slot's hits to the sketch when they reach `_PolicySlot.maxHits`, and every
    /// slot's when the sketch's sample could be complete with them.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T: MemoryCache tinyLFU shards:1" (every W-TinyLFU hit runs it).
    @inlinable
    mutating func countHit(on i: Int32, slots: inout _SlotArray<_PolicySlot>, info: borrowing _SlotArray<_NodeInfo>) {
        let hits = slots[i].hits
        guard hits != _PolicySlot.full else { return }
        slots[i].hits = hits &+ 1
        uncountedHits &+= 1
        if hits &+ 1 == _PolicySlot.maxHits {
            countHits(of: i, slots: &slots, info: info)
        } else if uncountedHits >= countingThreshold {
            countAllHits(slots: &slots, info: info)
        }
    }

    /// Has the sketch count the hits on slot `i` that it has not counted yet, and
    /// marks the slot `full` when the sketch's counters for it are.
    @usableFromInline
    mutating func countHits(
        of i: Int32, slots: inout _SlotArray<_PolicySlot>, info: borrowing _SlotArray<_NodeInfo>
    ) {
        let hits = slots[i].hits
        guard hits > 0, hits != _PolicySlot.full else { return }
        countSlotHits(i, slots: &slots, info: info)
        uncountedHits -= Int(hits)
        refreshCounting(slots: &slots)
    }

    /// Has the sketch count every slot's uncounted hits, in slot order; a reset the
    /// sample completes on the way halves what was counted before it.
    ///
    /// Each slot's sketch lines are prefetched `countingDistance` slots with hits
    /// ahead of its counting, so that the walk's cache misses overlap instead of
    /// following one another.
    @usableFromInline
    mutating func countAllHits(slots: inout _SlotArray<_PolicySlot>, info: borrowing _SlotArray<_NodeInfo>) {
        let distance = Self.countingDistance
        var ahead = [Int32](repeating: 0, count: distance)
        var found = 0
        for n in 0..<slots.count {
            let hits = slots[n].hits
            guard hits > 0, hits != _PolicySlot.full else { continue }
            sketch.prefetch(info[n].hash)
            if found >= distance { countSlotHits(ahead[found % distance], slots: &slots, info: info) }
            ahead[found % distance] = Int32(n)
            found += 1
        }
        for k in max(0, found - distance)..<found {
            countSlotHits(ahead[k % distance], slots: &slots, info: info)
        }
        uncountedHits = 0
        refreshCounting(slots: &slots)
    }

    /// How many slots with hits `countAllHits` looks ahead.
    static let countingDistance = 16

    /// Has the sketch count the hits on slot `i` (which has some, and is not marked
    /// `full`), and marks it `full` when the sketch's counters for it are; leaves
    /// `uncountedHits` and `countingThreshold` to the caller.
    mutating func countSlotHits(
        _ i: Int32, slots: inout _SlotArray<_PolicySlot>, info: borrowing _SlotArray<_NodeInfo>
    ) {
        let hits = slots[i].hits
        let counted = sketch.increment(info[i].hash, times: Int(hits))
        slots[i].hits = counted ? 0 : _PolicySlot.full
    }

    /// Brings the `full` marks and `countingThreshold` up to date with the sketch
    /// and the slots: every mark is cleared after a reset, which halved the counters.
    mutating func refreshCounting(slots: inout _SlotArray<_PolicySlot>) {
        if sketch.resets != marksValidAtReset {
            for n in 0..<slots.count where slots[n].hits == _PolicySlot.full { slots[n].hits = 0 }
            marksValidAtReset = sketch.resets
        }
        countingThreshold = threshold(slotCount: slots.count)
    }

    /// What `countingThreshold` is with `slotCount` slots: what the sketch's sample
    /// still takes, at least `minimumHitsPerCount` and an eighth of the slots.
    func threshold(slotCount: Int) -> Int {
        max(sketch.additionsBeforeReset, minimumHitsPerCount, slotCount >> 3)
    }

    /// The weight of the entry in slot `i`: one, or its cost when weights are costs
    /// (only then is its `_NodeInfo` read).
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T: MemoryCache tinyLFU shards:1" (every W-TinyLFU hit runs it).
    @inlinable
    func weight(of i: Int32, info: borrowing _SlotArray<_NodeInfo>) -> Int {
        weighsByCost ? info[i].cost : 1
    }

    /// Adjusts list weights after an entry's weight changed in place.
    @usableFromInline
    mutating func reweigh(queue: _Queue, by delta: Int) {
        switch queue {
        case .window: window.weight += delta
        case .probation: probation.weight += delta
        case .main: protected.weight += delta
        case .none: break
        }
    }

    /// Takes the entry in slot `i` off its list; the sketch counts its uncounted
    /// hits first, so that its key's history outlives it.
    mutating func remove(
        _ i: Int32, weight: Int, links: inout _SlotArray<_Links>, slots: inout _SlotArray<_PolicySlot>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        countHits(of: i, slots: &slots, info: info)
        switch slots[i].queue {
        case .window: window.remove(i, weight: weight, in: &links)
        case .probation: probation.remove(i, weight: weight, in: &links)
        case .main: protected.remove(i, weight: weight, in: &links)
        case .none: break
        }
        slots[i].queue = .none
    }

    /// The entry to evict next, never `excluded` (the entry just written, or -1):
    /// the loser of the duel between the newest candidate and the probation
    /// segment's least-recently-used entry. With probation empty, the protected
    /// segment's least-recently-used entry goes, then the window's. Returns -1 when
    /// there is no other entry.
    ///
    /// The excluded entry was just moved to the head of its list, so it is a list's
    /// tail only when it is alone on it; that list is then passed over.
    mutating func victim(
        in info: borrowing _SlotArray<_NodeInfo>, slots: inout _SlotArray<_PolicySlot>, excluding excluded: Int32
    ) -> Int32 {
        let (victim, leavesMain) = chooseVictim(in: info, slots: &slots, excluding: excluded)
        refreshCounting(slots: &slots)
        // A candidate just out of the window is remembered as the window's already.
        if leavesMain && history.isEnabled {
            history.remember(info[Int(victim)].hash, leaving: .main)
        }
        return victim
    }

    /// `victim(in:excluding:)`'s choice, and whether it is a main-space entry (not a
    /// candidate, not the window's).
    mutating func chooseVictim(
        in info: borrowing _SlotArray<_NodeInfo>, slots: inout _SlotArray<_PolicySlot>, excluding excluded: Int32
    ) -> (victim: Int32, leavesMain: Bool) {
        var victim = probation.tail
        // Probation's newest `candidates` entries are the candidates.
        var leavesMain = probation.count > candidates
        if victim < 0 || victim == excluded {
            victim = protected.tail
            leavesMain = true
        }
        if victim < 0 || victim == excluded {
            victim = window.tail
            leavesMain = false
        }
        if victim < 0 || victim == excluded { return (-1, false) }
        guard candidates > 0 else { return (victim, leavesMain) }
        let candidate = probation.head
        if candidate < 0 || candidate == victim || candidate == excluded {
            candidates = 0
            return (victim, leavesMain)
        }
        if sketch.pendingCount > 0 { sketch.flush() }
        countHits(of: candidate, slots: &slots, info: info)
        countHits(of: victim, slots: &slots, info: info)
        let candidateFrequency = sketch.frequency(info[Int(candidate)].hash)
        let victimFrequency = sketch.frequency(info[Int(victim)].hash)
        if candidateFrequency > victimFrequency {
            // When probation holds only candidates, the victim is one of them too.
            if probation.count <= candidates { candidates -= 1 }
            return (victim, leavesMain)
        }
        candidates -= 1
        return (candidate, false)
    }

    /// Ends an eviction round: candidates not judged stay on probation as ordinary
    /// entries.
    // @inlinable: MemoryCacheBenchmarks "set 1T" (every write runs it).
    @inlinable
    mutating func endEvictionRound() {
        candidates = 0
    }

    /// Empties every list; the sketch counts the slots' uncounted hits first and
    /// keeps its history.
    mutating func removeAll(slots: inout _SlotArray<_PolicySlot>, info: borrowing _SlotArray<_NodeInfo>) {
        countAllHits(slots: &slots, info: info)
        window = _LRUList()
        probation = _LRUList()
        protected = _LRUList()
        candidates = 0
        historyBalance = 0
        history.removeAll()
    }
}
