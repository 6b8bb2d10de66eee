import Foundation

/// One independently locked part of a ``MemoryCache``: a hash index into a node
/// table, the eviction policy's lists over those nodes, and the shard's counters.
///
/// Every method runs with the shard's lock held (the shard lives in a `Mutex`), so
/// none of them calls the cost closure or hashes a key (callers do both first);
/// only a key's `==` and the `deinit` of a released value, user code that must not
/// call back into the cache, run here. Changes are published to observers from inside
/// the lock, which keeps per-key updates in order; publishing only enqueues into
/// `AsyncStream` buffers.
///
/// - Complexity: Lookup, insert, update, remove and each eviction are O(1)
///   (amortised, as the hash index is).
@usableFromInline
struct _MemoryShard<Key: Hashable & Sendable, Value: Sendable>: ~Copyable {
    @usableFromInline var index = _HashIndex()
    /// The node table, in four parallel arrays (slot `i` is element `i` of each):
    /// what reads need, what writes and policies need, the list links, and
    /// W-TinyLFU's state of each slot.
    @usableFromInline var nodes = _SlotArray<_MemoryNode<Key, Value>>()
    @usableFromInline var info = _SlotArray<_NodeInfo>()
    @usableFromInline var links = _SlotArray<_Links>()
    /// The W-TinyLFU list that holds each slot, and its uncounted hits (unused by
    /// `.lru`; see `_PolicySlot`).
    @usableFromInline var policySlots = _SlotArray<_PolicySlot>()
    /// The slots of W-TinyLFU hits not yet applied to the policy, oldest first: a
    /// hit only appends its slot here, and `applyPendingHits` applies them when
    /// there are `_TinyLFUPolicy.hitBatch`, and before anything else reads or
    /// changes the policy. Always empty with `.lru`.
    @usableFromInline var pendingHits: _SlotArray<Int32>
    @usableFromInline var freeHead: Int32 = -1
    @usableFromInline var totalCost = 0
    /// How many entries have a finite expiry; `removeExpired` skips the scan at zero.
    @usableFromInline var expiringCount = 0

    @usableFromInline let countLimit: Int
    @usableFromInline let costLimit: Int
    @usableFromInline let countLowWater: Int
    @usableFromInline let costLowWater: Int
    @usableFromInline let usesTinyLFU: Bool
    @usableFromInline var lru = _LRUList()
    @usableFromInline var tinyLFU: _TinyLFUPolicy

    @usableFromInline var hits = 0
    @usableFromInline var misses = 0
    var evictions = 0
    /// The part of ``evictions`` made for memory pressure.
    var pressureEvictions = 0
    var expirations = 0

    init(countLimit: Int?, costLimit: Int?, lowWaterMark: Double, policy: EvictionPolicy) {
        self.countLimit = countLimit ?? .max
        self.costLimit = costLimit ?? .max
        countLowWater = countLimit.map { _LowWaterMark.of($0, at: lowWaterMark) } ?? .max
        costLowWater = costLimit.map { _LowWaterMark.of($0, at: lowWaterMark) } ?? .max
        usesTinyLFU = policy == .tinyLFU
        pendingHits = _SlotArray(capacity: policy == .tinyLFU ? _TinyLFUPolicy.hitBatch : 1)
        if policy == .tinyLFU, let countLimit {
            tinyLFU = _TinyLFUPolicy(
                capacity: countLimit, sketchCapacity: min(countLimit, _FrequencySketch.maxCapacity),
                weighsByCost: false)
        } else if policy == .tinyLFU, let costLimit {
            tinyLFU = _TinyLFUPolicy(capacity: costLimit, sketchCapacity: min(costLimit, 1 << 16), weighsByCost: true)
        } else {
            // LRU, or W-TinyLFU without limits (nothing is ever evicted): a token sketch.
            tinyLFU = _TinyLFUPolicy(capacity: .max / 2, sketchCapacity: 16, weighsByCost: false, adapts: false)
        }
    }

    var count: Int { index.count }

    /// The slot of `key`, whose hash is `hash` (`_HashIndex.hash(of:)`), or `nil`.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" (every read runs it).
    @inlinable
    func slot(of key: Key, hash: UInt64) -> Int32? {
        index.find(key, hash: hash, in: nodes)
    }

    // MARK: Reads

