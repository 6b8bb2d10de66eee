#if Redis
import NIOCore
import Testing

@testable import HoardRedis

@Suite("Redis key and channel names")
struct RedisKeyspaceTests {
    let keyspace = _RedisKeyspace(prefix: "hoard")

    @Test("Keys are <prefix>:<namespace byte count>:<namespace>:<key>")
    func layout() {
        #expect(String(buffer: keyspace.key("c", in: "a:b")) == "hoard:3:a:b:c")
        #expect(String(buffer: keyspace.key("", in: "")) == "hoard:0::")
        #expect(String(buffer: keyspace.key("k", in: "é")) == "hoard:2:é:k")
        #expect(String(buffer: keyspace.channel(for: "a:b")) == "hoard:invalidate:3:a:b")
    }

    @Test("Pairs that naive joining confuses get distinct keys")
    func naiveCollisionsAreDistinct() {
        let pairs: [(String, String)] = [
            ("a:b", "c"), ("a", "b:c"), ("a:b:c", ""), ("", "a:b:c"), ("1:a", "b"), ("1", "a:b"), ("10:", "x"),
            ("a\u{0}", "b"), ("a", "\u{0}b"),
        ]
        let keys = Set(pairs.map { keyspace.key($0.1, in: $0.0) })
        #expect(keys.count == pairs.count)
    }

    @Test("The mapping is injective: every key parses back to its own namespace and key")
    func injective() {
        var random = SeededRandom(seed: 42)
        let alphabet: [Character] = [":", "1", "0", "a", "é", "\u{0}", "*", "[", "\\", " ", "🦊"]
        func text() -> String { String((0..<random.int(0..<8)).map { _ in alphabet[random.int(0..<alphabet.count)] }) }
        var seen: [ByteBuffer: String] = [:]
        for _ in 0..<5_000 {
            let namespace = text()
            let key = text()
            let redisKey = keyspace.key(key, in: namespace)
            let parsed = keyspace.parse(redisKey)
            #expect(
                parsed?.namespace == namespace && parsed?.key == key,
                "\(namespace.debugDescription) \(key.debugDescription)")
            let identity = "\(namespace.unicodeScalars.map { $0.value })|\(key.unicodeScalars.map { $0.value })"
            if let other = seen[redisKey] { #expect(other == identity) }
            seen[redisKey] = identity
        }
        #expect(keyspace.parse(ByteBuffer(string: "other:1:a:b")) == nil)
        #expect(keyspace.parse(ByteBuffer(string: "hoard:5:a:b")) == nil)
        #expect(keyspace.parse(ByteBuffer(string: "hoard:x:a:b")) == nil)
    }

    @Test("A namespace pattern escapes glob characters and ends in *")
    func pattern() {
        #expect(String(buffer: keyspace.namespacePattern("ns")) == "hoard:2:ns:*")
        #expect(String(buffer: keyspace.namespacePattern("a*?[]\\")) == #"hoard:6:a\*\?\[\]\\:*"#)
        #expect(String(buffer: _RedisKeyspace(prefix: "p[1]").namespacePattern("")) == #"p\[1\]:0::*"#)
    }

    @Test("A keyspace with the namespace as a hash tag writes braces, parses back, and matches only its namespace")
    func taggedNamespace() {
        let tagged = _RedisKeyspace(prefix: "app", namespaceTagged: true)
        #expect(String(buffer: tagged.key("k:1", in: "users")) == "app:5:{users}:k:1")
        var writer = _RESPCommandWriter(capacity: 64)
        tagged.writeKey("k:1", in: "users", to: &writer)
        #expect(String(buffer: writer.buffer).hasSuffix("$17\r\napp:5:{users}:k:1\r\n"))
        for (namespace, key) in [("users", "k:1"), ("", ""), ("a}b", "{x}"), ("{", ":")] {
            let parsed = tagged.parse(tagged.key(key, in: namespace))
            #expect(parsed?.namespace == namespace && parsed?.key == key)
        }
        // A key of the other layout is not one of this keyspace, and the other way round
        #expect(tagged.parse(keyspace.key("k", in: "users")) == nil)
        #expect(_RedisKeyspace(prefix: "app").parse(tagged.key("k", in: "users")) == nil)
        #expect(String(buffer: tagged.namespacePattern("users")) == "app:5:{users}:*")
    }
}
#endif
