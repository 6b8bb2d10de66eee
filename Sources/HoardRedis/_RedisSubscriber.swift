#if Redis
import HoardNIOSupport
import NIOCore
import Synchronization

/// The dedicated pub/sub connection of a ``RedisStore``: keeps one `SUBSCRIBE` per
/// namespace that some ``RedisStore/invalidations(in:)`` stream watches, and
/// reconnects and resubscribes when the connection is lost.
///
/// With several endpoints (the nodes of a Redis Cluster, where a `PUBLISH` on any
/// node reaches the subscribers of every node), each attempt after a failure or a
/// lost connection tries the next one, so a failed node is left behind.
///
/// The connection opens when the first stream starts. When it closes, the subscriber
/// reconnects at once, then after `initialReconnectDelay`, doubling up to
/// `maximumReconnectDelay`, for as long as some stream is watching. Once the server
/// confirms a subscription made on a reconnected connection, or on a first
/// connection that came only after failed attempts, every stream of that namespace
/// receives `RemoteInvalidation.missed`, since changes made while it was away (or
/// while it waited) were not heard. (The mark is set by the subscriber, not
/// inferred from counting confirmations: a late confirmation of an earlier
/// subscription must not look like a resubscription.)
///
/// An error reply on the connection (the server refused a `SUBSCRIBE`: an ACL user
/// without the channel's permission, a proxy without pub/sub) leaves the
/// subscriptions unknown: it is logged, and the connection is closed and opened
/// again after the backoff for the unusable connections in a row, until the server
/// confirms a subscription.
///
/// A server that stops answering without closing the connection (frozen, or cut off
/// by a firewall or NAT that dropped the connection's state) is found by a health
/// check: `pingInterval` after the connection opens, and after each check, the
/// subscriber sends `PING` (allowed in subscribed mode; this RESP2 connection gets
/// `["pong", ""]` back there, `+PONG` outside it), and when nothing at all (the
/// answer, a message, a confirmation) arrives within `pingTimeout` of it, the
/// connection is logged as unanswered, counted as unusable and closed: its close
/// handler reconnects, and the resubscription reports `RemoteInvalidation.missed`.
/// A connection that stops answering is closed at most about `pingInterval` plus
/// `pingTimeout` after the last thing it received. With no `pingInterval` there is no
/// check (for a server that refuses `PING`, which would close the connection at every
/// check): the connection is replaced only once it closes.
actor _RedisSubscriber {
    private let endpoints: [_RedisConnection.Settings]
    /// The key prefix to ask the server to track (`CLIENT TRACKING … BCAST PREFIX`),
    /// when server-assisted invalidation is on.
    private let trackedPrefix: String?
    /// Whether this connection carries tracking invalidations only (one per primary
    /// of a cluster), not the namespaces' pub/sub channels.
    private let tracksOnly: Bool
    /// Whether the first tracking subscription, like every later one, reports
    /// `RemoteInvalidation.missed` (a tracker for a primary that took over from
    /// another: writes before it subscribed were not seen).
    private let reportsGapOnFirstConnection: Bool
    /// Called when the connection is lost and after each failed attempt to open it
    /// (a cluster tracker reads the slot map again: its node may have been replaced).
    private let onConnectionTrouble: (@Sendable () -> Void)?
    /// Connection attempts so far; attempt `n` goes to `endpoints[n % count]`.
    private var attempts = 0
    private let group: any EventLoopGroup
    private let hub: _InvalidationHub
    private let initialReconnectDelay: Duration
    private let maximumReconnectDelay: Duration
    /// How long the health check waits between the checks of a connection; `nil`
    /// for no health check.
    private let pingInterval: Duration?
    /// How long the health check waits after a `PING` for anything to arrive.
    private let pingTimeout: Duration
    private let log: _RedisLog
    private var connection: _RedisConnection?
    private var subscribed: Set<ByteBuffer> = []
    private var connectTask: Task<Void, Never>?
    /// The health check of `connection` (none without a `pingInterval`).
    private var healthTask: Task<Void, Never>?
    private var isShutdown = false
    /// Connections opened so far; every one after the first is a reconnection.
    private var connectionsOpened = 0
    /// Whether the next subscriptions are resubscriptions on a new connection.
    private var resubscribing = false
    /// The attempt that opened `connection`, to tell its replies from an older one's.
    private var connectionAttempt = 0
    /// Connections in a row that were unusable: the server answered with an error
    /// (refused a subscription) or left a `PING` unanswered, and confirmed no
    /// subscription since; the next connection waits out the backoff for them first.
    private var unusableConnections = 0

    init(
        endpoints: [_RedisConnection.Settings], trackedPrefix: String? = nil, tracksOnly: Bool = false,
        reportsGapOnFirstConnection: Bool = false, onConnectionTrouble: (@Sendable () -> Void)? = nil,
        group: any EventLoopGroup, hub: _InvalidationHub,
        initialReconnectDelay: Duration, maximumReconnectDelay: Duration,
        pingInterval: Duration?, pingTimeout: Duration, log: _RedisLog
    ) {
        self.log = log
        precondition(!endpoints.isEmpty, "a subscriber needs an endpoint")
        self.endpoints = endpoints
        self.trackedPrefix = trackedPrefix
        self.tracksOnly = tracksOnly
        self.reportsGapOnFirstConnection = reportsGapOnFirstConnection
        self.onConnectionTrouble = onConnectionTrouble
        self.group = group
        self.hub = hub
        self.initialReconnectDelay = initialReconnectDelay
        self.maximumReconnectDelay = maximumReconnectDelay
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
    }

    /// Subscribes to the channels the hub wants and unsubscribes from the others,
    /// connecting first when needed.
    func sync() async {
        guard !isShutdown else { return }
        let watched = hub.wantedChannels
        var wanted = tracksOnly ? [] : watched
        if trackedPrefix != nil, !watched.isEmpty { wanted.insert(_InvalidationHub.trackingChannel) }
        guard let connection, connection.isActive else {
            if !wanted.isEmpty, connectTask == nil {
                connectTask = Task { await self.connectLoop() }
            }
            return
        }
        let toSubscribe = wanted.subtracting(subscribed)
        let toUnsubscribe = subscribed.subtracting(wanted)
        guard !toSubscribe.isEmpty || !toUnsubscribe.isEmpty else { return }
        subscribed = wanted
        if tracksOnly, toSubscribe.contains(_InvalidationHub.trackingChannel),
            resubscribing || (reportsGapOnFirstConnection && connectionsOpened == 1)
        {
            // Marked before SUBSCRIBE goes out, so that its confirmation finds the mark.
            hub.expectTrackingGap()
            resubscribing = false
        }
        if resubscribing {
            // Marked before SUBSCRIBE goes out, so that its confirmation finds the mark.
            hub.markResubscribing(toSubscribe)
            resubscribing = false
            log.log(
                .notice, "resubscribed to invalidations: changes made while away are reported as possibly missed",
                operation: "subscribe")
        }
        var commands: [_RedisCommand] = []
        if !toSubscribe.isEmpty {
            commands.append(_RedisCommand("SUBSCRIBE", arguments: toSubscribe.map { .bytes($0) }))
        }
        if !toUnsubscribe.isEmpty {
            commands.append(_RedisCommand("UNSUBSCRIBE", arguments: toUnsubscribe.map { .bytes($0) }))
        }
        // A failed write means the connection is closing; its close handler reconnects.
        try? await connection.sendWithoutReply(commands)
    }

    /// Closes the connection, stops reconnecting and finishes every stream (or, for
    /// a tracker of a node that left the cluster, leaves them to the others).
    func shutdown(finishingStreams: Bool = true) {
        isShutdown = true
        connectTask?.cancel()
        connectTask = nil
        healthTask?.cancel()
        healthTask = nil
        connection?.close()
        connection = nil
        if finishingStreams { hub.finishAll() }
    }

    private func connectLoop() async {
        var failures = 0
        if unusableConnections > 0 {
            // The server refused the last connection's subscriptions or left it
            // unanswered: not at once again.
            try? await Task.sleep(
                for: ReconnectBackoff.delay(
                    afterFailures: unusableConnections, initial: initialReconnectDelay,
                    maximum: maximumReconnectDelay))
        }
        while !isShutdown, !Task.isCancelled, !hub.wantedChannels.isEmpty {
            do {
                let hub = self.hub
                let settings = endpoints[attempts % endpoints.count]
                attempts += 1
                let attempt = attempts
                let traffic = _SubscriberTraffic()
                let connection = try await _RedisConnection.connect(
                    settings: settings, group: group,
                    onPush: { [weak self] value in
                        traffic.received.add(1, ordering: .relaxed)
                        if let message = value.errorMessage {
                            guard let self else { return }
                            Task { await self.refused(message, attempt: attempt) }
                            return
                        }
                        if let self, value.elements?.first?.isString(equalToLowercaseASCII: "subscribe") == true {
                            Task { await self.accepted(attempt: attempt) }
                        }
                        hub.handle(value)
                    })
                guard !isShutdown else {
                    connection.close()
                    break
                }
                if let trackedPrefix { try await startTracking(on: connection, prefix: trackedPrefix) }
                self.connection = connection
                connectionAttempt = attempt
                subscribed = []
                connectionsOpened += 1
                // A reconnection, or a first connection that came only after failed
                // attempts: changes made meanwhile went unheard either way.
                resubscribing = connectionsOpened > 1 || failures > 0
                connection.closeFuture.whenComplete { _ in
                    Task { await self.connectionClosed(connection) }
                }
                healthTask?.cancel()
                healthTask = pingInterval.map { interval in
                    Task {
                        await self.checkHealth(of: connection, attempt: attempt, traffic: traffic, every: interval)
                    }
                }
                connectTask = nil
                await sync()
                return
            } catch {
                failures += 1
                log.log(.warning, "could not connect to Redis for invalidations", operation: "subscribe", error: error)
                onConnectionTrouble?()
                try? await Task.sleep(
                    for: ReconnectBackoff.delay(
                        afterFailures: failures, initial: initialReconnectDelay, maximum: maximumReconnectDelay))
            }
        }
        connectTask = nil
    }

    /// Asks the server to send this connection an invalidation, on
    /// `__redis__:invalidate`, for every write by any client to a key that starts
    /// with `<prefix>:` (`CLIENT TRACKING on REDIRECT <own id> BCAST PREFIX`), before
    /// the connection subscribes to anything.
    ///
    /// - Throws: The server's refusal (a server older than Redis 6, say), which closes
    ///   the connection; the connect loop tries again with backoff.
    private func startTracking(on connection: _RedisConnection, prefix: String) async throws(RedisError) {
        let id = try await connection.send(_RedisCommand("CLIENT", "ID"))
        guard case .integer(let clientID) = id else {
            connection.close()
            throw RedisError(
                .protocolError, "CLIENT ID was answered with \(id), not an integer.", command: "CLIENT",
                serverMessage: id.errorMessage)
        }
        let reply = try await connection.send(
            _RedisCommand(
                "CLIENT", "TRACKING", "on", "REDIRECT", .string(String(clientID)), "BCAST", "PREFIX",
                .string(prefix + ":")))
        if let message = reply.errorMessage {
            connection.close()
            throw RedisError(
                .serverError,
                "The server refused CLIENT TRACKING, which server-assisted invalidation needs: \(message)",
                command: "CLIENT", serverMessage: message)
        }
    }

    /// The server answered the connection of `attempt` with an error: the reply to
    /// a `SUBSCRIBE` (or `UNSUBSCRIBE`) it refused, so which channels are subscribed
    /// is unknown. Logged, and the connection closed: its close handler opens a new
    /// one after the backoff.
    private func refused(_ message: String, attempt: Int) {
        guard !isShutdown, attempt == connectionAttempt, let connection else { return }
        unusableConnections += 1
        log.log(
            .warning, "the server refused to subscribe to invalidations; trying again after the reconnect delay",
            operation: "subscribe",
            error: RedisError(
                .serverError, "The server answered the invalidation connection with an error: \(message)",
                command: "SUBSCRIBE", serverMessage: message))
        connection.close()
    }

    /// The server confirmed a subscription on the connection of `attempt`.
    private func accepted(attempt: Int) {
        if attempt == connectionAttempt { unusableConnections = 0 }
    }

    /// Sends `PING` on `connection` (of `attempt`) `interval` after it opened and
    /// after each check, and closes it when nothing arrives on it within
    /// `pingTimeout` of one. Ends when the
    /// connection is replaced or closes, or the subscriber shuts down.
    private func checkHealth(
        of connection: _RedisConnection, attempt: Int, traffic: _SubscriberTraffic, every interval: Duration
    ) async {
        while true {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return  // Cancelled: the connection closed, or the subscriber shut down.
            }
            guard !isShutdown, attempt == connectionAttempt, connection.isActive else { return }
            let before = traffic.received.load(ordering: .relaxed)
            do {
                try await connection.sendWithoutReply([_RedisCommand("PING")])
            } catch {
                return  // The connection is closing; its close handler logs it and reconnects.
            }
            do {
                try await Task.sleep(for: pingTimeout)
            } catch {
                return  // Cancelled: the connection closed, or the subscriber shut down.
            }
            guard !isShutdown, attempt == connectionAttempt, connection.isActive else { return }
            if traffic.received.load(ordering: .relaxed) == before {
                unanswered(connection)
                return
            }
        }
    }

    /// Nothing arrived on `connection` within `pingTimeout` of a `PING`: the server
    /// or the path to it is gone while the connection looks open. Logged, and the
    /// connection closed: its close handler opens a new one after the backoff for
    /// the unusable connections in a row (a server that keeps accepting connections
    /// but never answers is tried less and less often).
    private func unanswered(_ connection: _RedisConnection) {
        unusableConnections += 1
        log.log(
            .warning,
            "the invalidation connection to Redis did not answer PING within \(pingTimeout); reconnecting",
            operation: "subscribe",
            error: RedisError(
                .timeout,
                "The server at \(connection.settings.endpoint) sent nothing on the invalidation connection "
                    + "within \(pingTimeout) of a PING; the connection was closed.",
                command: "PING"))
        connection.close()
    }

    /// Whether a health check watches the current connection.
    var checksHealth: Bool { healthTask != nil }

    private func connectionClosed(_ closed: _RedisConnection) {
        guard connection === closed else { return }
        healthTask?.cancel()
        healthTask = nil
        if !isShutdown {
            log.log(.warning, "the invalidation connection to Redis closed; reconnecting", operation: "subscribe")
            onConnectionTrouble?()
        }
        connection = nil
        subscribed = []
        if !isShutdown, connectTask == nil, !hub.wantedChannels.isEmpty {
            connectTask = Task { await self.connectLoop() }
        }
    }
}

/// What a subscriber connection has received so far: counted on its event loop for
/// every message, confirmation and answer, read by the health check.
private final class _SubscriberTraffic: Sendable {
    let received = Atomic<Int>(0)
}
#endif
