/// A growable array that a shard's tables (nodes, node info, links, index buckets)
/// keep their elements in, indexed by slot number.
///
/// `ContiguousArray` costs a uniqueness check (a runtime call) on the first write to
/// it in each operation, and a write to an element's field goes through an accessor
/// coroutine that the optimizer does not always inline; on a cache hit those were a
/// fifth of the instructions. This type is `~Copyable`, so there is only ever one
/// owner and nothing to check: an element is read and written in place. Like
/// `UnsafeMutableBufferPointer`'s, its subscripts check indices in debug builds only
/// (the shard's invariants keep them in range; every test runs with the checks). A
/// slot read from another table, the hash index's buckets, is checked in release
/// builds too, once per lookup, in `_HashIndex.find`: a check on every subscript
/// made a hit about a quarter slower in `MemoryCacheBenchmarks`.
///
/// Unsafe-pointer invariant: `base` is an allocation of `capacity` elements, of
/// which the first `count` are initialized, owned by this value alone and released
/// in its `deinit`.
@usableFromInline
struct _SlotArray<Element>: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<Element>
    @usableFromInline var count: Int
    @usableFromInline var capacity: Int

    /// An empty array with room for `capacity` elements.
    init(capacity: Int = 16) {
        base = .allocate(capacity: capacity)
        count = 0
        self.capacity = capacity
    }

    /// An array of `count` copies of `element`.
    init(repeating element: Element, count: Int) {
        base = .allocate(capacity: count)
        base.initialize(repeating: element, count: count)
        self.count = count
        capacity = count
    }

    // @inlinable: needed, not measured: the setters of the shard's and the index's
    // `@usableFromInline` tables destroy the array they replace inline, and release
    // builds fail to compile when the deinit is not inlinable.
    @inlinable
    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    subscript(i: Int) -> Element {
        unsafeAddress { UnsafePointer(base + checked(i)) }
        unsafeMutableAddress { base + checked(i) }
    }

    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    subscript(i: Int32) -> Element {
        unsafeAddress { UnsafePointer(base + checked(Int(i))) }
        unsafeMutableAddress { base + checked(Int(i)) }
    }

    /// `i`, after checking (in debug builds) that it is an index of an initialized
    /// element.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    func checked(_ i: Int) -> Int {
        assert(UInt(bitPattern: i) < UInt(bitPattern: count), "slot out of range")
        return i
    }

    /// Adds `element` at index `count`, doubling the capacity when it is full.
    // @inlinable: part of `_MemoryShard.set` (MemoryCacheBenchmarks "set 1T"), where a
    // call would run unspecialised for the cache's key and value types.
    @inlinable
    mutating func append(_ element: Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: element)
        count += 1
    }

    /// Removes every element, keeping the capacity.
    mutating func removeAll() {
        base.deinitialize(count: count)
        count = 0
    }

    @usableFromInline
    mutating func grow() {
        let newCapacity = max(16, capacity * 2)
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        newBase.moveInitialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }
}
