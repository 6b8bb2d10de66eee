import NIOCore
import NIOPosix

/// One TCP connection to a Redis server, authenticated and on its database, that
/// pipelines: any number of tasks may send commands at once, and each gets its own
/// reply (``_RedisCommandHandler`` matches them in order).
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

        var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    let channel: any Channel
    let settings: Settings

    private init(channel: any Channel, settings: Settings) {
        self.channel = channel
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
                    let decoder = ByteToMessageHandler(
                        _RESPDecoder(limits: limits),
                        maximumBufferSize: limits.maximumBulkLength + 2 * limits.maximumLineLength + 64)
                    try channel.pipeline.syncOperations.addHandler(decoder)
                    try channel.pipeline.syncOperations.addHandler(
                        _RedisCommandHandler(endpoint: endpoint, onPush: onPush))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: settings.host, port: settings.port).get()
        } catch {
            throw RedisError(.connectionFailed, "Could not connect to Redis at \(endpoint).", underlying: error)
        }
        let connection = _RedisConnection(channel: channel, settings: settings)
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
    /// - Parameter timeout: How long the reply may take; defaults to the settings'
    ///   command timeout.
    /// - Throws: ``RedisError`` with code `timeout`, `connectionClosed` or
    ///   `protocolError`.
    func send(_ command: _RedisCommand, timeout: Duration? = nil) async throws(RedisError) -> _RESPValue {
        let promise = channel.eventLoop.makePromise(of: _RESPValue.self)
        channel.writeAndFlush(
            _RedisRequest(command: command, reply: promise, timeout: timeAmount(timeout)),
            promise: writePromise(failing: promise, command: command))
        return try await Self.reply(promise.futureResult, command: command)
    }

    /// Sends several commands with one flush (one round trip) and returns their
    /// replies in order.
    ///
    /// - Throws: The first failure among the commands.
    func send(_ commands: [_RedisCommand], timeout: Duration? = nil) async throws(RedisError) -> [_RESPValue] {
        let amount = timeAmount(timeout)
        let futures = commands.map { command in
            let promise = channel.eventLoop.makePromise(of: _RESPValue.self)
            channel.write(
                _RedisRequest(command: command, reply: promise, timeout: amount),
                promise: writePromise(failing: promise, command: command))
            return promise.futureResult
        }
        channel.flush()
        var replies: [_RESPValue] = []
        replies.reserveCapacity(commands.count)
        for (future, command) in zip(futures, commands) {
            replies.append(try await Self.reply(future, command: command))
        }
        return replies
    }

    /// Sends commands that have no reply of their own (`SUBSCRIBE`, `UNSUBSCRIBE` on a
    /// subscriber connection), returning once they are written.
    func sendWithoutReply(_ commands: [_RedisCommand]) async throws(RedisError) {
        guard let last = commands.last else { return }
        for command in commands.dropLast() {
            channel.write(_RedisRequest(command: command, reply: nil, timeout: nil), promise: nil)
        }
        let flushed = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(_RedisRequest(command: last, reply: nil, timeout: nil), promise: flushed)
        do {
            try await flushed.futureResult.get()
        } catch {
            throw (error as? RedisError)
                ?? RedisError(
                    .connectionClosed, "Could not write to \(settings.endpoint).", command: commands.first?.name,
                    underlying: error)
        }
    }

    /// A promise for the write of `command` that fails `reply` when the write fails.
    ///
    /// Once a channel has closed, its handlers are gone: a write never reaches
    /// ``_RedisCommandHandler`` and only this promise learns of the failure.
    private func writePromise(
        failing reply: EventLoopPromise<_RESPValue>, command: _RedisCommand
    ) -> EventLoopPromise<Void> {
        let written = channel.eventLoop.makePromise(of: Void.self)
        let endpoint = settings.endpoint
        written.futureResult.whenFailure { error in
            reply.fail(
                (error as? RedisError)
                    ?? RedisError(
                        .connectionClosed, "The connection to \(endpoint) is closed; \(command.name) was not sent.",
                        command: command.name, underlying: error))
        }
        return written
    }

    private func timeAmount(_ timeout: Duration?) -> TimeAmount {
        TimeAmount(timeout ?? settings.commandTimeout)
    }

    private static func reply(
        _ future: EventLoopFuture<_RESPValue>, command: _RedisCommand
    ) async throws(RedisError) -> _RESPValue {
        do {
            return try await future.get()
        } catch let error as RedisError {
            throw error
        } catch {
            throw RedisError(.connectionClosed, "\(command.name) failed.", command: command.name, underlying: error)
        }
    }
}
