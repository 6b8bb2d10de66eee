import Synchronization

/// The shards of one ``MemoryCache``, each a `Mutex<_MemoryShard>`, in a single
/// allocation that lives exactly as long as the cache.
///
/// Reaching a shard through this type costs no reference counting. (An array of
/// class boxes, the obvious alternative since a `Mutex` cannot be an array element,
/// retained and released the box on every call: two atomic writes to a line that
/// every thread using the shard shares.) Each shard starts on its own 128-byte
/// boundary, so threads working in different shards never write to the same cache
/// line, nor to the pair of lines the adjacent-line prefetcher moves together.
///
/// Unsafe-pointer invariant: `base` points to `count` initialized mutexes, `stride`
/// bytes apart, from `init` until `deinit`. The type is `~Copyable`, so only its one
/// owner (a `let` of the cache) can deinitialize them, once.
///
/// `@unchecked Sendable`: the pointer is never written after `init`, and the only
/// access to a shard's state is `withLock`, through the shard's own `Mutex`.
@usableFromInline
struct _MemoryShards<Key: Hashable & Sendable, Value: Sendable>: ~Copyable, @unchecked Sendable {
    @usableFromInline typealias Shard = _MemoryShard<Key, Value>

    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let stride: Int
    /// How many shards there are (a power of two).
    @usableFromInline let count: Int

    /// Allocates `count` shards made by `make(i)`.
    init(count: Int, make: (Int) -> Shard) {
        let alignment = max(128, MemoryLayout<Mutex<Shard>>.alignment)
        let size = MemoryLayout<Mutex<Shard>>.size
        stride = (size + alignment - 1) / alignment * alignment
        self.count = count
        base = .allocate(byteCount: stride * count, alignment: alignment)
        for i in 0..<count {
            (base + i * stride).bindMemory(to: Mutex<Shard>.self, capacity: 1).initialize(to: Mutex(make(i)))
        }
    }

    deinit {
        for i in 0..<count {
            _ = (base + i * stride).assumingMemoryBound(to: Mutex<Shard>.self).deinitialize(count: 1)
        }
        base.deallocate()
    }

    /// Runs `body` on shard `i` with the shard's lock held.
    ///
    /// - Precondition: `0 <= i < count`.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    func withLock<Result>(_ i: Int, _ body: (inout sending Shard) -> sending Result) -> sending Result {
        precondition(UInt(bitPattern: i) < UInt(bitPattern: count), "shard index out of range")
        return (base + i &* stride).assumingMemoryBound(to: Mutex<Shard>.self).pointee.withLock(body)
    }
}
