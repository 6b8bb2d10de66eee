/// The list links of one node-table slot: its neighbours on whichever policy list
/// holds it, or the next free slot while it is free.
@usableFromInline
struct _Links {
    @usableFromInline var prev: Int32
    @usableFromInline var next: Int32

    @inlinable
    init(prev: Int32, next: Int32) {
        self.prev = prev
        self.next = next
    }
}

/// The links of every slot of a shard's node table, kept apart from the entries.
///
/// Moving an entry to the head of its list rewrites the links of the entry, its two
/// neighbours and the old head. In an array of 8-byte links those writes stay in a
/// small, cache-resident block (800 KB for 100,000 entries) instead of landing in
/// four scattered full-size nodes, which cost a cache miss each.
@usableFromInline
struct _LinkTable {
    @usableFromInline var storage = ContiguousArray<_Links>()

    @inlinable init() {}

    @inlinable var count: Int { storage.count }

    @inlinable
    subscript(i: Int32) -> _Links {
        get { storage[Int(i)] }
        _modify { yield &storage[Int(i)] }
    }

    /// Adds an unlinked slot at the end.
    @inlinable
    mutating func append() {
        storage.append(_Links(prev: -1, next: -1))
    }
}
