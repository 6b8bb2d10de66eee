import Synchronization

/// The timed retry of a ``Cache``'s store repairs (``_SuspectKeys``).
///
/// A store's repairs travel with its next share of a batch, or with a flush; a
/// cache that writes nothing more would leave a store that recovered holding values
/// the cache replaced or removed, for every other cache over that store to read. So
/// while some store has suspect keys, the writer flushes after a delay
/// (``Cache/Configuration/repairRetryInterval``), which sends the repairs in a repair
/// pass. Each retry that leaves a store with suspect keys doubles the next delay, up
/// to ``maximumDelay(for:)``; once no store has any, the delay starts over.
///
/// At most one retry is waiting at a time. It holds the writer weakly: a writer
/// whose cache is gone is not kept alive for a retry (its exit flush still sends
/// the repairs when the program exits normally).
final class _RepairRetry: Sendable {
    /// The first delay, and the delay after a retry that left no suspect keys.
    let interval: Duration
    /// The longest delay.
    let maximum: Duration
    /// Waits for a delay (`Task.sleep`, or a test's own clock).
    let sleep: @Sendable (Duration) async throws -> Void

    private struct State {
        /// Whether a retry is waiting.
        var isScheduled = false
        /// The delay of the next retry to be scheduled.
        var nextDelay: Duration
    }

    private let state: Mutex<State>

    /// - Parameters:
    ///   - interval: The first delay; more than zero.
    ///   - sleep: Waits for a delay; defaults to `Task.sleep(for:)`.
    init(interval: Duration, sleep: (@Sendable (Duration) async throws -> Void)? = nil) {
        self.interval = interval
        maximum = Self.maximumDelay(for: interval)
        self.sleep = sleep ?? { try await Task.sleep(for: $0) }
        state = Mutex(State(nextDelay: interval))
    }

    /// The longest delay when the first is `interval`: five minutes, or `interval`
    /// when that is longer.
    static func maximumDelay(for interval: Duration) -> Duration {
        max(interval, .seconds(300))
    }

    /// Called once a batch (or a repair pass) is settled: when a store has suspect
    /// keys and no retry waits, runs `retry` after the next delay (doubling the one
    /// after it); when none has, the next delay starts over at ``interval``.
    func batchSettled(hasSuspectKeys: Bool, retry: @escaping @Sendable () async -> Void) {
        let delay = state.withLock { state -> Duration? in
            guard hasSuspectKeys else {
                state.nextDelay = interval
                return nil
            }
            guard !state.isScheduled else { return nil }
            state.isScheduled = true
            let delay = state.nextDelay
            state.nextDelay = min(delay * 2, maximum)
            return delay
        }
        guard let delay else { return }
        // Not on the writer's queue, whose preference a task made there inherits.
        Task(executorPreference: globalConcurrentExecutor) {
            // Only cancellation makes `sleep` throw, and nothing cancels this task;
            // were it cut short, retrying early is still correct.
            try? await self.sleep(delay)
            self.state.withLock { $0.isScheduled = false }
            await retry()
        }
    }
}
