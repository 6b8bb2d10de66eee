/// What a read needs of one slot of a memory shard's node table: the entry and when
/// it expires.
///
/// The rest of the slot lives apart, in `_NodeInfo` (what writes, evictions,
/// `maxAge` reads and W-TinyLFU need) and `_Links` (list links), so that a read of a
/// cold key misses the cache on this one small record: 32 bytes for an `Int` key and
/// value, two to a cache line, instead of the 80 bytes the whole slot took.
///
/// Slots are reused through a free list, so a freed slot holds a `nil` entry
/// (releasing the key and value) until it is taken again.
@usableFromInline
struct _MemoryNode<Key, Value> {
    /// The key and value, or `nil` in a free slot.
    @usableFromInline var entry: (key: Key, value: Value)?
    /// Seconds since the reference date; `.infinity` when the entry never expires.
    @usableFromInline var expiresAt: Double

    // @inlinable: part of `_MemoryShard.set` (MemoryCacheBenchmarks "set 1T"), where a
    // call would run unspecialised for the cache's key and value types.
    @inlinable
    init(key: Key, value: Value, expiresAt: Double) {
        entry = (key, value)
        self.expiresAt = expiresAt
    }
}

/// The part of a node-table slot that only writes, evictions, `maxAge` and
/// `newerThan` reads and W-TinyLFU need (see `_MemoryNode`).
@usableFromInline
struct _NodeInfo {
    /// Seconds since the reference date.
    @usableFromInline var storedAt: Double
    @usableFromInline var cost: Int
    /// The key's hash (`_HashIndex.hash(of:)`), for the index and the frequency sketch.
    @usableFromInline var hash: UInt64

    // @inlinable: part of `_MemoryShard.set` (MemoryCacheBenchmarks "set 1T"), where a
    // call would run unspecialised for the cache's key and value types.
    @inlinable
    init(storedAt: Double, cost: Int, hash: UInt64) {
        self.storedAt = storedAt
        self.cost = cost
        self.hash = hash
    }
}

/// The list links of one node-table slot: its neighbours on whichever policy list
/// holds it, or the next free slot while it is free.
@usableFromInline
struct _Links {
    @usableFromInline var prev: Int32
    @usableFromInline var next: Int32

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    init(prev: Int32, next: Int32) {
        self.prev = prev
        self.next = next
    }
}

/// Which list of its policy a node is on.
///
/// W-TinyLFU keeps these in an array of their own, one byte a slot (100 KB at
/// 100,000 entries, so it stays in the cache), not in `_NodeInfo`: a hit reads the
/// queue of its slot, and in `_NodeInfo` that was a cache miss the `.lru` policy's
/// hit does not pay.
@usableFromInline
enum _Queue: UInt8 {
    /// The LRU policy's only list, or W-TinyLFU's protected segment.
    case main
    /// W-TinyLFU's admission window.
    case window
    /// W-TinyLFU's probation segment.
    case probation
    /// Not on any list (a free slot).
    case none
}
