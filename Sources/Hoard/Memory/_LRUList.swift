/// An intrusive doubly-linked list over the slots of a node table, most recent at
/// the head. It owns no storage: the links live in the nodes, so moving an entry
/// allocates nothing.
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

    @inlinable init() {}

    @inlinable
    mutating func pushFront<K, V>(_ i: Int32, weight w: Int, queue: _Queue, in nodes: inout ContiguousArray<_MemoryNode<K, V>>) {
        let n = Int(i)
        nodes[n].prev = -1
        nodes[n].next = head
        nodes[n].queue = queue
        if head >= 0 { nodes[Int(head)].prev = i } else { tail = i }
        head = i
        count += 1
        weight += w
    }

    @inlinable
    mutating func remove<K, V>(_ i: Int32, weight w: Int, in nodes: inout ContiguousArray<_MemoryNode<K, V>>) {
        let n = Int(i)
        let prev = nodes[n].prev
        let next = nodes[n].next
        if prev >= 0 { nodes[Int(prev)].next = next } else { head = next }
        if next >= 0 { nodes[Int(next)].prev = prev } else { tail = prev }
        nodes[n].prev = -1
        nodes[n].next = -1
        nodes[n].queue = .none
        count -= 1
        weight -= w
    }

    @inlinable
    mutating func moveToFront<K, V>(_ i: Int32, in nodes: inout ContiguousArray<_MemoryNode<K, V>>) {
        guard head != i else { return }
        let n = Int(i)
        let prev = nodes[n].prev
        let next = nodes[n].next
        // i is not the head, so prev >= 0.
        nodes[Int(prev)].next = next
        if next >= 0 { nodes[Int(next)].prev = prev } else { tail = prev }
        nodes[n].prev = -1
        nodes[n].next = head
        nodes[Int(head)].prev = i
        head = i
    }
}
