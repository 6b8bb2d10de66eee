#if Redis
import HoardNIOSupport
import NIOCore
import Synchronization

/// A bounded set of pipelining connections to one server, opened on demand.
///
/// - **Bounded.** At most `maximumConnections` connections, each shared by at most
///   `pipeliningLimit` operations at once (their commands pipelined). An operation
///   takes an idle connection if there is one, else opens a new connection while
///   under the maximum, else shares the least busy connection with room. When every
///   connection is full, it waits in a first-in first-out queue, for at most
///   `connectionWaitTimeout`, then fails with ``RedisError/Code/poolExhausted``.
/// - **Reconnects with exponential backoff.** A connection that closes (the server
///   went away, a command timed out) leaves the pool; the next operation opens a new
///   one. After a failed attempt the pool waits `initialReconnectDelay`, doubled after
///   each further failure up to `maximumReconnectDelay`, before it tries again; in
///   between, operations that have no open connection to use fail at once with
///   ``RedisError/Code/connectionFailed`` instead of piling up, so a cache can fall
///   back to a miss. A successful connection resets the delay.
/// - **Cheap when there is room.** Taking and giving back a connection is a few
///   instructions under a `Mutex`, with no suspension; only connecting and waiting
///   for room suspend. Waiters are resumed after the lock is released. No thread
///   ever blocks on I/O.
final class _RedisConnectionPool: Sendable {
    struct Settings: Sendable {
        var connection: _RedisConnection.Settings
        var maximumConnections: Int
        var pipeliningLimit: Int
        var connectionWaitTimeout: Duration
        var initialReconnectDelay: Duration
        var maximumReconnectDelay: Duration
        var log: _RedisLog
    }

    /// What an operation asking for a connection gets.
    private enum Lease: Sendable {
        case connection(_RedisConnection)
        /// Open a new connection; `connecting` already counts it.
        case open
        case wait
        case fail(RedisError)
    }

    private struct Slot {
        let connection: _RedisConnection
        var leases: Int
    }

    private struct Waiter {
        let id: UInt64
        let continuation: UnsafeContinuation<Lease, any Error>
        let timeout: Task<Void, Never>
    }

    /// Waiters to resume once the lock is released, and whether to open a connection
    /// for the ones still waiting.
    private struct Wakeups {
        var served: [(Waiter, _RedisConnection)] = []
        var opensConnection = false
    }

    private struct State {
        var slots: [Slot] = []
        var connecting = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var isShutdown = false
        var consecutiveFailures = 0
        var retryAt: ContinuousClock.Instant?
        var lastFailure: RedisError?
    }

    let settings: Settings
    private let group: any EventLoopGroup
    private let state = Mutex(State())

    init(settings: Settings, group: any EventLoopGroup) {
        self.settings = settings
        self.group = group
    }

