import Foundation
import Hoard
import Synchronization

/// A cache under test, reduced to the two operations the workloads use. The
/// workloads are generic over it, so each subject gets a specialised loop and
/// no existential or protocol-witness call sits inside the measured region.
protocol CacheSubject: AnyObject, Sendable {
    func get(_ key: Int) -> Int?
    func put(_ value: Int, for key: Int)
}

extension MemoryCache: CacheSubject where Key == Int, Value == Int {
    func get(_ key: Int) -> Int? { value(for: key) }
    func put(_ value: Int, for key: Int) { set(value, for: key) }
}

/// Baseline: the simplest thread-safe cache, a dictionary behind one `Mutex`.
/// No eviction, no recency bookkeeping, no statistics: the floor any cache with a
/// single lock pays.
final class LockedDictionary: CacheSubject {
    private let storage = Mutex<[Int: Int]>([:])

    init(capacity: Int) {
        storage.withLock { $0.reserveCapacity(capacity) }
    }

    func get(_ key: Int) -> Int? {
        storage.withLock { $0[key] }
    }

    func put(_ value: Int, for key: Int) {
        storage.withLock { $0[key] = value }
    }
}

/// Baseline: Foundation's `NSCache` with no count or cost limit. Keys and values
/// are boxed as `NSNumber` on every call, as code with `Int` keys has to.
final class NSCacheSubject: CacheSubject, @unchecked Sendable {
    // NSCache is documented as thread-safe; swift-corelibs-foundation does not
    // mark it Sendable, hence @unchecked.
    private let cache = NSCache<NSNumber, NSNumber>()

    init() {
        cache.countLimit = 0  // unbounded
    }

    func get(_ key: Int) -> Int? {
        cache.object(forKey: NSNumber(value: key))?.intValue
    }

    func put(_ value: Int, for key: Int) {
        cache.setObject(NSNumber(value: value), forKey: NSNumber(value: key))
    }
}

/// Floor of a write that keeps its time: `LockedDictionary` whose entries also hold
/// the time they were written, read from a ``CacheClock`` before the lock, as a
/// `MemoryCache` does for every set (its `maxAge:` and `newerThan:` reads and its
/// lifetimes need it). Against `LockedDictionary`, it shows what the clock read
/// alone costs a write; against `MemoryCache`, what the cache adds beyond it.
final class TimestampedDictionary: CacheSubject {
    private let storage = Mutex<[Int: (value: Int, storedAt: Double)]>([:])
    private let clock: any CacheClock

    init(capacity: Int, clock: any CacheClock) {
        self.clock = clock
        storage.withLock { $0.reserveCapacity(capacity) }
    }

    func get(_ key: Int) -> Int? {
        storage.withLock { $0[key]?.value }
    }

    func put(_ value: Int, for key: Int) {
        let storedAt = clock.now().timeIntervalSinceReferenceDate
        storage.withLock { $0[key] = (value, storedAt) }
    }
}

/// Floor of what a frequency sketch adds to a read: `LockedDictionary` whose reads,
/// under the same lock, also update one word of a 1 MiB counter table and one of a
/// 2 MiB doorkeeper, chosen by a hash of the key: the sizes of `.tinyLFU`'s sketch
/// at 100,000 entries, and the two cache lines its increment touches. Against
/// `LockedDictionary`, it shows what those two random lines cost a read on this
/// machine, however the sketch batches or prefetches them; writes do not touch them.
/// `.tinyLFU`'s hits no longer pay it: they are counted on their slots, and the
/// sketch counts them later, once per entry (see `_TinyLFUPolicy`).
final class SketchedDictionary: CacheSubject {
    private struct State {
        var values: [Int: Int] = [:]
        /// 131,072 counter words, then 262,144 doorkeeper words.
        var tables = [UInt64](repeating: 0, count: SketchedDictionary.counterWords + SketchedDictionary.doorkeeperWords)
    }

    static let counterWords = 1 << 17
    static let doorkeeperWords = 1 << 18

    private let storage = Mutex(State())

    init(capacity: Int) {
        storage.withLock { $0.values.reserveCapacity(capacity) }
    }

    func get(_ key: Int) -> Int? {
        // A multiplicative hash, so neighbouring keys (the hottest) touch scattered words.
        let hash = UInt64(bitPattern: Int64(key)) &* 0x9E37_79B9_7F4A_7C15
        let counter = Int(truncatingIfNeeded: hash >> 47)  // 17 bits
        let doorkeeper = Self.counterWords + Int(truncatingIfNeeded: (hash >> 20) & UInt64(Self.doorkeeperWords - 1))
        return storage.withLock { state in
            state.tables.withUnsafeMutableBufferPointer { tables in
                tables[counter] &+= 1 << (hash & 60)
                tables[doorkeeper] |= 1 << (hash & 63)
            }
            return state.values[key]
        }
    }

    func put(_ value: Int, for key: Int) {
        storage.withLock { $0.values[key] = value }
    }
}
