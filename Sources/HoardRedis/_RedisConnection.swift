#if Redis
import HoardNIOSupport
import NIOCore
import NIOPosix
import Synchronization

/// One TCP connection to a Redis server, authenticated and on its database, that
/// pipelines: any number of tasks may send commands at once, and each gets its own
/// reply (``_RedisCommandHandler`` matches them in order). Commands are queued and
/// written by one task on the event loop, which takes everything queued so far and
/// flushes once: under load, many commands leave in one write.
///
/// A connection never reconnects; once it closes, every send fails and its owner (the
/// pool or the subscriber) opens a new one.
final class _RedisConnection: Sendable {
    /// Where and how to connect.
    struct Settings: Sendable {
        var host: String
        var port: Int
        var username: String?
        var password: String?
        var database: Int
        var connectTimeout: Duration
        var commandTimeout: Duration
        var limits: _RESPParser.Limits

        var endpoint: String { ServerAddress(host: host, port: port).description }
    }

    let channel: any Channel
    let settings: Settings
    private let handler: NIOLoopBound<_RedisCommandHandler>
    /// Requests waiting to be written, handed to the event loop in batches.
    private let outbox = Mutex(LoopBatch<_RedisRequest>())

    private init(channel: any Channel, handler: NIOLoopBound<_RedisCommandHandler>, settings: Settings) {
        self.channel = channel
        self.handler = handler
        self.settings = settings
    }

