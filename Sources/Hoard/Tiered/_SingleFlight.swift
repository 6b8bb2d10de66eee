import Synchronization

/// Runs at most one operation per key at a time; concurrent callers for the same key
/// wait for that one result.
///
/// The operation runs in its own unstructured task, so cancelling a waiter (even the
/// one that started it) never cancels it for the others: a cancelled waiter stops
/// waiting at once with `CancellationError`. When the operation finishes, its key is
/// forgotten before any waiter resumes, so the next call after a failure starts anew.
///
/// A flight may carry the *ticket* of the read that started it (``Cache``'s reads
/// below memory: the writer's sequence when the read began). A caller passes a
/// test of that ticket, and joins the running flight only when it passes (the key
/// has not changed since the flight's read began); otherwise it starts a flight of
/// its own, which takes the key's place, while the older one finishes for the
/// callers that joined it.
@usableFromInline
final class _SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let flights = Mutex<[Key: _Flight<Value>]>([:])

    /// Returns the result of the operation running for `key`, starting `operation`
    /// if none is.
    ///
    /// - Parameters:
    ///   - ticket: The ticket of this caller's read, carried by the flight when it
    ///     starts one.
    ///   - joins: Whether this caller may join a running flight that carries the
    ///     given ticket (called under the flights' lock: it must not call back into
    ///     this type).
    ///   - joined: Called (before waiting) when this caller joins a flight another
    ///     caller started.
    ///   - led: Called (before the operation starts) when this caller starts the
    ///     flight.
    ///   - forgotten: When this caller starts the flight, called once its key is
    ///     forgotten (no caller can join it any more), before its waiters resume.
    @usableFromInline
    func run(
        _ key: Key,
        ticket: UInt64 = 0,
        joins: (UInt64) -> Bool = { _ in true },
        joined: () -> Void,
        led: () -> Void = {},
        forgotten: @escaping @Sendable () -> Void = {},
        operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let (flight, isLeader) = flights.withLock { flights -> (_Flight<Value>, Bool) in
            if let flight = flights[key], joins(flight.ticket) { return (flight, false) }
            let flight = _Flight<Value>(ticket: ticket)
            flights[key] = flight
            return (flight, true)
        }
        if isLeader {
            led()
            launch(flight, for: key, forgotten: forgotten, operation)
        } else {
            joined()
        }
        return try await flight.wait()
    }

    /// Starts `operation` for `key` unless one is running, and returns at once;
    /// callers of ``run(_:joined:led:operation:)`` for `key` join it meanwhile.
    ///
    /// Whether one is running is checked, and the new flight registered, in one
    /// step: of concurrent callers for a key, exactly one starts the operation.
    ///
    /// - Parameters:
    ///   - ticket: The ticket the flight carries (see
    ///     ``run(_:ticket:joins:joined:led:forgotten:operation:)``).
    ///   - forgotten: When this call starts the flight, called once its key is
    ///     forgotten, before its waiters resume.
    /// - Returns: Whether this call started it.
    func start(
        _ key: Key, ticket: UInt64 = 0, forgotten: @escaping @Sendable () -> Void = {},
        operation: @escaping @Sendable () async throws -> Value
    ) -> Bool {
        let flight = flights.withLock { flights -> _Flight<Value>? in
            if flights[key] != nil { return nil }
            let flight = _Flight<Value>(ticket: ticket)
            flights[key] = flight
            return flight
        }
        guard let flight else { return false }
        launch(flight, for: key, forgotten: forgotten, operation)
        return true
    }

    /// Runs `operation` in a task of its own for `flight`, registered under `key`:
    /// forgets the key (unless a newer flight took its place), then hands the
    /// result to the flight's waiters.
    private func launch(
        _ flight: _Flight<Value>, for key: Key, forgotten: @escaping @Sendable () -> Void,
        _ operation: @escaping @Sendable () async throws -> Value
    ) {
        Task {
            let result: Result<Value, any Error>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            self.flights.withLock { flights in
                if flights[key] === flight { flights[key] = nil }
            }
            forgotten()
            flight.finish(result)
        }
    }
}

/// One running operation and the callers waiting for it.
@usableFromInline
final class _Flight<Value: Sendable>: Sendable {
    private enum State {
        case running(waiters: [Int: CheckedContinuation<Value, any Error>], nextID: Int)
        case finished(Result<Value, any Error>)
    }

    private let state = Mutex(State.running(waiters: [:], nextID: 0))
    /// The ticket of the read that started the flight (0 when it has none).
    @usableFromInline let ticket: UInt64

    @usableFromInline
    init(ticket: UInt64 = 0) {
        self.ticket = ticket
    }

    @usableFromInline
    func finish(_ result: Result<Value, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, any Error>] in
            guard case .running(let waiters, _) = state else { return [] }
            state = .finished(result)
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    @usableFromInline
    func wait() async throws -> Value {
        let id = Mutex<Int?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate = state.withLock { state -> Result<Value, any Error>? in
                    switch state {
                    case .finished(let result):
                        return result
                    case .running(var waiters, let nextID):
                        if Task.isCancelled { return .failure(CancellationError()) }
                        waiters[nextID] = continuation
                        state = .running(waiters: waiters, nextID: nextID + 1)
                        id.withLock { $0 = nextID }
                        return nil
                    }
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
                guard case .running(var waiters, let nextID) = state, let myID = id.withLock({ $0 }) else { return nil }
                let waiter = waiters.removeValue(forKey: myID)
                state = .running(waiters: waiters, nextID: nextID)
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
