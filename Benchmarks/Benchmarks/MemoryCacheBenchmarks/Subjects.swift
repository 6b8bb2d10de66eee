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
