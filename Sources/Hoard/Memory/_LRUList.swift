/// An intrusive doubly-linked list over the slots of a node table, most recent at
/// the head. It owns no storage: the links live in the shard's link array, 8 bytes a
/// slot apart from the entries, so moving an entry allocates nothing and touches
/// only the links of the entry, its neighbours and the old head. (Kept in the
/// 80-byte nodes, those were scattered writes to an 8 MB table at 100,000 entries,
/// a cache miss each; 8-byte links take 800 KB and stay cache-resident.)
///
/// - Complexity: Every operation is O(1).
@usableFromInline
struct _LRUList {
    /// Most recently used slot, or -1.
    @usableFromInline var head: Int32 = -1
    /// Least recently used slot, or -1.
    @usableFromInline var tail: Int32 = -1
    @usableFromInline var count: Int = 0
    /// Sum of the weights of the nodes on the list (see `_MemoryShard.weight`).
    @usableFromInline var weight: Int = 0

    init() {}

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T: MemoryCache tinyLFU shards:1" (a hit on
    // probation moves the entry to the protected segment).
    @inlinable
    mutating func pushFront(_ i: Int32, weight w: Int, in links: inout _SlotArray<_Links>) {
        links[i] = _Links(prev: -1, next: head)
        if head >= 0 { links[head].prev = i } else { tail = i }
        head = i
        count += 1
        weight += w
    }

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T: MemoryCache tinyLFU shards:1" (a hit on
    // probation moves the entry to the protected segment).
    @inlinable
    mutating func remove(_ i: Int32, weight w: Int, in links: inout _SlotArray<_Links>) {
        let link = links[i]
        if link.prev >= 0 { links[link.prev].next = link.next } else { head = link.next }
        if link.next >= 0 { links[link.next].prev = link.prev } else { tail = link.prev }
        links[i] = _Links(prev: -1, next: -1)
        count -= 1
        weight -= w
    }

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T: MemoryCache lru shards:1" (every LRU hit) and
    // "get-hit 1T: MemoryCache tinyLFU shards:1" (every W-TinyLFU hit on the protected segment).
    @inlinable
    mutating func moveToFront(_ i: Int32, in links: inout _SlotArray<_Links>) {
        guard head != i else { return }
        let link = links[i]
        // i is not the head, so link.prev >= 0.
        links[link.prev].next = link.next
        if link.next >= 0 { links[link.next].prev = link.prev } else { tail = link.prev }
        links[i] = _Links(prev: -1, next: head)
        links[head].prev = i
        head = i
    }
}
