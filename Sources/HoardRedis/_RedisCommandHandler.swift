import NIOCore

/// Matches replies to the commands of one connection, in order, with a timeout each.
///
/// Redis answers the commands of one connection in the order it received them, so a
/// connection can have any number of commands in flight (pipelining): the handler
/// keeps their promises in a queue and completes the oldest with each reply.
///
/// - A reply that does not arrive within its command's timeout fails that command
///   with ``RedisError/Code/timeout`` and closes the connection: every reply queued
///   behind the missing one would be just as late, and a reply that arrived after its
///   command gave up could no longer be matched.
/// - When the connection closes, every command still waiting fails with
///   ``RedisError/Code/connectionClosed`` (or with the protocol error that closed it).
/// - RESP3 pushes go to `onPush`; on a subscriber connection (one with an `onPush`)
///   any reply no command waits for does too. Elsewhere an unexpected reply is a
///   protocol error.
///
/// Everything runs on the channel's event loop; nothing blocks.
final class _RedisCommandHandler: ChannelDuplexHandler {
    typealias InboundIn = _RESPValue
    typealias OutboundIn = _RedisRequest
    typealias OutboundOut = ByteBuffer

    private struct Pending {
        var id: UInt64
        var command: String
        var promise: EventLoopPromise<_RESPValue>
        var timeout: Scheduled<Void>?
    }

    private let endpoint: String
    private let onPush: (@Sendable (_RESPValue) -> Void)?
    private var pending = CircularBuffer<Pending>(initialCapacity: 16)
    private var nextID: UInt64 = 0
    private var isClosed = false
    /// Why the connection is closing, when it is this handler's doing.
    private var closeReason: RedisError?

    init(endpoint: String, onPush: (@Sendable (_RESPValue) -> Void)?) {
        self.endpoint = endpoint
        self.onPush = onPush
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        guard !isClosed else {
            let error = closedError(command: request.command.name, waiting: 0)
            request.reply?.fail(error)
            promise?.fail(error)
            return
        }
        if let reply = request.reply {
            let id = nextID
            nextID &+= 1
            var timeout: Scheduled<Void>?
            if let delay = request.timeout {
                timeout = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                    self.timedOut(id: id, after: delay, context: context)
                }
            }
            pending.append(Pending(id: id, command: request.command.name, promise: reply, timeout: timeout))
        }
        context.write(wrapOutboundOut(request.command.encoded), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let value = unwrapInboundIn(data)
        if case .push = value {
            onPush?(value)
            return
        }
        guard let first = pending.popFirst() else {
            if let onPush {
                onPush(value)
            } else {
                close(
                    context: context,
                    reason: RedisError(
                        .protocolError, "The server at \(endpoint) sent a reply that no command was waiting for."))
            }
            return
        }
        first.timeout?.cancel()
        first.promise.succeed(value)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failPending()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failPending()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason =
            (error as? RedisError)
            ?? RedisError(
                .connectionClosed, "The connection to \(endpoint) failed and was closed.", underlying: error)
        close(context: context, reason: reason)
    }

    // MARK: Closing

    private func timedOut(id: UInt64, after delay: TimeAmount, context: ChannelHandlerContext) {
        guard let index = pending.firstIndex(where: { $0.id == id }) else { return }
        let command = pending[index].command
        let milliseconds = delay.nanoseconds / 1_000_000
        pending[index].promise.fail(
            RedisError(
                .timeout,
                "The server at \(endpoint) did not answer \(command) within \(milliseconds) ms; the connection was closed.",
                command: command))
        close(
            context: context,
            reason: RedisError(
                .connectionClosed,
                "The connection to \(endpoint) was closed because \(command) timed out after \(milliseconds) ms; "
                    + "this command may or may not have been carried out."))
    }

    private func close(context: ChannelHandlerContext, reason: RedisError) {
        if closeReason == nil { closeReason = reason }
        failPending()
        context.close(promise: nil)
    }

    private func failPending() {
        isClosed = true
        let waiting = pending.count
        while let entry = pending.popFirst() {
            entry.timeout?.cancel()
            entry.promise.fail(closedError(command: entry.command, waiting: waiting))
        }
    }

    private func closedError(command: String, waiting: Int) -> RedisError {
        if let closeReason {
            return RedisError(
                closeReason.code, closeReason.message, command: command, serverMessage: closeReason.serverMessage,
                underlying: closeReason.underlying)
        }
        let inFlight = waiting > 1 ? " with \(waiting) commands in flight" : ""
        return RedisError(
            .connectionClosed,
            "The connection to \(endpoint) closed\(inFlight); the command may or may not have been carried out.",
            command: command)
    }
}

@available(*, unavailable)
extension _RedisCommandHandler: Sendable {}
