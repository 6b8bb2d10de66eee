/// A shard's hash index: an open-addressing table from a key's hash to the node-table
/// slot that holds the key.
///
/// The caller hashes the key once, before taking the shard's lock, and uses the same
/// hash to pick the shard. A `Dictionary` index would hash the key again, inside the
/// critical section (SipHash: about 100 instructions for an `Int` key).
///
/// Each bucket is 8 bytes: the slot and the low 32 bits of the hash. A lookup probes
/// buckets linearly from the hash's home bucket and reads a node (to compare keys)
/// only when the stored bits match, so a hit usually touches one bucket and the node
/// it needs anyway for the value. Removal shifts the following entries of the run back
/// (no tombstones), so probe runs stay short however many entries come and go. The
/// table doubles before more than 3/4 of its buckets are in use, and rehashes from
/// the stored bits alone, without touching the nodes.
///
/// - Complexity: `find`, `insert` and `remove` are O(1) on average (amortised for
///   `insert`, which may grow the table).
@usableFromInline
struct _HashIndex: ~Copyable {
    @usableFromInline
    struct Bucket {
        /// The node-table slot, or -1 when the bucket is empty.
        @usableFromInline var slot: Int32
        /// The low 32 bits of the key's hash.
        @usableFromInline var hash: UInt32

        @inlinable
        init(slot: Int32, hash: UInt32) {
            self.slot = slot
            self.hash = hash
        }

        @inlinable static var empty: Bucket { Bucket(slot: -1, hash: 0) }
    }

    @usableFromInline static let initialCapacity = 16

    @usableFromInline var buckets: _SlotArray<Bucket>
    /// `buckets.count - 1`; the bucket count is a power of two, at most 2^32.
    @usableFromInline var mask: Int
    /// How many keys the index holds.
    @usableFromInline var count = 0

    @inlinable
    init() {
        buckets = _SlotArray(repeating: .empty, count: Self.initialCapacity)
        mask = Self.initialCapacity - 1
    }

    /// The hash the index (and the shard choice, and the frequency sketch) uses for
    /// `key`: its `hashValue`, mixed so that every bit depends on every input bit.
    @inlinable
    static func hash<Key: Hashable>(of key: Key) -> UInt64 {
        _FrequencySketch.spread(key.hashValue)
    }

    /// The slot of the entry whose key is `key`, or `nil`.
    @inlinable
    func find<Key: Equatable, Value>(
        _ key: Key, hash: UInt64, in nodes: borrowing _SlotArray<_MemoryNode<Key, Value>>
    ) -> Int32? {
        let bits = UInt32(truncatingIfNeeded: hash)
        var b = Int(bits) & mask
        while true {
            let bucket = buckets[b]
            if bucket.slot < 0 { return nil }
            if bucket.hash == bits, nodes[Int(bucket.slot)].entry?.key == key { return bucket.slot }
            b = (b &+ 1) & mask
        }
    }

    /// Adds `slot` under `hash`. The key must not be in the index already.
    @inlinable
    mutating func insert(_ slot: Int32, hash: UInt64) {
        if (count + 1) * 4 > buckets.count * 3 { grow() }
        place(Bucket(slot: slot, hash: UInt32(truncatingIfNeeded: hash)))
        count += 1
    }

    /// Puts `bucket` in the first empty bucket from its home.
    @inlinable
    mutating func place(_ bucket: Bucket) {
        var b = Int(bucket.hash) & mask
        while buckets[b].slot >= 0 { b = (b &+ 1) & mask }
        buckets[b] = bucket
    }

    /// Doubles the bucket count and rehashes every entry from its stored bits.
    @usableFromInline
    mutating func grow() {
        precondition(buckets.count <= Int(UInt32.max) / 2 + 1, "hash index full")
        var old = _SlotArray(repeating: Bucket.empty, count: buckets.count * 2)
        swap(&old, &buckets)
        mask = buckets.count - 1
        for b in 0..<old.count where old[b].slot >= 0 { place(old[b]) }
    }

    /// Removes `slot`, which is in the index under `hash`.
    @inlinable
    mutating func remove(_ slot: Int32, hash: UInt64) {
        var hole = Int(UInt32(truncatingIfNeeded: hash)) & mask
        while buckets[hole].slot != slot {
            precondition(buckets[hole].slot >= 0, "slot not in the hash index")
            hole = (hole &+ 1) & mask
        }
        // Backward-shift deletion: move each later entry of the run whose home is not
        // between the hole and itself into the hole, so no lookup finds a gap early.
        var next = hole
        while true {
            next = (next &+ 1) & mask
            let bucket = buckets[next]
            if bucket.slot < 0 { break }
            let home = Int(bucket.hash) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = bucket
                hole = next
            }
        }
        buckets[hole] = .empty
        count -= 1
    }
}