    /// Runs `body` with a connection of the pool, then gives the connection back.
    func withConnection<T: Sendable>(
        _ body: (_RedisConnection) async throws(RedisError) -> T
    ) async throws(RedisError) -> T {
        let connection = try await lease()
        do {
            let result = try await body(connection)
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    /// The number of open connections, of operations using them, and of operations
    /// waiting for room, for tests.
    var load: (connections: Int, operations: Int, waiters: Int) {
        get async {
            state.withLock { state in
                (state.slots.count, state.slots.reduce(0) { $0 + $1.leases }, state.waiters.count)
            }
        }
    }

    /// Closes every connection and fails every waiting operation; later operations
    /// fail with ``RedisError/Code/shutdown``.
    func shutdown() async {
        let (slots, waiters) = state.withLock { state in
            state.isShutdown = true
            defer {
                state.slots.removeAll()
                state.waiters.removeAll()
            }
            return (state.slots, state.waiters)
        }
        for slot in slots { slot.connection.close() }
        for waiter in waiters {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: Self.shutdownError)
        }
    }

    // MARK: Leasing

    private func lease() async throws(RedisError) -> _RedisConnection {
        var decision = state.withLock { decide(&$0) }
        while true {
            switch decision {
            case .connection(let connection): return connection
            case .open: return try await openConnection(leasing: true)
            case .fail(let error): throw error
            case .wait: decision = try await waitForRoom()
            }
        }
    }

    private func release(_ connection: _RedisConnection) {
        let wakeups = state.withLock { state -> Wakeups? in
            if let index = state.slots.firstIndex(where: { $0.connection === connection }) {
                state.slots[index].leases -= 1
            }
            return serveWaiters(&state)
        }
        if let wakeups { perform(wakeups) }
    }

    /// What to do for an operation that wants a connection now. Takes the lease, or
    /// counts the connection to open, in `state`.
    private func decide(_ state: inout State) -> Lease {
        guard !state.isShutdown else { return .fail(Self.shutdownError) }
        state.slots.removeAll { !$0.connection.isActive }
        if let index = state.slots.firstIndex(where: { $0.leases == 0 }) {
            state.slots[index].leases += 1
            return .connection(state.slots[index].connection)
        }
        if state.slots.count + state.connecting < settings.maximumConnections {
            if let retryAt = state.retryAt, ContinuousClock.now < retryAt {
                // Backing off: share a busy connection if there is one, else fail fast.
                if let connection = leaseLeastBusy(&state) { return .connection(connection) }
                if state.slots.isEmpty && state.connecting == 0 { return .fail(backoffError(state, until: retryAt)) }
            } else {
                state.connecting += 1
                return .open
            }
        }
        if let connection = leaseLeastBusy(&state) { return .connection(connection) }
        return .wait
    }

    private func leaseLeastBusy(_ state: inout State) -> _RedisConnection? {
        var best: Int?
        for index in state.slots.indices where state.slots[index].leases < settings.pipeliningLimit {
            if best.map({ state.slots[index].leases < state.slots[$0].leases }) ?? true { best = index }
        }
        guard let best else { return nil }
        state.slots[best].leases += 1
        return state.slots[best].connection
    }

    // MARK: Connecting

    /// Opens a connection (which `connecting` already counts) and adds it to the
    /// pool, leased once to the caller when `leasing`; waiters get the rest of its room.
    private func openConnection(leasing: Bool) async throws(RedisError) -> _RedisConnection {
        let connection: _RedisConnection
        do {
            connection = try await _RedisConnection.connect(settings: settings.connection, group: group)
        } catch {
            let failed = state.withLock { state -> [Waiter] in
                state.connecting -= 1
                state.consecutiveFailures += 1
                state.lastFailure = error
                state.retryAt = ContinuousClock.now + reconnectDelay(afterFailures: state.consecutiveFailures)
                guard state.slots.isEmpty && state.connecting == 0 else { return [] }
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            settings.log.log(.warning, "could not connect to Redis", operation: "connect", error: error)
            for waiter in failed {
                waiter.timeout.cancel()
                waiter.continuation.resume(throwing: error)
            }
            throw error
        }
        let wakeups = state.withLock { state -> Wakeups? in
            state.connecting -= 1
            state.consecutiveFailures = 0
            state.retryAt = nil
            guard !state.isShutdown else { return nil }
            state.slots.append(Slot(connection: connection, leases: leasing ? 1 : 0))
            return serveWaiters(&state) ?? Wakeups()
        }
        guard let wakeups else {
            connection.close()
            throw Self.shutdownError
        }
        connection.closeFuture.whenComplete { _ in self.connectionClosed(connection) }
        perform(wakeups)
        return connection
    }

    private func connectionClosed(_ connection: _RedisConnection) {
        let (wakeups, isShutdown) = state.withLock { state -> (Wakeups?, Bool) in
            state.slots.removeAll { $0.connection === connection }
            return (serveWaiters(&state), state.isShutdown)
        }
        if !isShutdown {
            settings.log.log(.warning, "a connection to Redis closed; the pool opens another", operation: "connect")
        }
        if let wakeups { perform(wakeups) }
    }

    /// The delay before the next attempt after `failures` failed ones in a row.
    private func reconnectDelay(afterFailures failures: Int) -> Duration {
        ReconnectBackoff.delay(
            afterFailures: failures, initial: settings.initialReconnectDelay, maximum: settings.maximumReconnectDelay)
    }

    private func backoffError(_ state: State, until retryAt: ContinuousClock.Instant) -> RedisError {
        let remaining = (retryAt - ContinuousClock.now).components
        let milliseconds = remaining.seconds * 1000 + remaining.attoseconds / 1_000_000_000_000_000
        return RedisError(
            .connectionFailed,
            "Redis at \(settings.connection.endpoint) is unreachable (\(state.consecutiveFailures) failed attempts "
                + "in a row); the next attempt is in \(max(0, milliseconds)) ms.",
            underlying: state.lastFailure)
    }

    private static let shutdownError = RedisError(.shutdown, "The Redis store was shut down.")

    // MARK: Waiting

    /// Waits in the queue until a connection has room (or the pool may open one), and
    /// returns what the operation gets then.
    private func waitForRoom() async throws(RedisError) -> Lease {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        do {
            return try await withTaskCancellationHandler {
                try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Lease, any Error>) in
                    let wait = settings.connectionWaitTimeout
                    let timeout = Task {
                        try? await Task.sleep(for: wait)
                        guard !Task.isCancelled else { return }
                        self.expireWaiter(id)
                    }
                    // Decide again, in the same critical section as joining the queue, so
                    // that no release can slip in between.
                    let immediate = state.withLock { state -> Lease? in
                        let decision = decide(&state)
                        guard case .wait = decision else { return decision }
                        if Task.isCancelled { return .fail(Self.cancelledError(CancellationError())) }
                        state.waiters.append(Waiter(id: id, continuation: continuation, timeout: timeout))
                        return nil
                    }
                    if let immediate {
                        timeout.cancel()
                        continuation.resume(returning: immediate)
                    }
                }
            } onCancel: {
                self.cancelWaiter(id)
            }
        } catch {
            throw (error as? RedisError) ?? Self.cancelledError(error)
        }
    }

