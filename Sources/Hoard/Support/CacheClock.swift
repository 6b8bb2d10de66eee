import Foundation
import Synchronization

/// A source of the current time for caches and stores.
///
/// Caches read the time when they store an entry (its stored date, its expiry) and
/// when they check an entry that can expire. Inject a ``ManualClock`` in tests and
/// move it instead of sleeping.
///
/// - Important: `now()` may be called while a cache holds one of its locks. It must
///   be cheap, must not block, and must not call back into the cache.
public protocol CacheClock: Sendable {
    /// The current date.
    func now() -> Date
}

/// The system's wall clock, `Date()`.
public struct SystemClock: CacheClock {
    /// Creates the system clock.
    public init() {}

    /// The current date, `Date()`.
    @inlinable
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to, for tests and simulations.
///
/// ```swift
/// let clock = ManualClock()
/// let cache = try MemoryCache<String, Int>(clock: clock)
/// cache.set(1, for: "a", expires: .seconds(10))
/// clock.advance(by: 11)
/// #expect(cache["a"] == nil)
/// ```
///
/// Thread-safe: it is read and moved without a lock (one atomic word).
public final class ManualClock: CacheClock {
    private let bits: Atomic<UInt64>

    /// Creates a clock standing at `start`.
    ///
    /// - Parameter start: The initial date. Defaults to 2001-01-01 00:00:00 UTC.
    public init(start: Date = Date(timeIntervalSinceReferenceDate: 0)) {
        bits = Atomic(start.timeIntervalSinceReferenceDate.bitPattern)
    }

    /// The date the clock stands at: the start, moved by every ``advance(by:)``
    /// and ``set(to:)`` so far.
    public func now() -> Date {
        Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits.load(ordering: .relaxed)))
    }

    /// Moves the clock forward (or backward, with a negative interval).
    ///
    /// - Parameter seconds: How far to move, in seconds.
    public func advance(by seconds: TimeInterval) {
        while true {
            let old = bits.load(ordering: .relaxed)
            let new = (Double(bitPattern: old) + seconds).bitPattern
            if bits.compareExchange(expected: old, desired: new, ordering: .relaxed).exchanged { return }
        }
    }

    /// Sets the clock to `date`.
    public func set(to date: Date) {
        bits.store(date.timeIntervalSinceReferenceDate.bitPattern, ordering: .relaxed)
    }
}
