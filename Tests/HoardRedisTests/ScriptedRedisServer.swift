#if Redis
import HoardRemoteTestSupport
import NIOCore
import NIOPosix

@testable import HoardRedis

/// A fake Redis server on a loopback port that answers each command as a test's
/// script says: with a given reply, or by closing the connection. It keeps every
/// command it received, in order. For replies a real server never sends and for
/// failures at a chosen command.
final class ScriptedRedisServer: Sendable {
    /// What the server does with one command.
    enum Action: Sendable {
        /// Sends this reply.
        case reply(_RESPValue)
        /// Closes the connection without answering this command or any after it.
        case close
    }

    private let channel: any Channel
    private let received: Locked<[[String]]>

    /// The loopback port it listens on.
    var port: Int { channel.localAddress!.port! }

    /// Every command received so far, as its words, in the order received.
    var commands: [[String]] { received.withLock { $0 } }

    /// Listens on a free loopback port, answering each command with `script(words)`.
    init(_ script: @escaping @Sendable (_ words: [String]) -> Action) async throws {
        let received = Locked<[[String]]>([])
        self.received = received
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(ScriptedHandler(script: script, received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// Stops listening.
    func close() async {
        try? await channel.close()
    }
}

/// Reads commands off one connection of a ``ScriptedRedisServer`` and answers them.
private final class ScriptedHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let script: @Sendable ([String]) -> ScriptedRedisServer.Action
    private let received: Locked<[[String]]>
    private var parser = _RESPParser()
    private var pending = ByteBuffer()

    init(script: @escaping @Sendable ([String]) -> ScriptedRedisServer.Action, received: Locked<[[String]]>) {
        self.script = script
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        do {
            while let command = try parser.next(from: &pending) {
                let words = command.elements?.compactMap(\.string) ?? []
                received.withLock { $0.append(words) }
                switch script(words) {
                case .reply(let reply):
                    var out = context.channel.allocator.buffer(capacity: 64)
                    reply.write(to: &out)
                    context.write(wrapOutboundOut(out), promise: nil)
                case .close:
                    context.flush()
                    context.close(promise: nil)
                    return
                }
            }
            pending.discardReadBytes()
            context.flush()
        } catch {
            // Not RESP: a real server would close the connection too.
            context.close(promise: nil)
        }
    }
}
#endif
