import Foundation
import NIOCore
import NIOPosix

/// The floor under any PostgreSQL client in Swift on these machines: the store's get
/// statement (`PostgresFixture`'s table, namespace and keys) sent over a bare
/// SwiftNIO channel in the PostgreSQL wire protocol, written by hand. It prepares
/// the statement once, then sends `Bind`/`Execute`/`Sync` for a random key, counts
/// the `DataRow`, and sends the next get from the channel handler as soon as
/// `ReadyForQuery` arrives: no library, no pool, no task or future per statement.
///
/// What it costs beyond pgbench is the price of SwiftNIO itself on these machines;
/// what postgres-nio costs beyond it is the library's; what the store costs beyond
/// postgres-nio is the store's. It speaks only what the throwaway benchmark server
/// needs: protocol 3.0 with `trust` authentication (anything else fails the
/// benchmark, saying so).
final class RawPostgresClient: Sendable {
    private let channel: any Channel
    private let handler: NIOLoopBound<RawPostgresHandler>

    private init(channel: any Channel, handler: NIOLoopBound<RawPostgresHandler>) {
        self.channel = channel
        self.handler = handler
    }

    /// Connects on `eventLoop`, logs in and prepares the get statement.
    static func connect(
        host: String, port: Int, user: String, database: String, on eventLoop: any EventLoop
    ) async throws -> RawPostgresClient {
        let ready = eventLoop.makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: eventLoop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        RawPostgresHandler(user: user, database: database, ready: ready))
                }
            }
            .connect(host: host, port: port).get()
        try await ready.futureResult.get()
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(
                try channel.pipeline.syncOperations.handler(type: RawPostgresHandler.self), eventLoop: channel.eventLoop
            )
        }.get()
        return RawPostgresClient(channel: channel, handler: handler)
    }

    /// Runs `count` gets one after another and returns when the last one's row has
    /// arrived; throws when a get found no row of 1 KiB or the server failed one.
    func runGets(_ count: Int) async throws {
        try await channel.eventLoop.flatSubmit { self.handler.value.run(count) }.get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// The protocol for ``RawPostgresClient``: startup, one `Parse`, then gets.
final class RawPostgresHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase { case startingUp, preparing, idle, running }

    static let statementName = "raw_get"

    private let user: String
    private let database: String
    private var ready: EventLoopPromise<Void>?
    private var phase = Phase.startingUp
    private var inbound = ByteBuffer()
    private var remaining = 0
    private var rows = 0
    private var expected = 0
    private var done: EventLoopPromise<Void>?
    private var context: ChannelHandlerContext?

    init(user: String, database: String, ready: EventLoopPromise<Void>) {
        self.user = user
        self.database = database
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelActive(context: ChannelHandlerContext) {
        var body = ByteBuffer()
        body.writeInteger(Int32(196_608))  // protocol 3.0
        for field in ["user", user, "database", database] { body.writeNullTerminated(field) }
        body.writeInteger(UInt8(0))
        var message = ByteBuffer()
        message.writeInteger(Int32(body.readableBytes + 4))
        message.writeBuffer(&body)
        context.writeAndFlush(wrapOutboundOut(message), promise: nil)
    }

    /// Starts `count` gets; the future succeeds when the last row has arrived.
    func run(_ count: Int) -> EventLoopFuture<Void> {
        guard let context else { preconditionFailure("run(_:) before the handler was added") }
        guard phase == .idle, count > 0 else {
            return context.eventLoop.makeFailedFuture(BenchmarkFailure("raw client: not ready"))
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        done = promise
        remaining = count
        expected = count
        rows = 0
        phase = .running
        sendGet(context: context)
        return promise.futureResult
    }

    private func sendGet(context: ChannelHandlerContext) {
        var out = context.channel.allocator.buffer(capacity: 128)
        let key = PostgresFixture.key(Int.random(in: 0..<PostgresFixture.keyCount))
        let micros = Int64(((Date().timeIntervalSince1970 - 946_684_800) * 1_000_000).rounded())
        Self.message("B", into: &out) { bind in
            bind.writeNullTerminated("")  // the unnamed portal
            bind.writeNullTerminated(Self.statementName)
            bind.writeMultipleIntegers(Int16(1), Int16(1))  // every parameter in binary
            bind.writeInteger(Int16(3))
            bind.writeInteger(Int32(PostgresFixture.namespace.utf8.count))
            bind.writeString(PostgresFixture.namespace)
            bind.writeInteger(Int32(key.utf8.count))
            bind.writeString(key)
            bind.writeMultipleIntegers(Int32(8), micros)
            bind.writeMultipleIntegers(Int16(1), Int16(1))  // every result column in binary
        }
        Self.message("E", into: &out) { execute in
            execute.writeNullTerminated("")
            execute.writeInteger(Int32(0))
        }
        Self.message("S", into: &out) { _ in }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        inbound.writeBuffer(&bytes)
        while inbound.readableBytes >= 5,
            let length = inbound.getInteger(at: inbound.readerIndex + 1, as: Int32.self),
            inbound.readableBytes >= Int(length) + 1
        {
            let type = inbound.readInteger(as: UInt8.self)!
            var body = inbound.readSlice(length: Int(length))!
            body.moveReaderIndex(forwardBy: 4)
            handle(type, body: &body, context: context)
        }
        inbound.discardReadBytes()
    }

    private func handle(_ type: UInt8, body: inout ByteBuffer, context: ChannelHandlerContext) {
        switch (type, phase) {
        case (UInt8(ascii: "R"), .startingUp):
            if body.readInteger(as: Int32.self) != 0 {
                fail(
                    "the server asks for a password; the raw client speaks only trust authentication", context: context)
            }
        case (UInt8(ascii: "Z"), .startingUp):
            phase = .preparing
            var out = context.channel.allocator.buffer(capacity: 256)
            Self.message("P", into: &out) { parse in
                parse.writeNullTerminated(Self.statementName)
                parse.writeNullTerminated(GetStatement.sql)
                parse.writeInteger(Int16(0))  // parameter types as the server infers them
            }
            Self.message("S", into: &out) { _ in }
            context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        case (UInt8(ascii: "Z"), .preparing):
            phase = .idle
            ready?.succeed()
            ready = nil
        case (UInt8(ascii: "D"), .running):
            // A row: its column count, then the first column's length, 1 KiB.
            if body.readInteger(as: Int16.self) == 3, body.readInteger(as: Int32.self) == 1_024 { rows += 1 }
        case (UInt8(ascii: "Z"), .running):
            remaining -= 1
            if remaining > 0 { return sendGet(context: context) }
            phase = .idle
            let promise = done
            done = nil
            if rows == expected {
                promise?.succeed()
            } else {
                promise?.fail(BenchmarkFailure("raw client: \(rows) rows of 1 KiB for \(expected) gets"))
            }
        case (UInt8(ascii: "E"), _):
            fail("the server failed: \(String(buffer: body))", context: context)
        default:
            break
        }
    }

    private func fail(_ message: String, context: ChannelHandlerContext) {
        let error = BenchmarkFailure(message)
        ready?.fail(error)
        ready = nil
        done?.fail(error)
        done = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail("raw client: connection closed", context: context)
        context.fireChannelInactive()
    }

    /// Appends a message of `type` whose body `write` writes, with its length.
    private static func message(_ type: Character, into out: inout ByteBuffer, _ write: (inout ByteBuffer) -> Void) {
        out.writeInteger(type.asciiValue!)
        let lengthIndex = out.writerIndex
        out.writeInteger(Int32(0))
        write(&out)
        out.setInteger(Int32(out.writerIndex - lengthIndex), at: lengthIndex)
    }
}

@available(*, unavailable)
extension RawPostgresHandler: Sendable {}

/// A benchmark that cannot go on: the server is away or answered something else.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ByteBuffer {
    fileprivate mutating func writeNullTerminated(_ string: String) {
        writeString(string)
        writeInteger(UInt8(0))
    }
}
