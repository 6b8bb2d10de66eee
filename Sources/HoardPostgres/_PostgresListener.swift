#if Postgres
import Hoard
import HoardNIOSupport
import PostgresNIO
import Synchronization

/// The store's `LISTEN` connection: one connection of its own (a one-connection
/// postgres-nio client), listening on the store's channel while some invalidation
/// stream is wanted, reopened with backoff whenever it is lost.
///
/// postgres-nio's client retries a failed connection attempt by itself, keeping
/// the listener waiting for its connection; the client's background logger
/// (``_ConnectFailureLog``) tells the listener that an attempt failed, so that the
/// first `LISTEN` after such a wait reports `RemoteInvalidation.missed`, as a
/// resumed one does, and ``lastError`` says why meanwhile.
final class _PostgresListener: Sendable {
    private struct State {
        var loop: Task<Void, Never>?
        var lastError: PostgresStoreError?
        /// For tests: called by ``sync()`` before it decides, with no lock held.
        var syncWillDecide: (@Sendable () -> Void)?
    }

    private let client: PostgresClient
    /// The client's failed connection attempts since the listener last listened.
    private let connectFailures: _ConnectFailureLog
    private let runner: Task<Void, Never>
    private let hub: _PostgresNotifications
    private let channel: String
    private let initialDelay: Duration
    private let maximumDelay: Duration
    private let state = Mutex(State())

    /// - Parameters:
    ///   - configuration: The client's configuration: one connection, not kept open.
    ///   - eventLoopGroup: Where the connection runs.
    ///   - logger: Receives postgres-nio's background messages.
    init(
        configuration: PostgresClient.Configuration, eventLoopGroup: any EventLoopGroup, logger: Logger,
        hub: _PostgresNotifications, channel: String, initialDelay: Duration, maximumDelay: Duration
    ) {
        let connectFailures = _ConnectFailureLog()
        self.connectFailures = connectFailures
        let client = PostgresClient(
            configuration: configuration, eventLoopGroup: eventLoopGroup,
            backgroundLogger: connectFailures.logger(forwardingTo: logger))
        self.client = client
        self.hub = hub
        self.channel = channel
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        runner = Task { await client.run() }
    }

    /// Why listening last failed (also while postgres-nio is still retrying the
    /// connection); `nil` once it listens again.
    var lastError: PostgresStoreError? {
        if let error = state.withLock({ $0.lastError }) { return error }
        guard let reason = connectFailures.reason else { return nil }
        return PostgresStoreError(
            _ConnectFailureLog.isRefusedLogin(reason) ? .authenticationFailed : .connectionFailed,
            "Could not connect to listen for invalidations; the latest attempt failed: \(reason.prefix(1_000))",
            operation: "listen")
    }

    /// Starts listening when a stream is wanted and nobody listens; stops when none is.
    ///
    /// Whether a stream is wanted is read under the listener's lock, so that the
    /// decisions are taken in the order of the changes they see: a stream that
    /// starts as the last other one ends is never left with no listener by the
    /// ending stream's older decision.
    func sync() {
        state.withLock { $0.syncWillDecide }?()
        let hub = self.hub
        let cancelled = state.withLock { state -> Task<Void, Never>? in
            let wanted = hub.isWanted
            if wanted, state.loop == nil {
                state.loop = Task { await self.listen() }
            } else if !wanted, let loop = state.loop {
                state.loop = nil
                return loop
            }
            return nil
        }
        cancelled?.cancel()
    }

    /// For tests: `hook` runs in every later ``sync()``, before it decides.
    func setSyncWillDecide(_ hook: (@Sendable () -> Void)?) {
        state.withLock { $0.syncWillDecide = hook }
    }

    /// Stops listening and closes the connection.
    func shutdown() {
        let loop = state.withLock { state in
            defer { state.loop = nil }
            return state.loop
        }
        loop?.cancel()
        runner.cancel()
    }

    private func listen() async {
        var resumed = false
        var backoff = ReconnectBackoff(initial: initialDelay, maximum: maximumDelay)
        let hub = self.hub
        let channel = self.channel
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        // Attempts that failed before this connection was had leave a
                        // gap as a lost connection does.
                        let waited = self.connectFailures.reason != nil
                        self.connectFailures.clear()
                        hub.listening(resumed: resumed || waited)
                        self.state.withLock { $0.lastError = nil }
                        resumed = true
                        backoff.succeed()
                        for try await notification in notifications { hub.handle(notification.payload) }
                    }
                }
                if !Task.isCancelled {
                    state.withLock {
                        $0.lastError = PostgresStoreError(
                            .connectionClosed, "The listening connection closed.", operation: "listen")
                    }
                }
            } catch {
                // Kept for ``PostgresStore/invalidationError``; the loop tries again.
                let failure = PostgresStoreError(from: error, operation: "listen")
                state.withLock { $0.lastError = failure }
            }
            hub.stoppedListening()
            if Task.isCancelled { break }
            try? await Task.sleep(for: backoff.fail())
        }
    }
}
#endif