    /// Opens a connection, then authenticates (`AUTH`) and selects the database
    /// (`SELECT`) when the settings ask for it, pipelined in one round trip.
    ///
    /// - Parameters:
    ///   - settings: Where and how to connect.
    ///   - group: The event loops to run on.
    ///   - onPush: Receives pub/sub messages; given only for a subscriber connection.
    /// - Throws: ``RedisError/Code/connectionFailed`` when the server cannot be
    ///   reached in time; ``RedisError/Code/authenticationFailed`` when it refuses
    ///   the credentials or the database.
    static func connect(
        settings: Settings,
        group: any EventLoopGroup,
        onPush: (@Sendable (_RESPValue) -> Void)? = nil
    ) async throws(RedisError) -> _RedisConnection {
        let endpoint = settings.endpoint
        let limits = settings.limits
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(TimeAmount(settings.connectTimeout))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        _RedisCommandHandler(endpoint: endpoint, limits: limits, onPush: onPush))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: settings.host, port: settings.port).get()
        } catch {
            throw RedisError(.connectionFailed, "Could not connect to Redis at \(endpoint).", underlying: error)
        }
        let handler: NIOLoopBound<_RedisCommandHandler>
        do {
            handler = try await channel.eventLoop.submit {
                NIOLoopBound(
                    try channel.pipeline.syncOperations.handler(type: _RedisCommandHandler.self),
                    eventLoop: channel.eventLoop)
            }.get()
        } catch {
            channel.close(mode: .all, promise: nil)
            throw RedisError(
                .connectionClosed, "The connection to \(endpoint) closed while it was set up.", underlying: error)
        }
        let connection = _RedisConnection(channel: channel, handler: handler, settings: settings)
        do {
            try await connection.handshake()
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    private func handshake() async throws(RedisError) {
        var commands: [_RedisCommand] = []
        if let password = settings.password {
            if let username = settings.username {
                commands.append(_RedisCommand("AUTH", .string(username), .string(password)))
            } else {
                commands.append(_RedisCommand("AUTH", .string(password)))
            }
        }
        if settings.database != 0 {
            commands.append(_RedisCommand("SELECT", .string(String(settings.database))))
        }
        guard !commands.isEmpty else { return }
        let replies = try await send(commands)
        for (command, reply) in zip(commands, replies) {
            if let message = reply.errorMessage {
                let what =
                    command.name == "AUTH"
                    ? "refused the \(settings.username == nil ? "password" : "username and password")"
                    : "refused database \(settings.database)"
                throw RedisError(
                    .authenticationFailed, "The Redis server at \(settings.endpoint) \(what): \(message)",
                    command: command.name, serverMessage: message)
            }
        }
    }

    /// Whether the connection is open.
    var isActive: Bool { channel.isActive }

    /// Completes when the connection has closed, for whatever reason.
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Closes the connection; commands in flight fail with
    /// ``RedisError/Code/connectionClosed``.
    func close() {
        channel.close(mode: .all, promise: nil)
    }

    /// Sends one command and returns its reply, which may be an error reply.
    ///
    /// The command is written without waiting for the replies of commands sent
    /// before it; commands sent together, from any number of tasks, leave in one
    /// write.
    ///
    /// - Parameter timeout: How long the reply may take; defaults to the settings'
    ///   command timeout.
    /// - Throws: ``RedisError`` with code `timeout`, `connectionClosed` or
    ///   `protocolError`.
    func send(_ command: _RedisCommand, timeout: Duration? = nil) async throws(RedisError) -> _RESPValue {
        let amount = timeAmount(timeout)
        do {
            return try await withUnsafeThrowingContinuation { continuation in
                enqueue(
                    _RedisRequest(
                        encoded: command.encoded, name: command.name, count: 1, reply: .one(continuation),
                        timeout: amount))
            }
        } catch {
            throw Self.redisError(error, command: command.name)
        }
    }

    /// Sends several commands in one write (one round trip) and returns their
    /// replies in order.
    ///
    /// - Throws: ``RedisError`` with code `timeout`, `connectionClosed` or
    ///   `protocolError`, naming the first command.
    func send(_ commands: [_RedisCommand], timeout: Duration? = nil) async throws(RedisError) -> [_RESPValue] {
        guard let first = commands.first else { return [] }
        if commands.count == 1 { return [try await send(first, timeout: timeout)] }
        var encoded = ByteBuffer()
        encoded.reserveCapacity(commands.reduce(0) { $0 + $1.encoded.readableBytes })
        for command in commands { encoded.writeImmutableBuffer(command.encoded) }
        return try await send(encoded: encoded, count: commands.count, name: first.name, timeout: timeout)
    }

    /// Sends `count` commands already encoded back to back in `encoded`, in one write,
    /// and returns their replies in order.
    func send(
        encoded: ByteBuffer, count: Int, name: String, timeout: Duration? = nil
    ) async throws(RedisError) -> [_RESPValue] {
        let amount = timeAmount(timeout)
        do {
            return try await withUnsafeThrowingContinuation { continuation in
                enqueue(
                    _RedisRequest(
                        encoded: encoded, name: name, count: count, reply: .many(continuation), timeout: amount))
            }
        } catch {
            throw Self.redisError(error, command: name)
        }
    }

    /// Sends commands that have no reply of their own (`SUBSCRIBE`, `UNSUBSCRIBE` on a
    /// subscriber connection), returning once they are written.
    func sendWithoutReply(_ commands: [_RedisCommand]) async throws(RedisError) {
        guard let first = commands.first else { return }
        var encoded = ByteBuffer()
        for command in commands { encoded.writeImmutableBuffer(command.encoded) }
        let written = channel.eventLoop.makePromise(of: Void.self)
        enqueue(
            _RedisRequest(
                encoded: encoded, name: first.name, count: commands.count, reply: nil, timeout: nil, written: written))
        do {
            try await written.futureResult.get()
        } catch {
            throw (error as? RedisError)
                ?? RedisError(
                    .connectionClosed, "Could not write to \(settings.endpoint).", command: first.name,
                    underlying: error)
        }
    }

    // MARK: Writing in batches

    /// Queues `request` for the event loop; the first request of a batch schedules the
    /// task that writes the whole batch with one flush.
    private func enqueue(_ request: _RedisRequest) {
        let schedule = outbox.withLock { $0.append(request) }
        if schedule {
            channel.eventLoop.execute { self.drain() }
        }
    }

    /// Writes every queued request and flushes once. On the event loop.
    private func drain() {
        var batch = outbox.withLock { $0.take() }
        handler.value.submit(batch)
        outbox.withLock { $0.recycle(&batch) }
    }

    private func timeAmount(_ timeout: Duration?) -> TimeAmount {
        TimeAmount(timeout ?? settings.commandTimeout)
    }

    private static func redisError(_ error: any Error, command: String) -> RedisError {
        (error as? RedisError)
            ?? RedisError(.connectionClosed, "\(command) failed.", command: command, underlying: error)
    }
}
#endif
