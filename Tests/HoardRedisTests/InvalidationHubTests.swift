#if Redis
import Hoard
import NIOCore
import Testing

@testable import HoardRedis

@Suite("Invalidation messages and resubscription")
struct InvalidationHubTests {
    private func message(_ kind: String, _ channel: ByteBuffer, _ payload: ByteBuffer) -> _RESPValue {
        .array([.bulkString(ByteBuffer(string: kind)), .bulkString(channel), .bulkString(payload)])
    }

    @Test("Messages from other instances become invalidations; this instance's own and malformed ones are dropped")
    func messages() async {
        let keyspace = _RedisKeyspace(prefix: "p")
        let channel = keyspace.channel(for: "ns")
        let mine = _InvalidationHub(instanceID: "me")
        let other = _InvalidationHub(instanceID: "them")
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        _ = mine.add(continuation, channel: channel)

        mine.handle(message("message", channel, mine.message(key: "own")))
        mine.handle(message("message", channel, other.message(key: "a:b c")))
        mine.handle(message("message", keyspace.channel(for: "elsewhere"), other.message(key: "x")))
        mine.handle(message("message", channel, ByteBuffer(string: "garbage")))
        mine.handle(message("message", channel, ByteBuffer(string: "them z")))
        mine.handle(
            .push([.bulkString(ByteBuffer(string: "message")), .bulkString(channel), .bulkString(other.messageAll())]))
        mine.finishAll()

        var received: [RemoteInvalidation] = []
        for await invalidation in stream { received.append(invalidation) }
        #expect(received == [.key("a:b c"), .all])
    }

    /// The payload `hub.writeMessage(keys:to:)` writes: the `PUBLISH` argument, as the
    /// server hands it to subscribers.
    private func payload(_ hub: _InvalidationHub, keys: [String]) throws -> ByteBuffer {
        var writer = _RESPCommandWriter(capacity: 8)
        writer.command("PUBLISH", argumentCount: 2)
        writer.argument("channel")
        hub.writeMessage(keys: keys, to: &writer)
        var parser = _RESPParser(limits: .init())
        var buffer = writer.buffer
        let command = try #require(try parser.next(from: &buffer)?.elements)
        #expect(buffer.readableBytes == 0, "the announced length is the written length")
        return try #require(command.last?.bytes)
    }

    @Test("A message naming many keys yields each, in order; one key is sent as the one-key message")
    func manyKeys() async throws {
        let channel = _RedisKeyspace(prefix: "p").channel(for: "ns")
        let mine = _InvalidationHub(instanceID: "me")
        let other = _InvalidationHub(instanceID: "them")
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        _ = mine.add(continuation, channel: channel)
        let keys = ["a", "", "12:x", "日本", String(repeating: "k", count: 1_234), "a"]

        #expect(try payload(other, keys: ["solo"]) == other.message(key: "solo"))
        mine.handle(message("message", channel, try payload(other, keys: keys)))
        mine.handle(message("message", channel, try payload(mine, keys: ["own", "keys"])))
        mine.finishAll()

        var received: [RemoteInvalidation] = []
        for await invalidation in stream { received.append(invalidation) }
        #expect(received == keys.map { .key($0) })
    }

    @Test(
        "A many-key message that is cut off or malformed anywhere yields nothing",
        arguments: [
            "them m", "them m1", "them m1:", "them m2:a", "them m1:a2:b", "them mx:a", "them m:a", "them m1a",
            "them m99999999999:a", "them m-1:a",
        ])
    func malformedManyKeys(payload: String) async {
        let channel = _RedisKeyspace(prefix: "p").channel(for: "ns")
        let mine = _InvalidationHub(instanceID: "me")
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        _ = mine.add(continuation, channel: channel)
        mine.handle(message("message", channel, ByteBuffer(string: payload)))
        mine.handle(message("message", channel, ByteBuffer(bytes: Array("them m1:".utf8) + [0xFF])))
        mine.finishAll()

        var received: [RemoteInvalidation] = []
        for await invalidation in stream { received.append(invalidation) }
        #expect(received.isEmpty)
    }

    @Test("Only a confirmation of a subscription marked as a resubscription yields .missed, once")
    func resubscription() async {
        let channel = _RedisKeyspace(prefix: "p").channel(for: "ns")
        let hub = _InvalidationHub(instanceID: "me")
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        _ = hub.add(continuation, channel: channel)
        let confirmation = _RESPValue.array([
            .bulkString(ByteBuffer(string: "subscribe")), .bulkString(channel), .integer(1),
        ])

        hub.handle(confirmation)  // the first subscription
        hub.handle(confirmation)  // a late duplicate: still not a resubscription
        hub.markResubscribing([channel])
        hub.handle(confirmation)  // after a reconnection
        hub.handle(confirmation)
        hub.finishAll()

        var received: [RemoteInvalidation] = []
        for await invalidation in stream { received.append(invalidation) }
        #expect(received == [.missed])
    }
}
#endif