    /// Hands connections with room to waiters, first come first served, and counts a
    /// new connection to open when the pool may grow and the rest still wait.
    /// Returns `nil` when there is nothing to do.
    private func serveWaiters(_ state: inout State) -> Wakeups? {
        guard !state.waiters.isEmpty, !state.isShutdown else { return nil }
        var wakeups = Wakeups()
        state.slots.removeAll { !$0.connection.isActive }
        while !state.waiters.isEmpty, let connection = leaseLeastBusy(&state) {
            wakeups.served.append((state.waiters.removeFirst(), connection))
        }
        if !state.waiters.isEmpty, state.slots.count + state.connecting < settings.maximumConnections,
            !(state.retryAt.map { ContinuousClock.now < $0 } ?? false)
        {
            state.connecting += 1
            wakeups.opensConnection = true
        }
        return wakeups
    }

    private func perform(_ wakeups: Wakeups) {
        for (waiter, connection) in wakeups.served {
            waiter.timeout.cancel()
            waiter.continuation.resume(returning: .connection(connection))
        }
        if wakeups.opensConnection {
            Task { _ = try? await self.openConnection(leasing: false) }
        }
    }

    private func expireWaiter(_ id: UInt64) {
        let expired = state.withLock { state -> (Waiter, Int)? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return (state.waiters.remove(at: index), state.slots.count)
        }
        guard let (waiter, connections) = expired else { return }
        let seconds =
            Double(settings.connectionWaitTimeout.components.seconds)
            + Double(settings.connectionWaitTimeout.components.attoseconds) / 1e18
        waiter.continuation.resume(
            throwing: RedisError(
                .poolExhausted,
                "All \(connections) connections to \(settings.connection.endpoint) stayed busy for \(seconds) s "
                    + "(\(settings.pipeliningLimit) operations each); raise maximumConnections or pipeliningLimit, "
                    + "or connectionWaitTimeout."))
    }

    private func cancelWaiter(_ id: UInt64) {
        let cancelled = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        guard let cancelled else { return }
        cancelled.timeout.cancel()
        cancelled.continuation.resume(throwing: CancellationError())
    }

    private static func cancelledError(_ error: any Error) -> RedisError {
        RedisError(
            .cancelled, "The operation was cancelled while it waited for a connection; nothing was sent.",
            underlying: error)
    }
}
#endif
