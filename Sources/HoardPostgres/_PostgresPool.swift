#if Postgres
import HoardNIOSupport
import Logging
import PostgresNIO
import Synchronization

/// The store's postgres-nio client (its connection pool) and the bounds on every
/// operation run through it.
///
/// The client starts with the first operation, opens all its connections and keeps
/// them open (see `Configuration.clientConfiguration(connections:keepsConnectionsOpen:)`
/// for why). Its connections all run on one event loop, and each operation runs in a
/// task that prefers that loop (``executor``): the task starts on the caller's
/// thread, and once the server has answered it decodes the result on the thread
/// that read it, with no hand-off between threads; a caller already on the loop
/// costs no hand-off at all. (When the answer arrives before the task has begun to
/// wait for it, which a descheduled caller makes possible, the task goes on
/// decoding on the caller's thread instead: still no hand-off.)
///
/// Each operation runs under two limits: while it waits for a connection one allows
/// `connectionWaitTimeout`, once it has one the other allows `commandTimeout`. Both
/// are deadlines watched by the pool's one timer (``_PostgresDeadlines``), so a
/// bound costs no task and no system call. When the wait runs
/// out the operation fails with `connectionFailed` and later operations fail at once
/// for a backoff delay (doubling up to the maximum, reset by the next connection
/// had), so a server that is down costs each caller nothing. When the statement
/// runs out, the connection is closed, which fails the statement at once, and the
/// pool replaces it. When the connection closes under a statement for any other
/// reason, the operation fails at once with `connectionClosed` (see
/// ``watch(_:onLost:)``).
final class _PostgresPool: Sendable {
    struct Settings: Sendable {
        var host: String
        var port: Int
        var connectionWaitTimeout: Duration
        var commandTimeout: Duration
        var initialReconnectDelay: Duration
        var maximumReconnectDelay: Duration
        /// The caller's logger: postgres-nio's background messages and every
        /// statement's.
        var logger: Logger
    }

    private struct State {
        var isShutdown = false
        /// The client's `run()`, started by the first operation (the client then opens
        /// its connections and keeps them open).
        var runner: Task<Void, Never>?
        /// Operations fail at once until then, after a connection could not be had.
        var blockedUntil: ContinuousClock.Instant?
        /// The delay the next failure to connect blocks operations for.
        var backoff: ReconnectBackoff
    }

    /// The caller's logger, for the statements run on the pool's connections.
    let logger: Logger

    let client: PostgresClient
    /// Runs tasks on the loop of the client's connections.
    let executor: EventLoopTaskExecutor
    private let deadlines: _PostgresDeadlines
    private let connectFailures: _ConnectFailureLog
    private let settings: Settings
    private let state: Mutex<State>
    /// The open connections operations have run on, by id, with what to do if one
    /// closes under the operation running on it (see ``watch(_:onLost:)``).
    private let watched = Mutex<[PostgresConnection.ID: _Watch]>([:])
    /// How to give up each operation waiting for a connection, for a refused login.
    private let waiters: _Waiters

    init(configuration: PostgresClient.Configuration, eventLoop: any EventLoop, settings: Settings) {
        let waiters = _Waiters()
        self.waiters = waiters
        // No connection is coming: the waiting operations give up now and say why.
        let connectFailures = _ConnectFailureLog(onRefusedLogin: { waiters.giveUpAll() })
        self.connectFailures = connectFailures
        // An event loop is a group of one: every connection of the client runs on it.
        let client = PostgresClient(
            configuration: configuration, eventLoopGroup: eventLoop,
            backgroundLogger: connectFailures.logger(forwardingTo: settings.logger))
        logger = settings.logger
        self.client = client
        executor = EventLoopTaskExecutor(eventLoop: eventLoop)
        deadlines = _PostgresDeadlines(
            eventLoop: eventLoop, shortestLimit: min(settings.connectionWaitTimeout, settings.commandTimeout))
        self.settings = settings
        state = Mutex(
            State(
                backoff: ReconnectBackoff(
                    initial: settings.initialReconnectDelay, maximum: settings.maximumReconnectDelay)))
    }