    /// Finds a live entry for `key` that passes the freshness filters, counts a hit
    /// or a miss, and records the access with the policy.
    ///
    /// An expired entry is removed. An entry that is merely older than `maxAge` /
    /// `newerThan` allows is a miss but stays; so is every entry for a NaN or
    /// negative `maxAge` or a NaN `newerThan`.
    ///
    /// Takes the observers themselves, not `ifActive`: only the rare removal of an
    /// expired entry publishes, so a hit skips the atomic load (and the retain and
    /// release of the result) that asking up front would cost.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" (every read runs it).
    @inlinable
    mutating func lookup(
        _ key: Key, hash: UInt64, clock: any CacheClock, maxAge: Double?, newerThan: Double?,
        observers: _MemoryObservers<Key, Value>
    ) -> Int32? {
        guard let i = slot(of: key, hash: hash) else {
            misses &+= 1
            return nil
        }
        let n = Int(i)
        if nodes[n].expiresAt != .infinity || maxAge != nil {
            let now = clock.now().timeIntervalSinceReferenceDate
            if now >= nodes[n].expiresAt {
                expire(i, key: key, observers: observers.ifActive)
                misses &+= 1
                return nil
            }
            // A NaN or negative maxAge admits no entry, not even one stored "after"
            // now by a clock that went back.
            if let maxAge, !(maxAge >= 0) || now - info[n].storedAt > maxAge {
                misses &+= 1
                return nil
            }
        }
        if let newerThan, !(info[n].storedAt > newerThan) {
            misses &+= 1
            return nil
        }
        if usesTinyLFU {
            pendingHits.append(i)
            if pendingHits.count == _TinyLFUPolicy.hitBatch { applyPendingHits() }
        } else {
            lru.moveToFront(i, in: &links)
        }
        hits &+= 1
        return i
    }

    /// Applies the W-TinyLFU hits in `pendingHits` to the policy, oldest first, and
    /// empties it.
    ///
    /// Everything else that reads or changes the policy's state (a write, a removal,
    /// an eviction, `removeAll`) calls this first, so that the policy sees the same
    /// operations in the same order as if each hit had been applied at once:
    /// batching changes when the work is done, never what the cache keeps. It also
    /// keeps every buffered slot live: a slot is freed only by `removeNode`, after
    /// the buffer is applied.
    @usableFromInline
    mutating func applyPendingHits() {
        guard pendingHits.count > 0 else { return }
        tinyLFU.applyHits(pendingHits, links: &links, slots: &policySlots, info: info)
        pendingHits.removeAll()
    }

    /// The live value for `key`, without counting a hit or touching recency.
    func peek(_ key: Key, hash: UInt64, now: Double) -> Value? {
        guard let i = slot(of: key, hash: hash), now < nodes[Int(i)].expiresAt else { return nil }
        return nodes[Int(i)].entry?.value
    }

    /// The entry in slot `i`, with its stored date and expiry (`nil` for an empty
    /// slot).
    func entry(at i: Int32) -> CacheEntry<Value>? {
        let node = Int(i)
        guard let value = nodes[node].entry?.value else { return nil }
        let expiresAt = nodes[node].expiresAt
        return CacheEntry(
            value: value,
            storedAt: Date(timeIntervalSinceReferenceDate: info[node].storedAt),
            expiresAt: expiresAt == .infinity ? nil : Date(timeIntervalSinceReferenceDate: expiresAt))
    }

    // MARK: Writes

    /// The most an entry's cost counts for: a shard holds at most 2^31 entries (slots
    /// are `Int32`), so no sum of costs overflows.
    // @inlinable: MemoryCacheBenchmarks "set 1T" (every write runs it).
    @inlinable static var maxCost: Int { Int(UInt32.max) }

    /// Stores `value`; returns `false` (and removes any older value for the key)
    /// when its cost alone exceeds the cost limit. A cost above `maxCost` counts as
    /// `maxCost`.
    // @inlinable: MemoryCacheBenchmarks "set 1T" (every write runs it).
    @inlinable
    mutating func set(
        _ value: Value, for key: Key, hash: UInt64, cost: Int, storedAt: Double, expiresAt: Double,
        observers: _MemoryObservers<Key, Value>?
    ) -> Bool {
        if pendingHits.count > 0 { applyPendingHits() }
        let existing = slot(of: key, hash: hash)
        guard cost <= costLimit else {
            if let existing { removeNode(existing, key: key, observers: observers) }
            return false
        }
        let cost = min(cost, Self.maxCost)
        let i: Int32
        if let existing {
            i = existing
            let n = Int(i)
            let delta = cost - info[n].cost
            totalCost += delta
            if nodes[n].expiresAt != .infinity { expiringCount -= 1 }
            if expiresAt != .infinity { expiringCount += 1 }
            nodes[n].entry?.value = value
            nodes[n].expiresAt = expiresAt
            info[n].cost = cost
            info[n].storedAt = storedAt
            if usesTinyLFU {
                if tinyLFU.weighsByCost { tinyLFU.reweigh(queue: policySlots[n].queue, by: delta) }
                tinyLFU.recordAccess(i, links: &links, slots: &policySlots, info: info)
            } else {
                lru.moveToFront(i, in: &links)
            }
        } else {
            let node = _MemoryNode(key: key, value: value, expiresAt: expiresAt)
            let nodeInfo = _NodeInfo(storedAt: storedAt, cost: cost, hash: hash)
            if freeHead >= 0 {
                i = freeHead
                freeHead = links[i].next
                nodes[Int(i)] = node
                info[Int(i)] = nodeInfo
            } else {
                i = Int32(nodes.count)
                nodes.append(node)
                info.append(nodeInfo)
                links.append(_Links(prev: -1, next: -1))
                policySlots.append(_PolicySlot(queue: .none))
            }
            index.insert(i, hash: hash, info: info)
            totalCost += cost
            if expiresAt != .infinity { expiringCount += 1 }
            if usesTinyLFU {
                tinyLFU.insert(i, hash: hash, links: &links, slots: &policySlots, info: info)
            } else {
                lru.pushFront(i, weight: cost, in: &links)
            }
        }
        observers?.publish(.set(key), key: key, value: value)
        enforceLimits(protecting: i, observers: observers)
        return true
    }

