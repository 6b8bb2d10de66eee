/// W-TinyLFU as Caffeine describes it: new entries enter a small LRU admission
/// window (1% of the capacity); entries leaving the window become candidates for
/// the main space, a segmented LRU (probation, and protected with 80% of the main
/// space). When the cache must evict, a candidate is compared with the main space's
/// least-recently-used probation entry, and the one the frequency sketch says was
/// used less often goes.
///
/// Weights are entry counts when the cache has a count limit, costs otherwise.
///
/// - Complexity: Every operation is O(1).
@usableFromInline
struct _TinyLFUPolicy {
    @usableFromInline var window = _LRUList()
    @usableFromInline var probation = _LRUList()
    @usableFromInline var protected = _LRUList()
    @usableFromInline var sketch: _FrequencySketch
    @usableFromInline let windowCapacity: Int
    @usableFromInline let protectedCapacity: Int
    /// Entries moved from the window to the head of probation since the last
    /// eviction round; they are the candidates the next round judges.
    @usableFromInline var candidates = 0
    /// Whether weights are costs (cost-limited cache) or one per entry.
    @usableFromInline let weighsByCost: Bool

    @usableFromInline
    init(capacity: Int, sketchCapacity: Int, weighsByCost: Bool) {
        self.weighsByCost = weighsByCost
        windowCapacity = max(1, capacity / 100)
        protectedCapacity = max(0, Int(Double(capacity - windowCapacity) * 0.8))
        sketch = _FrequencySketch(capacity: sketchCapacity)
    }

    /// The weight of an entry of the given cost.
    @inlinable
    func weight(ofCost cost: Int) -> Int { weighsByCost ? cost : 1 }

    /// Adds the new entry in slot `i`, whose key's hash is `hash`, at the head of
    /// the window; the window's oldest entries beyond its share become candidates.
    @inlinable
    mutating func insert(
        _ i: Int32, hash: UInt64, links: inout _SlotArray<_Links>, queues: inout _SlotArray<_Queue>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        sketch.record(hash)
        window.pushFront(i, weight: weight(of: i, info: info), in: &links)
        queues[i] = .window
        // Keep the window within its share: the oldest window entries become
        // candidates for the main space (the newest entry always stays).
        while window.weight > windowCapacity && window.count > 1 {
            let oldest = window.tail
            let w = weight(of: oldest, info: info)
            window.remove(oldest, weight: w, in: &links)
            probation.pushFront(oldest, weight: w, in: &links)
            queues[oldest] = .probation
            candidates += 1
        }
    }

    /// Records a use of the entry in slot `i`, whose key's hash is `hash`.
    ///
    /// A hit on the window or the protected segment touches only the slot's queue,
    /// links and the sketch's buffer; the entry's cost is read only when it moves
    /// between segments of a cost-weighted cache.
    @inlinable
    mutating func recordAccess(
        _ i: Int32, hash: UInt64, links: inout _SlotArray<_Links>, queues: inout _SlotArray<_Queue>,
        info: borrowing _SlotArray<_NodeInfo>
    ) {
        sketch.record(hash)
        switch queues[i] {
        case .window:
            window.moveToFront(i, in: &links)
        case .main:
            protected.moveToFront(i, in: &links)
        case .probation:
            let w = weight(of: i, info: info)
            probation.remove(i, weight: w, in: &links)
            protected.pushFront(i, weight: w, in: &links)
            queues[i] = .main
            while protected.weight > protectedCapacity && protected.count > 1 {
                let demoted = protected.tail
                let w = weight(of: demoted, info: info)
                protected.remove(demoted, weight: w, in: &links)
                probation.pushFront(demoted, weight: w, in: &links)
                queues[demoted] = .probation
            }
        case .none:
            break
        }
    }

    /// The weight of the entry in slot `i`: one, or its cost when weights are costs
    /// (only then is its `_NodeInfo` read).
    @inlinable
    func weight(of i: Int32, info: borrowing _SlotArray<_NodeInfo>) -> Int {
        weighsByCost ? info[i].cost : 1
    }

    /// Adjusts list weights after an entry's weight changed in place.
    @inlinable
    mutating func reweigh(queue: _Queue, by delta: Int) {
        switch queue {
        case .window: window.weight += delta
        case .probation: probation.weight += delta
        case .main: protected.weight += delta
        case .none: break
        }
    }

    @inlinable
    mutating func remove(_ i: Int32, weight: Int, links: inout _SlotArray<_Links>, queues: inout _SlotArray<_Queue>) {
        switch queues[i] {
        case .window: window.remove(i, weight: weight, in: &links)
        case .probation: probation.remove(i, weight: weight, in: &links)
        case .main: protected.remove(i, weight: weight, in: &links)
        case .none: break
        }
        queues[i] = .none
    }

    /// The entry to evict next, never `excluded` (the entry just written, or -1):
    /// the loser of the duel between the newest candidate and the probation
    /// segment's least-recently-used entry. With probation empty, the protected
    /// segment's least-recently-used entry goes, then the window's. Returns -1 when
    /// there is no other entry.
    ///
    /// The excluded entry was just moved to the head of its list, so it is a list's
    /// tail only when it is alone on it; that list is then passed over.
    @inlinable
    mutating func victim(in info: borrowing _SlotArray<_NodeInfo>, excluding excluded: Int32) -> Int32 {
        var victim = probation.tail
        if victim < 0 || victim == excluded { victim = protected.tail }
        if victim < 0 || victim == excluded { victim = window.tail }
        if victim == excluded { return -1 }
        guard candidates > 0 else { return victim }
        let candidate = probation.head
        if candidate < 0 || candidate == victim || candidate == excluded {
            candidates = 0
            return victim
        }
        if sketch.pendingCount > 0 { sketch.flush() }
        let candidateFrequency = sketch.frequency(info[Int(candidate)].hash)
        let victimFrequency = sketch.frequency(info[Int(victim)].hash)
        if candidateFrequency > victimFrequency {
            // When probation holds only candidates, the victim is one of them too.
            if probation.count <= candidates { candidates -= 1 }
            return victim
        }
        candidates -= 1
        return candidate
    }

    /// Ends an eviction round: candidates not judged stay on probation as ordinary
    /// entries.
    @inlinable
    mutating func endEvictionRound() {
        candidates = 0
    }

    @usableFromInline
    mutating func removeAll() {
        window = _LRUList()
        probation = _LRUList()
        protected = _LRUList()
        candidates = 0
    }
}