    /// Stops the client: its connections close and later operations fail with `shutdown`.
    func shutdown() {
        let runner = state.withLock { state in
            state.isShutdown = true
            return state.runner
        }
        runner?.cancel()
    }

    /// Runs `body` on a connection of the pool, within the timeouts.
    ///
    /// The caller resumes as soon as the operation ends or a limit is reached, even
    /// if postgres-nio has not yet wound the operation down: the bound holds
    /// whatever the library does after it.
    func run<T: Sendable>(
        _ operation: String, key: String?, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(PostgresStoreError) -> T {
        try checkAvailable(operation, key: key)
        let client = self.client
        let pool = self
        let executor = self.executor
        let deadlines = self.deadlines
        let outcome = _Outcome<T>(deadlines: deadlines)
        let lease = _Lease(commandTimeout: TimeAmount(settings.commandTimeout), deadlines: deadlines, outcome: outcome)
        let waiters = self.waiters
        let waiterID = waiters.newID()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
                outcome.set(continuation)
                let operation: @Sendable () async -> Void = {
                    do {
                        let value = try await client.withConnection { connection in
                            guard lease.start(connection) else { throw CancellationError() }
                            pool.noteConnected()
                            pool.watch(connection) { lease.connectionLost() }
                            defer { pool.endWatch(connection) }
                            do {
                                let value = try await body(connection)
                                lease.statementEnded()
                                return value
                            } catch {
                                // A connection closed for running out of time, or closed here
                                // because a statement failed to prepare on it (which postgres-nio
                                // would remember), goes back to the pool only once the pool has
                                // seen it close.
                                var isClosing = !lease.statementEnded()
                                if !isClosing, _PostgresPreparedStatement.spoilsConnection(error) {
                                    Self.close(connection)
                                    isClosing = true
                                }
                                if isClosing { try? await connection.closeFuture.get() }
                                throw error
                            }
                        }
                        outcome.resume(.success(value))
                    } catch {
                        outcome.resume(.failure(error))
                    }
                }
                let task: Task<Void, Never>
                if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                    // Runs on the caller's thread until it first waits (for a
                    // connection or the answer), then on the loop: no hop through an
                    // executor's queue to start.
                    task = Task.immediate(executorPreference: executor, operation: operation)
                } else {
                    task = Task(executorPreference: executor, operation: operation)
                }
                outcome.setTask(task)
                let giveUp: @Sendable () -> Void = {
                    if lease.expireWait() {
                        // Resumed first, so the cancelled lease cannot answer in its place.
                        outcome.resume(.failure(_Limit.wait))
                        task.cancel()
                    }
                }
                waiters.add(giveUp, id: waiterID)
                let waitDeadline = deadlines.add(after: TimeAmount(settings.connectionWaitTimeout), giveUp)
                outcome.setWaitDeadline(waitDeadline)
            }
        } onCancel: {
            outcome.cancel()
        }
        waiters.remove(waiterID)
        switch result {
        case .success(let value):
            return value
        case .failure(_Limit.wait):
            noteConnectionFailure()
            throw waitExpired(operation: operation).with(key: key)
        case .failure(_Limit.connectionLost):
            throw PostgresStoreError(
                .connectionClosed,
                "The connection to the PostgreSQL server at \(settings.host):\(settings.port) closed while the "
                    + "statement ran; the pool replaces it.",
                operation: operation, key: key)
        case .failure(_Limit.command):
            throw PostgresStoreError(
                .timeout,
                "The PostgreSQL server did not answer within \(settings.commandTimeout); the connection was closed.",
                operation: operation, key: key)
        case .failure(let error):
            throw PostgresStoreError(from: error, operation: operation).with(key: key)
        }
    }

    /// Makes sure `connection`'s close is watched, and that `lost` runs if it closes
    /// before ``endWatch(_:)``.
    ///
    /// postgres-nio hands a statement to its connection's channel with a write whose
    /// failure nobody hears: a statement sent on a connection that has just closed
    /// (the server ended the session, say, before the pool noticed) would wait for an
    /// answer that never comes, until `commandTimeout`. Watching the close ends it at
    /// once. Each connection's close is watched by one callback, registered the first
    /// time an operation runs on it; the operation running on it is recorded here.
    func watch(_ connection: PostgresConnection, onLost lost: @escaping @Sendable () -> Void) {
        let id = connection.id
        let isNew = watched.withLock { watched in
            let isNew = watched[id] == nil
            watched[id] = _Watch(onLost: lost)
            return isNew
        }
        if isNew {
            connection.closeFuture.whenComplete { _ in self.closed(id) }
        }
    }

    /// The operation on `connection` is over: its close no longer concerns it.
    func endWatch(_ connection: PostgresConnection) {
        watched.withLock { watched in
            if watched[connection.id] != nil { watched[connection.id] = _Watch(onLost: nil) }
        }
    }

    private func closed(_ id: PostgresConnection.ID) {
        let watch = watched.withLock { $0.removeValue(forKey: id) }
        watch?.onLost?()
    }

    /// Closes `connection` without waiting (the pool's `close()`, not the async one
    /// that waits for the server), which fails whatever runs on it at once.
    static func close(_ connection: PostgresConnection) {
        connection.close() as Void
    }

    /// The error of an operation that waited in vain for a connection, saying why
    /// the latest connection attempt failed when one did.
    private func waitExpired(operation: String) -> PostgresStoreError {
        var message =
            "No connection to the PostgreSQL server at \(settings.host):\(settings.port) within "
            + "\(settings.connectionWaitTimeout)"
        guard let reason = connectFailures.reason else {
            message += ": it does not answer, or every connection of the pool stayed busy."
            return PostgresStoreError(.connectionFailed, message, operation: operation)
        }
        message += "; the latest attempt failed: \(reason.prefix(1_000))"
        let refusedLogin = _ConnectFailureLog.isRefusedLogin(reason)
        return PostgresStoreError(
            refusedLogin ? .authenticationFailed : .connectionFailed, message, operation: operation)
    }

    /// Throws when the pool is shut down or backing off; starts the client on first use.
    private func checkAvailable(_ operation: String, key: String?) throws(PostgresStoreError) {
        let client = self.client
        let (isShutdown, blockedUntil) = state.withLock { state in
            if !state.isShutdown, state.runner == nil {
                state.runner = Task { await client.run() }
            }
            return (state.isShutdown, state.blockedUntil)
        }
        if isShutdown {
            throw PostgresStoreError(.shutdown, "The store has been shut down.", operation: operation, key: key)
        }
        if let blockedUntil, ContinuousClock.now < blockedUntil {
            throw PostgresStoreError(
                .connectionFailed,
                "The PostgreSQL server at \(settings.host):\(settings.port) could not be reached just now; "
                    + "the store tries again after its reconnect delay.",
                operation: operation, key: key)
        }
    }

    /// A connection was had: operations wait for connections again.
    func noteConnected() {
        if connectFailures.reason != nil { connectFailures.clear() }
        state.withLock { state in
            guard state.blockedUntil != nil else { return }
            state.blockedUntil = nil
            state.backoff.succeed()
        }
    }

    private func noteConnectionFailure() {
        state.withLock { state in
            state.blockedUntil = .now + state.backoff.fail()
        }
    }
}

