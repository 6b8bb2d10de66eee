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
        mine.handle(.push([.bulkString(ByteBuffer(string: "message")), .bulkString(channel), .bulkString(other.messageAll())]))
        mine.finishAll()

        var received: [RemoteInvalidation] = []
        for await invalidation in stream { received.append(invalidation) }
        #expect(received == [.key("a:b c"), .all])
    }

    @Test("Only a confirmation of a subscription marked as a resubscription yields .all, once")
    func resubscription() async {
        let channel = _RedisKeyspace(prefix: "p").channel(for: "ns")
        let hub = _InvalidationHub(instanceID: "me")
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        _ = hub.add(continuation, channel: channel)
        let confirmation = _RESPValue.array([.bulkString(ByteBuffer(string: "subscribe")), .bulkString(channel), .integer(1)])

        hub.handle(confirmation)  // the first subscription
        hub.handle(confirmation)  // a late duplicate: still not a resubscription
        hub.markResubscribing([channel])
        hub.handle(confirmation)  // after a reconnection
        hub.handle(confirmation)
        hub.finishAll()

        var received: [RemoteInvalidation] = []
        for await invalidation in stream { received.append(invalidation) }
        #expect(received == [.all])
    }
}
