#if Postgres
import NIOCore
import Synchronization

/// The time limits of a pool's operations in flight, all watched by one timer on
/// one event loop.
///
/// Scheduling and cancelling an event-loop timer per limit from a Swift
/// concurrency thread costs a lock and a wake-up of the loop's thread (a system
/// call) each time, four per operation, as much as a short statement's own work.
/// Here a limit is an entry in a dictionary behind a `Mutex`; the timer ticks every
/// ``resolution`` while some limit is registered and stops when none is, so a
/// steady stream of operations costs no system call at all.
///
/// What it guarantees: an action registered with ``add(after:_:)`` runs once, on the
/// event loop, after its deadline (by the loop's clock, `EventLoop.now`) and at most about one ``resolution`` later (plus
/// whatever delays the loop), unless ``cancel(_:)`` removed it first. An action
/// can still run after ``cancel(_:)`` when the timer had already taken it, so
/// actions check, under their own lock, whether they still apply.
final class _PostgresDeadlines: Sendable {
    private struct Entry {
        let deadline: NIODeadline
        let action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        var isTicking = false
    }

    /// How often the timer looks for deadlines that have passed.
    let resolution: TimeAmount
    private let eventLoop: any EventLoop
    private let state = Mutex(State())

    /// - Parameters:
    ///   - eventLoop: Where the timer and the actions run.
    ///   - shortestLimit: The shortest limit that will be registered; the timer ticks
    ///     every twentieth of it, at least every 100 ms and at most every millisecond.
    init(eventLoop: any EventLoop, shortestLimit: Duration) {
        self.eventLoop = eventLoop
        let tick = TimeAmount(shortestLimit).nanoseconds / 20
        resolution = .nanoseconds(min(max(tick, 1_000_000), 100_000_000))
    }

    /// Runs `action` once `limit` has passed from now, unless cancelled first.
    ///
    /// - Returns: The id that cancels it.
    func add(after limit: TimeAmount, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let deadline = eventLoop.now + limit
        let (id, startsTicking) = state.withLock { state in
            let id = state.nextID
            state.nextID &+= 1
            state.entries[id] = Entry(deadline: deadline, action: action)
            defer { state.isTicking = true }
            return (id, !state.isTicking)
        }
        if startsTicking { scheduleTick() }
        return id
    }

    /// Whether the timer is running (or about to tick once more and stop).
    var isTicking: Bool { state.withLock { $0.isTicking } }

    /// Removes the action registered under `id`, if it has not run.
    func cancel(_ id: UInt64) {
        state.withLock { state in _ = state.entries.removeValue(forKey: id) }
    }

    private func scheduleTick() {
        eventLoop.scheduleTask(in: resolution) { self.tick() }
    }

    /// Runs the actions whose deadlines have passed, outside the lock, and ticks
    /// again while some remain.
    private func tick() {
        let now = eventLoop.now
        let (due, ticksAgain) = state.withLock { state in
            let dueIDs = state.entries.compactMap { $0.value.deadline <= now ? $0.key : nil }
            let due = dueIDs.compactMap { state.entries.removeValue(forKey: $0)?.action }
            state.isTicking = !state.entries.isEmpty
            return (due, state.isTicking)
        }
        if ticksAgain { scheduleTick() }
        for action in due { action() }
    }
}
#endif
