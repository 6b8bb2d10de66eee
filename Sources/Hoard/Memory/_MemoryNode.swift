/// One slot of a memory shard's node table: an entry and which policy list holds
/// it (the list links themselves live in the shard's `_LinkTable`). Slots are reused
/// through a free list, so a freed slot holds `nil` key and value (releasing them)
/// until it is taken again.
@usableFromInline
struct _MemoryNode<Key, Value> {
    @usableFromInline var key: Key?
    @usableFromInline var value: Value?
    @usableFromInline var cost: Int
    /// Seconds since the reference date.
    @usableFromInline var storedAt: Double
    /// Seconds since the reference date; `.infinity` when the entry never expires.
    @usableFromInline var expiresAt: Double
    /// The key's hash (`_HashIndex.hash(of:)`), for the index and the frequency sketch.
    @usableFromInline var hash: UInt64
    @usableFromInline var queue: _Queue

    @inlinable
    init(key: Key, value: Value, cost: Int, storedAt: Double, expiresAt: Double, hash: UInt64) {
        self.key = key
        self.value = value
        self.cost = cost
        self.storedAt = storedAt
        self.expiresAt = expiresAt
        self.hash = hash
        self.queue = .main
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
