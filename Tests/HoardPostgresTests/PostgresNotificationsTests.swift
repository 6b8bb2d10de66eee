#if Postgres
import Foundation
import Hoard
import Testing

@testable import HoardPostgres

@Suite("PostgresStore notification payloads")
struct PostgresNotificationsTests {
    let sender = _PostgresNotifications(instanceID: "sender")
    let receiver = _PostgresNotifications(instanceID: "receiver")

    @Test("Keys and namespaces of any text, NUL and backslashes included, survive the payload")
    func roundTrip() {
        let cases: [(String, String)] = [
            ("users", "alice"), ("", ""), ("a:b", "c:d"), ("name space", "key with spaces"),
            ("nul\0ns", "k\0\0ey"), ("back\\slash", "\\0 not a nul"), ("日本", "ключ 🔑"), ("7:", "12:x"),
        ]
        for (namespace, key) in cases {
            let payload = sender.payload(key: key, in: namespace)
            #expect(!payload.utf8.contains(0), "payloads are valid PostgreSQL text")
            let decoded = receiver.decode(payload)
            #expect(decoded?.namespace == namespace && decoded?.invalidation == .key(key), "\(namespace) / \(key)")
            let all = receiver.decode(sender.payloadAll(in: namespace))
            #expect(all?.namespace == namespace && all?.invalidation == .all)
        }
    }

    @Test(
        "A key whose payload would pass 8000 bytes is announced as its namespace cleared; a huge namespace as everything"
    )
    func longKeys() {
        let fits = String(repeating: "k", count: 7_999 - "sender k 5:users".utf8.count)
        #expect(sender.payload(key: fits, in: "users").utf8.count == 7_999)
        #expect(receiver.decode(sender.payload(key: fits, in: "users"))?.invalidation == .key(fits))

        let tooLong = fits + "k"
        let payload = sender.payload(key: tooLong, in: "users")
        #expect(payload.utf8.count < 8_000)
        #expect(receiver.decode(payload)?.namespace == "users")
        #expect(receiver.decode(payload)?.invalidation == .all)

        // Escaping doubles backslashes: the limit counts the escaped bytes.
        let escaped = String(repeating: "\\", count: 4_000)
        #expect(receiver.decode(sender.payload(key: escaped, in: "users"))?.invalidation == .all)

        let hugeNamespace = String(repeating: "n", count: 9_000)
        let everything = sender.payload(key: "k", in: hugeNamespace)
        #expect(everything.utf8.count < 8_000)
        #expect(receiver.decode(everything)?.namespace == nil)
        #expect(receiver.decode(everything)?.invalidation == .all)
    }

    @Test("A store ignores its own payloads and payloads not in the format")
    func ignored() {
        #expect(sender.decode(sender.payload(key: "k", in: "ns")) == nil)
        #expect(sender.decode(sender.payloadAll(in: "ns")) == nil)
        for garbage in [
            "", "x", "other", "other ", "other k", "other k ", "other k 3", "other k 3:ab", "other k x:abc",
            "other q 2:nskey", "other a 2:nsextra", "other A trailing", "other k 2:ns\\q", "other k 9999999:x",
        ] {
            #expect(receiver.decode(garbage) == nil, "\(garbage)")
        }
    }

    @Test("Notifications reach the streams of their namespace; everything reaches all; resuming yields .missed")
    func routing() async {
        let hub = _PostgresNotifications(instanceID: "me")
        let (users, usersContinuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        let (orders, ordersContinuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        #expect(hub.add(usersContinuation, namespace: "users") != nil)
        let ordersID = hub.add(ordersContinuation, namespace: "orders")
        #expect(hub.isWanted)

        hub.handle(sender.payload(key: "alice", in: "users"))
        hub.handle(sender.payloadAll(in: "orders"))
        hub.handle("sender A")
        hub.listening(resumed: false)
        #expect(hub.isListening)
        hub.listening(resumed: true)
        hub.handle(hub.payload(key: "mine", in: "users"))
        hub.remove(id: ordersID!, namespace: "orders")
        hub.handle(sender.payload(key: "late", in: "orders"))
        hub.finishAll()
        #expect(!hub.isListening)

        var seenByUsers: [RemoteInvalidation] = []
        for await invalidation in users { seenByUsers.append(invalidation) }
        #expect(seenByUsers == [.key("alice"), .all, .missed])
        var seenByOrders: [RemoteInvalidation] = []
        ordersContinuation.finish()
        for await invalidation in orders { seenByOrders.append(invalidation) }
        #expect(seenByOrders == [.all, .all, .missed])

        let (late, lateContinuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        #expect(hub.add(lateContinuation, namespace: "users") == nil)
        for await _ in late { Issue.record("a stream added after shutdown must be finished") }
    }
}
#endif
