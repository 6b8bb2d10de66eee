/// A shard's hash index: an open-addressing table from a key's hash to the node-table
/// slot that holds the key.
///
/// The caller hashes the key once, before taking the shard's lock, and uses the same
/// hash to pick the shard. A `Dictionary` index would hash the key again, inside the
/// critical section (SipHash: about 100 instructions for an `Int` key).
///
/// A bucket is 4 bytes: the slot in its low bits (as many as the bucket count needs,
/// `slotBits`) and, above them, the same bits of the key's hash, a tag. A lookup
/// probes linearly from the hash's home bucket (its low `slotBits` bits) and reads a
/// node to compare keys only when the tag matches. Small buckets matter: at 100,000
/// entries the index is 1 MB, and a hit of a key whose bucket is not cached pays a
/// cache miss before it can even find its node. Slots fit because the node table
/// never holds more slots than 3/4 of the bucket count, so the all-ones bucket is
/// free to mean "empty".
///
/// Removal shifts the following entries of the run back (no tombstones), so probe
/// runs stay short however many entries come and go. The table doubles before more
/// than 3/4 of its buckets are in use. The home bits are not in the bucket: removal
/// and growth read them from the nodes' stored hashes (`_NodeInfo.hash`).
///
/// - Complexity: `find`, `insert` and `remove` are O(1) on average (amortised for
///   `insert`, which may grow the table).
@usableFromInline
struct _HashIndex: ~Copyable {
    @usableFromInline static var empty: UInt32 { .max }
    static var initialCapacity: Int { 16 }

    @usableFromInline var buckets: _SlotArray<UInt32>
    /// `buckets.count - 1`; the bucket count is a power of two, at most 2^31.
    @usableFromInline var mask: Int
    /// How many keys the index holds.
    @usableFromInline var count = 0

    init(capacity: Int = Self.initialCapacity) {
        buckets = _SlotArray(repeating: Self.empty, count: capacity)
        mask = capacity - 1
    }

    /// The hash the index (and the shard choice, and the frequency sketch) uses for
    /// `key`: its `hashValue`, mixed so that every bit depends on every input bit.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    static func hash<Key: Hashable>(of key: Key) -> UInt64 {
        _FrequencySketch.spread(key.hashValue)
    }

    /// The bits of a bucket that hold the tag.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable var tagMask: UInt32 { ~UInt32(truncatingIfNeeded: mask) }

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    func tag(_ hash: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: hash) & tagMask }

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash) & mask }

    /// The slot of the entry whose key is `key`, or `nil`.
    ///
    /// Every slot a shard works on comes from here or from its own allocation, so
    /// this is where a slot read from the table is checked against the node table
    /// in release builds too (`_SlotArray` checks in debug builds only): a corrupted
    /// bucket traps instead of reading outside the allocation.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    func find<Key: Equatable, Value>(
        _ key: Key, hash: UInt64, in nodes: borrowing _SlotArray<_MemoryNode<Key, Value>>
    ) -> Int32? {
        let tag = tag(hash)
        var b = home(hash)
        while true {
            let bucket = buckets[b]
            if bucket == Self.empty { return nil }
            if bucket & tagMask == tag {
                let slot = Int(bucket & ~tagMask)
                precondition(slot < nodes.count, "hash index names a slot beyond the node table")
                if nodes[slot].entry?.key == key { return Int32(truncatingIfNeeded: slot) }
            }
            b = (b &+ 1) & mask
        }
    }

    /// Adds `slot` under `hash`. The key must not be in the index already; `info`
    /// holds the hashes of the entries already in it.
    @usableFromInline
    mutating func insert(_ slot: Int32, hash: UInt64, info: borrowing _SlotArray<_NodeInfo>) {
        if (count + 1) * 4 > buckets.count * 3 { grow(info: info) }
        place(slot, hash: hash)
        count += 1
    }

    /// Puts `slot` in the first empty bucket from the home of `hash`.
    mutating func place(_ slot: Int32, hash: UInt64) {
        precondition(slot >= 0 && Int(slot) < mask, "slot beyond the index")
        var b = home(hash)
        while buckets[b] != Self.empty { b = (b &+ 1) & mask }
        buckets[b] = tag(hash) | UInt32(truncatingIfNeeded: slot)
    }

    /// Doubles the bucket count and re-adds every entry from its stored hash.
    mutating func grow(info: borrowing _SlotArray<_NodeInfo>) {
        precondition(buckets.count < 1 << 31, "hash index full")
        var old = _HashIndex(capacity: buckets.count * 2)
        swap(&old, &self)
        count = old.count
        for b in 0..<old.buckets.count where old.buckets[b] != Self.empty {
            let slot = Int32(truncatingIfNeeded: old.buckets[b] & ~old.tagMask)
            place(slot, hash: info[slot].hash)
        }
    }

    /// Removes `slot`, which is in the index under `hash`.
    mutating func remove(_ slot: Int32, hash: UInt64, info: borrowing _SlotArray<_NodeInfo>) {
        let wanted = tag(hash) | UInt32(truncatingIfNeeded: slot)
        var hole = home(hash)
        while buckets[hole] != wanted {
            precondition(buckets[hole] != Self.empty, "slot not in the hash index")
            hole = (hole &+ 1) & mask
        }
        // Backward-shift deletion: move each later entry of the run whose home is not
        // between the hole and itself into the hole, so no lookup finds a gap early.
        var next = hole
        while true {
            next = (next &+ 1) & mask
            let bucket = buckets[next]
            if bucket == Self.empty { break }
            let home = home(info[Int(bucket & ~tagMask)].hash)
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = bucket
                hole = next
            }
        }
        buckets[hole] = Self.empty
        count -= 1
    }
}
