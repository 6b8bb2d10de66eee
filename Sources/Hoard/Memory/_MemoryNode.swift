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

/// W-TinyLFU's part of one node-table slot: the list it is on, and the hits on it
/// that the frequency sketch has not counted yet.
///
/// W-TinyLFU keeps these in an array of their own, two bytes a slot (200 KB at
/// 100,000 entries, so it stays in the processor's cache), not in `_NodeInfo`: every
/// hit reads and writes its slot's, and in `_NodeInfo` that was a cache miss the
/// `.lru` policy's hit does not pay. Counting a hit here instead of in the sketch
/// is what keeps a hit off the sketch's megabytes (see `_TinyLFUPolicy`).
@usableFromInline
struct _PolicySlot {
    /// The list the slot is on.
    @usableFromInline var queue: _Queue
    /// Hits since the sketch last counted this slot's (at most `maxHits`), or
    /// `full`: the sketch found the key's counters full when it last counted them,
    /// so that until its next reset another hit would change nothing and is not
    /// counted at all.
    @usableFromInline var hits: UInt8

    /// The most hits a slot holds before they are handed to the sketch.
    @usableFromInline static let maxHits: UInt8 = 254
    /// The value of `hits` that marks a key whose counters are full.
    @usableFromInline static let full: UInt8 = .max

    // @inlinable: part of `_MemoryShard.set` (MemoryCacheBenchmarks "set 1T"), where a
    // call would run unspecialised for the cache's key and value types.
    @inlinable
    init(queue: _Queue) {
        self.queue = queue
        hits = 0
    }
}

/// Which list of its policy a node is on.
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
