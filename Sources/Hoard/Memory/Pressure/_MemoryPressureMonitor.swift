import Logging
import Synchronization

/// The process's one watcher of the system's memory-pressure signal, and the handlers
/// it calls: started with the first handler, stopped when the last one goes.
final class _MemoryPressureMonitor: Sendable {
    static let shared = _MemoryPressureMonitor()

    /// What the watcher is doing, for tests and diagnostics.
    enum Status: Sendable, Equatable {
        /// No handler is registered, so nothing is watched.
        case idle
        /// The watcher is running on `source` (a file path, or "dispatch").
        case watching(source: String)
        /// The system offers no signal here; `reason` says why.
        case unavailable(reason: String)
        /// The watcher of `source` stopped by itself (its cgroup went away, `poll`
        /// failed); `reason` says why. No signal comes until the last handler goes
        /// and a new first one starts a new watcher.
        case ended(source: String, reason: String)
    }

    private struct State {
        var nextID = 0
        var handlers: [Int: @Sendable (MemoryPressureLevel) -> Void] = [:]
        var watcher: _MemoryPressureWatcher?
        /// Counts the watchers started, so that a watcher's end is not taken for a
        /// later one's.
        var generation = 0
        var status = Status.idle
        var reportedUnavailable = false
    }

    /// Starts a watcher: ``_MemoryPressureWatcher/start(deliver:ended:)``, or a
    /// test's.
    typealias Start =
        @Sendable (
            _ deliver: @escaping @Sendable (MemoryPressureLevel) -> Void, _ ended: @escaping @Sendable (String) -> Void
        ) -> Result<_MemoryPressureWatcher, _MemoryPressureWatcher.Failure>

    private let state = Mutex(State())
    private let logger: Logger
    private let start: Start

    /// A monitor that starts its watchers with `start` and reports through `logger`.
    init(
        logger: Logger = Logger(label: "hoard.memory-pressure"),
        start: @escaping Start = { _MemoryPressureWatcher.start(deliver: $0, ended: $1) }
    ) {
        self.logger = logger
        self.start = start
    }

    /// What the watcher is doing now.
    var status: Status { state.withLock { $0.status } }

    /// Registers `handler`, starting the watcher if it is the first.
    func add(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> Int {
        let (id, unavailable) = state.withLock { state -> (Int, String?) in
            let id = state.nextID
            state.nextID += 1
            state.handlers[id] = handler
            guard state.handlers.count == 1 else { return (id, nil) }
            state.generation += 1
            let generation = state.generation
            let started = start(
                { [weak self] level in self?.deliver(level) },
                { [weak self] reason in self?.ended(generation: generation, reason: reason) })
            switch started {
            case .success(let watcher):
                state.watcher = watcher
                state.status = .watching(source: watcher.source)
                return (id, nil)
            case .failure(let failure):
                state.status = .unavailable(reason: failure.reason)
                guard !state.reportedUnavailable else { return (id, nil) }
                state.reportedUnavailable = true
                return (id, failure.reason)
            }
        }
        if let unavailable {
            logger.notice(
                "no memory-pressure signal: memory caches react only to their own limits",
                metadata: ["hoard.error": "\(unavailable)"])
        }
        return id
    }

    /// Removes a handler; stops the watcher when it was the last. Returns once the
    /// watcher's thread has ended (unless called on that thread, from a handler).
    func remove(_ id: Int) {
        let watcher = state.withLock { state -> _MemoryPressureWatcher? in
            state.handlers.removeValue(forKey: id)
            guard state.handlers.isEmpty, let watcher = state.watcher else { return nil }
            state.watcher = nil
            state.status = .idle
            return watcher
        }
        watcher?.stop()
    }

    /// Records that the watcher of `generation` stopped by itself, and says so at
    /// `warning`, when it is still the current one.
    private func ended(generation: Int, reason: String) {
        let source = state.withLock { state -> String? in
            guard state.generation == generation, let watcher = state.watcher else { return nil }
            state.status = .ended(source: watcher.source, reason: reason)
            return watcher.source
        }
        guard let source else { return }
        logger.warning(
            "the memory-pressure watcher stopped: memory caches react only to their own limits from now on",
            metadata: ["hoard.error": "\(reason)", "hoard.source": "\(source)"])
    }

    /// Calls every handler, outside the lock.
    private func deliver(_ level: MemoryPressureLevel) {
        let handlers = state.withLock { Array($0.handlers.values) }
        for handler in handlers { handler(level) }
    }
}