/// The limits an operation can run into, and the connection closing under it.
enum _Limit: Error {
    case wait, command, connectionLost
}

/// The operations of a pool that may be waiting for a connection, each as the call
/// that gives it up (which does nothing once it has one).
final class _Waiters: Sendable {
    private struct State {
        var byID: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    func newID() -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
    }

    func add(_ giveUp: @escaping @Sendable () -> Void, id: UInt64) {
        state.withLock { $0.byID[id] = giveUp }
    }

    func remove(_ id: UInt64) {
        state.withLock { $0.byID[id] = nil }
    }

    /// Gives up every operation still waiting.
    func giveUpAll() {
        let all = state.withLock { Array($0.byID.values) }
        for giveUp in all { giveUp() }
    }
}

/// What to do when a watched connection closes: end the operation running on it, if any.
struct _Watch: Sendable {
    var onLost: (@Sendable () -> Void)?
}

/// Where an operation's result goes: resumed once, by the operation, a deadline, or
/// the caller's cancellation, whichever comes first.
final class _Outcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<T, any Error>, Never>?
        var task: Task<Void, Never>?
        var waitDeadline: UInt64?
        var isDone = false
    }

    private let deadlines: _PostgresDeadlines
    private let state = Mutex(State())

    init(deadlines: _PostgresDeadlines) {
        self.deadlines = deadlines
    }

    func set(_ continuation: CheckedContinuation<Result<T, any Error>, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func setTask(_ task: Task<Void, Never>) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.isDone
        }
        if cancelled { task.cancel() }
    }

    func setWaitDeadline(_ id: UInt64) {
        let done = state.withLock { state in
            state.waitDeadline = id
            return state.isDone
        }
        if done { deadlines.cancel(id) }
    }

    /// Resumes the caller with `result`, unless it was resumed already.
    func resume(_ result: Result<T, any Error>) {
        let (continuation, waitDeadline) = state.withLock { state in
            state.isDone = true
            defer { state.continuation = nil }
            return (state.continuation, state.waitDeadline)
        }
        if let waitDeadline { deadlines.cancel(waitDeadline) }
        continuation?.resume(returning: result)
    }

    /// The caller was cancelled: stops the operation and resumes the caller.
    func cancel() {
        cancelTask()
        resume(.failure(CancellationError()))
    }

    /// Cancels the task running the operation, so that it winds down.
    func cancelTask() {
        let task = state.withLock { $0.task }
        task?.cancel()
    }
}

