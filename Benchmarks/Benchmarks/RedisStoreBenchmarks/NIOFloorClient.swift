import NIOCore
import NIOPosix

/// A reference point between RedisStore and the raw socket: the least a SwiftNIO
/// client called from Swift tasks can do. Each request hops onto the event loop,
/// writes prepared bytes and flushes, and its task resumes once as many bytes as its
/// reply holds have arrived: no pool, no encoding, no parsing, no copy. What it
/// costs beyond the raw client is the price of the architecture RedisStore shares
/// (a task on the concurrency pool, I/O on an event loop thread); what RedisStore
/// costs beyond it is RedisStore's own.
final class NIOFloorClient: Sendable {
    private let channel: any Channel
    private let counter: NIOLoopBound<ReplyCounter>

    private init(channel: any Channel, counter: NIOLoopBound<ReplyCounter>) {
        self.channel = channel
        self.counter = counter
    }

    static func connect(host: String, port: Int) async throws -> NIOFloorClient {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ReplyCounter()) }
            }
            .connect(host: host, port: port).get()
        let counter = try await channel.eventLoop.submit {
            NIOLoopBound(
                try channel.pipeline.syncOperations.handler(type: ReplyCounter.self), eventLoop: channel.eventLoop)
        }.get()
        return NIOFloorClient(channel: channel, counter: counter)
    }

    /// Writes `command` and returns once `replyLength` more bytes have arrived.
    func send(_ command: ByteBuffer, replyLength: Int) async throws {
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            channel.eventLoop.execute {
                self.counter.value.expect(replyLength, continuation)
                self.channel.writeAndFlush(command, promise: nil)
            }
        }
    }

    func close() async {
        try? await channel.close()
    }
}

/// Resumes the waiting requests, in order, as the bytes of their replies arrive.
final class ReplyCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var waiting = CircularBuffer<(length: Int, continuation: UnsafeContinuation<Void, any Error>)>()
    private var received = 0
    private var isClosed = false

    func expect(_ length: Int, _ continuation: UnsafeContinuation<Void, any Error>) {
        guard !isClosed else { return continuation.resume(throwing: BenchmarkFailure("bare NIO: connection closed")) }
        waiting.append((length, continuation))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        while let first = waiting.first, received >= first.length {
            received -= first.length
            waiting.removeFirst().continuation.resume()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        while let entry = waiting.popFirst() {
            entry.continuation.resume(throwing: BenchmarkFailure("bare NIO: connection closed"))
        }
        context.fireChannelInactive()
    }
}

@available(*, unavailable)
extension ReplyCounter: Sendable {}