    /// Evicts down to the low-water mark of each limit that is exceeded, never
    /// evicting `protected` (the entry just written).
    // @inlinable: MemoryCacheBenchmarks "set 1T" (every write runs it).
    @inlinable
    mutating func enforceLimits(protecting protected: Int32, observers: _MemoryObservers<Key, Value>?) {
        defer { if usesTinyLFU { tinyLFU.endEvictionRound() } }
        let overCount = index.count > countLimit
        let overCost = totalCost > costLimit
        guard overCount || overCost else { return }
        evict(
            toCount: overCount ? countLowWater : countLimit,
            toCost: overCost ? costLowWater : costLimit,
            reason: overCount ? .countLimit : .costLimit,
            protecting: protected, observers: observers)
    }

    /// Evicts the policy's victims until both targets are met.
    @usableFromInline
    mutating func evict(
        toCount countTarget: Int, toCost costTarget: Int, reason: EvictionReason,
        protecting protected: Int32, observers: _MemoryObservers<Key, Value>?
    ) {
        if pendingHits.count > 0 { applyPendingHits() }
        while index.count > countTarget || totalCost > costTarget {
            let victim = usesTinyLFU ? tinyLFU.victim(in: info, slots: &policySlots, excluding: protected) : lru.tail
            guard victim >= 0, victim != protected, let key = nodes[Int(victim)].entry?.key else { break }
            removeNode(victim, key: key, observers: nil)
            evictions &+= 1
            if reason == .memoryPressure { pressureEvictions &+= 1 }
            observers?.publish(.evicted(key, reason: reason), key: key, value: nil)
        }
        if usesTinyLFU { tinyLFU.endEvictionRound() }
    }

    @usableFromInline
    mutating func expire(_ i: Int32, key: Key, observers: _MemoryObservers<Key, Value>?) {
        removeNode(i, key: key, observers: nil)
        expirations &+= 1
        observers?.publish(.expired(key), key: key, value: nil)
    }

    /// Unlinks and frees a node. Publishes `.removed` when `observers` is given;
    /// evictions and expirations pass `nil` and publish their own event.
    @usableFromInline
    @discardableResult
    mutating func removeNode(_ i: Int32, key: Key, observers: _MemoryObservers<Key, Value>?) -> Value? {
        if pendingHits.count > 0 { applyPendingHits() }
        let n = Int(i)
        let cost = info[n].cost
        if usesTinyLFU {
            tinyLFU.remove(
                i, weight: tinyLFU.weight(ofCost: cost), links: &links, slots: &policySlots, info: info)
        } else {
            lru.remove(i, weight: cost, in: &links)
        }
        index.remove(i, hash: info[n].hash, info: info)
        totalCost -= cost
        if nodes[n].expiresAt != .infinity { expiringCount -= 1 }
        let value = nodes[n].entry?.value
        nodes[n].entry = nil
        links[i].next = freeHead
        freeHead = i
        observers?.publish(.removed(key), key: key, value: nil)
        return value
    }

    mutating func removeValue(for key: Key, hash: UInt64, observers: _MemoryObservers<Key, Value>?) -> Value? {
        guard let i = slot(of: key, hash: hash) else { return nil }
        return removeNode(i, key: key, observers: observers)
    }

    /// Removes every entry; returns how many there were.
    mutating func removeAll(observers: _MemoryObservers<Key, Value>?) -> Int {
        let removed = index.count
        if let observers {
            for n in 0..<nodes.count {
                if let key = nodes[n].entry?.key { observers.publishUpdate(key: key, value: nil) }
            }
        }
        if usesTinyLFU {
            applyPendingHits()
            tinyLFU.removeAll(slots: &policySlots, info: info)
        }
        index = _HashIndex()
        nodes = _SlotArray()
        info = _SlotArray()
        links = _SlotArray()
        policySlots = _SlotArray()
        freeHead = -1
        totalCost = 0
        expiringCount = 0
        lru = _LRUList()
        return removed
    }

    /// Removes every entry expired at `now`; returns how many.
    mutating func removeExpired(now: Double, observers: _MemoryObservers<Key, Value>?) -> Int {
        guard expiringCount > 0 else { return 0 }
        var removed = 0
        for n in 0..<nodes.count where now >= nodes[n].expiresAt {
            guard let key = nodes[n].entry?.key else { continue }
            expire(Int32(n), key: key, observers: observers)
            removed += 1
        }
        return removed
    }
}