/// One operation's progress, shared by the operation and its two deadlines: the
/// wait for a connection and the statement.
final class _Lease<T: Sendable>: Sendable {
    private enum State {
        case waiting
        case running(PostgresConnection, deadline: UInt64)
        case ended
        case expired
    }

    private let commandTimeout: TimeAmount
    private let deadlines: _PostgresDeadlines
    private let outcome: _Outcome<T>
    private let state = Mutex<State>(.waiting)

    init(commandTimeout: TimeAmount, deadlines: _PostgresDeadlines, outcome: _Outcome<T>) {
        self.commandTimeout = commandTimeout
        self.deadlines = deadlines
        self.outcome = outcome
    }

    /// Records the connection the operation got and starts the statement's deadline;
    /// `false` when the wait has already run out.
    func start(_ connection: PostgresConnection) -> Bool {
        let deadline = deadlines.add(after: commandTimeout) { self.expireCommand() }
        let started = state.withLock { state in
            guard case .waiting = state else { return false }
            state = .running(connection, deadline: deadline)
            return true
        }
        if !started { deadlines.cancel(deadline) }
        return started
    }

    /// The wait for a connection ran out: `true` when the operation was still waiting
    /// (and is now given up).
    func expireWait() -> Bool {
        state.withLock { state in
            guard case .waiting = state else { return false }
            state = .expired
            return true
        }
    }

    /// The statement ran out: closes its connection, which fails it, and resumes the
    /// caller at once.
    private func expireCommand() {
        end(.command)
    }

    /// The connection closed while the statement ran: resumes the caller at once with
    /// ``_Limit/connectionLost``, whether or not postgres-nio ever fails the statement.
    func connectionLost() {
        end(.connectionLost)
    }

    /// Ends a running statement for `limit`: drops its deadline, closes the connection
    /// when the statement ran out of time, resumes the caller and stops the task.
    private func end(_ limit: _Limit) {
        let running = state.withLock { state -> (connection: PostgresConnection, deadline: UInt64)? in
            guard case .running(let connection, let deadline) = state else { return nil }
            state = .expired
            return (connection, deadline)
        }
        guard let running else { return }
        deadlines.cancel(running.deadline)
        if limit == .command { _PostgresPool.close(running.connection) }
        outcome.resume(.failure(limit))
        outcome.cancelTask()
    }

    /// The statement ended (before the connection goes back to the pool): drops its
    /// deadline. `false` when the deadline had already passed and closed the connection.
    @discardableResult
    func statementEnded() -> Bool {
        let (ended, deadline) = state.withLock { state -> (Bool, UInt64?) in
            switch state {
            case .running(_, let deadline):
                state = .ended
                return (true, deadline)
            case .expired:
                return (false, nil)
            case .waiting, .ended:
                state = .ended
                return (true, nil)
            }
        }
        if let deadline { deadlines.cancel(deadline) }
        return ended
    }
}
#endif
