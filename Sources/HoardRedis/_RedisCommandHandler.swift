#if Redis
import NIOCore

/// Writes the requests of one connection, parses the bytes that come back into
/// replies (``_RESPParser``), and matches the replies to the requests, in order, with
/// a timeout each.
///
/// Redis answers the commands of one connection in the order it received them, so a
/// connection can have any number of commands in flight (pipelining): the handler
/// keeps the waiting callers in a queue and resumes the oldest with each reply.
///
/// - ``submit(_:)`` writes a batch of requests and flushes once, so requests that
///   arrive together leave in one `write(2)`.
/// - A reply that does not arrive by its request's deadline fails that request with
///   ``RedisError/Code/timeout`` and closes the connection: every reply queued behind
///   the missing one would be just as late, and a reply that arrived after its
///   request gave up could no longer be matched. One timer per connection watches
///   the earliest deadline, so a request costs no timer of its own.
/// - When the connection closes, every request still waiting fails with
///   ``RedisError/Code/connectionClosed`` (or with the protocol error that closed
///   it), and so does every request submitted afterwards.
/// - Bytes that are not RESP, or a reply beyond the parser's limits, close the
///   connection with ``RedisError/Code/protocolError``; a reply cut off by the end of
///   the connection is dropped, and its request fails with `connectionClosed`.
/// - RESP3 pushes go to `onPush`; on a subscriber connection (one with an `onPush`)
///   any reply no command waits for does too. Elsewhere an unexpected reply is a
///   protocol error.
///
/// Everything runs on the channel's event loop; nothing blocks.
final class _RedisCommandHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Consumed bytes are dropped from the buffer of a partial reply once this many
    /// have piled up in front of it.
    private static let compactionThreshold = 16 << 10

    private struct Pending {
        var name: String
        var reply: _RedisReply
        var count: Int
        var timeout: TimeAmount?
        var deadline: NIODeadline?
    }

    private let endpoint: String
    private let onPush: (@Sendable (_RESPValue) -> Void)?
    private var parser: _RESPParser
    /// The start of a reply whose end has not arrived yet.
    private var partial: ByteBuffer?
    private var context: ChannelHandlerContext?
    private var pending = CircularBuffer<Pending>(initialCapacity: 16)
    /// The replies received so far for the first pending request, when it has
    /// several commands. Kept out of `pending` so that each reply is appended in place.
    private var collected: [_RESPValue] = []
    private var isClosed = false
    /// Why the connection is closing, when it is this handler's doing.
    private var closeReason: RedisError?
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?

    init(endpoint: String, limits: _RESPParser.Limits, onPush: (@Sendable (_RESPValue) -> Void)?) {
        self.endpoint = endpoint
        self.onPush = onPush
        parser = _RESPParser(limits: limits)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failPending()
        partial = nil
        self.context = nil
    }

    /// Writes `requests` in order and flushes once. Requests that can no longer be
    /// sent fail at once.
    func submit(_ requests: some Sequence<_RedisRequest>) {
        guard let context, !isClosed else {
            for request in requests {
                let error = closedError(command: request.name, waiting: 0)
                request.reply?.fail(error)
                request.written?.fail(error)
            }
            return
        }
        var now: NIODeadline?
        for request in requests {
            if let reply = request.reply {
                var deadline: NIODeadline?
                if let timeout = request.timeout {
                    let start = now ?? .now()
                    now = start
                    deadline = start + timeout
                    arm(deadline: start + timeout, context: context)
                }
                pending.append(
                    Pending(
                        name: request.name, reply: reply, count: request.count, timeout: request.timeout,
                        deadline: deadline))
            }
            context.write(wrapOutboundOut(request.encoded), promise: request.written)
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if var previous = partial {
            partial = nil  // so that `previous` is the only reference and grows in place
            previous.writeImmutableBuffer(buffer)
            buffer = previous
        }
        do {
            while !isClosed, let value = try parser.next(from: &buffer) {
                deliver(value, context: context)
            }
        } catch {
            close(context: context, reason: error)
            return
        }
        guard !isClosed, buffer.readableBytes > 0 else { return }
        if buffer.readerIndex >= Self.compactionThreshold { buffer.discardReadBytes() }
        partial = buffer
    }

    private func deliver(_ value: _RESPValue, context: ChannelHandlerContext) {
        if case .push = value {
            onPush?(value)
            return
        }
        guard !pending.isEmpty else {
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
        let first = pending.startIndex
        switch pending[first].reply {
        case .one(let continuation):
            pending.removeFirst()
            continuation.resume(returning: value)
        case .many(let continuation):
            let count = pending[first].count
            if collected.isEmpty { collected.reserveCapacity(count) }
            collected.append(value)
            if collected.count == count {
                pending.removeFirst()
                let replies = collected
                collected = []
                continuation.resume(returning: replies)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failPending()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason =
            (error as? RedisError)
            ?? RedisError(
                .connectionClosed, "The connection to \(endpoint) failed and was closed.", underlying: error)
        close(context: context, reason: reason)
    }

    // MARK: Timeouts

    /// Makes sure the timer fires by `deadline`.
    private func arm(deadline: NIODeadline, context: ChannelHandlerContext) {
        if let timerDeadline, timerDeadline <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.checkDeadlines(context: context)
        }
    }

    /// Fails the first request past its deadline, or re-arms the timer for the
    /// earliest deadline still ahead.
    private func checkDeadlines(context: ChannelHandlerContext) {
        timer = nil
        timerDeadline = nil
        guard !isClosed else { return }
        let now = NIODeadline.now()
        var earliest: NIODeadline?
        for index in pending.indices {
            guard let deadline = pending[index].deadline else { continue }
            if deadline <= now {
                timedOut(at: index, context: context)
                return
            }
            earliest = min(earliest ?? deadline, deadline)
        }
        if let earliest { arm(deadline: earliest, context: context) }
    }

    private func timedOut(at index: CircularBuffer<Pending>.Index, context: ChannelHandlerContext) {
        let entry = pending.remove(at: index)
        let milliseconds = (entry.timeout?.nanoseconds ?? 0) / 1_000_000
        // Close first, so that the connection is no longer active when the caller resumes.
        close(
            context: context,
            reason: RedisError(
                .connectionClosed,
                "The connection to \(endpoint) was closed because \(entry.name) timed out after \(milliseconds) ms; "
                    + "this command may or may not have been carried out."))
        entry.reply.fail(
            RedisError(
                .timeout,
                "The server at \(endpoint) did not answer \(entry.name) within \(milliseconds) ms; the connection was closed.",
                command: entry.name))
    }

    // MARK: Closing

    private func close(context: ChannelHandlerContext, reason: RedisError) {
        if closeReason == nil { closeReason = reason }
        failPending()
        context.close(promise: nil)
    }

    private func failPending() {
        isClosed = true
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        collected = []
        let waiting = pending.count
        while let entry = pending.popFirst() {
            entry.reply.fail(closedError(command: entry.name, waiting: waiting))
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
#endif
