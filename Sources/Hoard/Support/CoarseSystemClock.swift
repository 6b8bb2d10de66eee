import Foundation

/// The system's wall clock at the kernel's tick resolution: a cheaper read of the
/// time for caches that write often and need their dates to a few milliseconds
/// only.
///
/// On Linux it reads `CLOCK_REALTIME_COARSE`, the time the kernel stored at its
/// last timer tick (every 1 to 10 ms as the kernel is built; `clock_getres` says
/// which). That read takes no timestamp from the processor, so it neither waits
/// for the instructions before it nor holds up those after: a write that reads
/// the time is cheaper than on ``SystemClock`` (`Benchmarks/README.md` has the
/// `MemoryCacheBenchmarks` figures). On Apple platforms it is ``SystemClock``.
///
/// What the coarser time changes, compared with ``SystemClock``:
/// - A stored date is never later than the precise time of the write, and may be
///   one tick earlier. So a read with `newerThan: date` never returns an entry
///   stored before `date`, but may miss one stored less than a tick after it.
/// - Lifetimes start up to one tick early, so an entry may expire up to one tick
///   sooner than its lifetime says (and an expiry check reads the same coarse
///   time, so never more than a tick later).
/// - Writes in the same tick share a stored date.
///
/// ```swift
/// import Hoard
///
/// let sessions = try MemoryCache<String, Int>(
///     configuration: .init(countLimit: 10_000), clock: CoarseSystemClock())
/// sessions.set(42, for: "ada")
/// ```
public struct CoarseSystemClock: CacheClock {
    /// Creates the clock.
    public init() {}

    /// The current date, at most one kernel tick behind ``SystemClock``'s and never
    /// ahead of it.
    public func now() -> Date {
        Date(timeIntervalSinceReferenceDate: _POSIX.coarseTimeSinceReferenceDate())
    }
}
