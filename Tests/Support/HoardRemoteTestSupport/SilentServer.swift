#if Redis || Postgres
import NIOCore
import NIOPosix

/// A TCP server on a loopback port that accepts connections, reads and never answers;
/// or, with `closesAtOnce`, closes every connection as soon as it has accepted it.
/// It counts the connections it accepted. For tests of time limits and lost servers.
public final class SilentServer: Sendable {
    private let channel: any Channel
    private let acceptedCount: Locked<Int>

    /// The loopback port it listens on.
    public var port: Int { channel.localAddress!.port! }

    /// How many connections the server has accepted so far.
    public var accepted: Int { acceptedCount.withLock { $0 } }

    /// Listens on a free loopback port.
    public init(closesAtOnce: Bool = false) async throws {
        let acceptedCount = Locked(0)
        self.acceptedCount = acceptedCount
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                acceptedCount.withLock { $0 += 1 }
                if closesAtOnce { child.close(promise: nil) }
                return child.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// Stops listening (the connections it accepted stay open until their peers close).
    public func close() async {
        try? await channel.close()
    }
}

/// A loopback port nothing listens on right now.
public func freePort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress!.port!
    try await channel.close()
    return port
}
#endif
