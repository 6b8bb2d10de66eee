#if Postgres
import Hoard
import HoardNIOSupport
import PostgresNIO
import Synchronization

/// The store's `LISTEN` connection: one connection of its own (a one-connection
/// postgres-nio client), listening on the store's channel while some invalidation
/// stream is wanted, reopened with backoff whenever it is lost.
final class _PostgresListener: Sendable {
    private struct State {
        var loop: Task<Void, Never>?
        var lastError: PostgresStoreError?
    }

    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let hub: _PostgresNotifications
    private let channel: String
    private let initialDelay: Duration
    private let maximumDelay: Duration
    private let state = Mutex(State())

    init(
        client: PostgresClient, hub: _PostgresNotifications, channel: String, initialDelay: Duration,
        maximumDelay: Duration
    ) {
        self.client = client
        self.hub = hub
        self.channel = channel
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        runner = Task { await client.run() }
    }

    /// Why listening last failed; `nil` once it listens again.
    var lastError: PostgresStoreError? { state.withLock { $0.lastError } }

    /// Starts listening when a stream is wanted and nobody listens; stops when none is.
    func sync() {
        let wanted = hub.isWanted
        let cancelled = state.withLock { state -> Task<Void, Never>? in
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
                        hub.listening(resumed: resumed)
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
