import Dispatch
import Foundation
import Synchronization

/// What ``_ExitFlush`` flushes: a cache's writer.
protocol _ExitFlushing: AnyObject, Sendable {
    /// Waits until every write queued so far has reached the stores.
    func flushBeforeExit() async
}

extension _CacheWriter: _ExitFlushing {
    func flushBeforeExit() async { await flush() }
}

/// Flushes the queued writes of every ``Cache`` of the process when it exits
/// normally (`exit(_:)`, or returning from `main`), so that a short-lived program that
/// forgets ``Cache/flush()`` loses nothing.
///
/// Each cache with stores registers its writer when it is created (weakly: the
/// registry keeps nothing alive, and a writer still applying the writes of a cache
/// that is gone stays reachable until it is done). The first registration installs
/// one `atexit` handler. The handler waits for every live writer's flush, on
/// Hoard's own threads (never Swift's cooperative pool, whose threads may all be
/// blocked, the one that called `exit` among them), for at most ``timeout``;
/// then the process exits whatever is left.
///
/// `exit` may be called from the main thread or from a task: neither is needed by
/// the flush. Code the flush does wait for must not be what called `exit`: a
/// cache's `onError`, `timings` or log handler that calls `exit` (the flush waits
/// for those callbacks' queue) or a remote store that needs the thread that
/// called it. Then the handler waits out ``timeout`` and the writes still queued
/// are lost. Abnormal ends (a signal, `_exit`, a crash) run no handler.
final class _ExitFlush: Sendable {
    /// The registry of the process.
    static let shared = _ExitFlush()

    /// The longest the `atexit` handler waits for the flushes: generous, as a
    /// program's exit is about to lose whatever is left.
    static let timeout: DispatchTimeInterval = .seconds(30)

    private struct Entry: Sendable {
        weak var writer: (any _ExitFlushing)?
    }

    private struct State: Sendable {
        var entries: [Entry] = []
        /// The count at which registering next drops the entries of writers that
        /// are gone (amortised O(1) per registration).
        var pruneAt = 64
        var installed = false
        /// Set once the handler ran: later registrations are not flushed.
        var exiting = false
    }

    private let state = Mutex(State())

    /// Registers `writer` to be flushed at exit; installs the handler the first
    /// time.
    func register(_ writer: some _ExitFlushing) {
        let install = state.withLock { state -> Bool in
            guard !state.exiting else { return false }
            if state.entries.count >= state.pruneAt {
                state.entries.removeAll { $0.writer == nil }
                state.pruneAt = max(64, state.entries.count * 2)
            }
            state.entries.append(Entry(writer: writer))
            defer { state.installed = true }
            return !state.installed
        }
        if install { atexit { _ExitFlush.shared.flushAll(timeout: _ExitFlush.timeout) } }
    }

    /// How many registered writers are still alive.
    var liveCount: Int { state.withLock { $0.entries.count(where: { $0.writer != nil }) } }

    /// Flushes every live writer, concurrently, on a thread of Hoard's own, and
    /// blocks the calling thread until they are done or `timeout` has passed.
    ///
    /// - Returns: Whether every flush finished in time.
    @discardableResult
    func flushAll(timeout: DispatchTimeInterval) -> Bool {
        let writers = state.withLock { state -> [any _ExitFlushing] in
            state.exiting = true
            defer { state.entries = [] }
            return state.entries.compactMap(\.writer)
        }
        guard !writers.isEmpty else { return true }
        let done = DispatchSemaphore(value: 0)
        // Its own executor: the shared one's threads may be held by reads that
        // wait for a writer, and the cooperative pool may be blocked in `exit`.
        let executor = _BlockingExecutor(label: "Hoard.exitFlush", width: 1)
        Task(executorPreference: executor) {
            await withTaskGroup(of: Void.self) { group in
                for writer in writers {
                    group.addTask { await writer.flushBeforeExit() }
                }
            }
            done.signal()
        }
        return done.wait(timeout: .now() + timeout) == .success
    }
}
