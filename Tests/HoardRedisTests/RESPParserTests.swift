#if Redis
import Foundation
import NIOCore
import Testing

@testable import HoardRedis

@Suite("RESP parser and encoder")
struct RESPParserTests {
    private func parse(_ text: String, limits: _RESPParser.Limits = .init()) throws(RedisError) -> _RESPValue? {
        var parser = _RESPParser(limits: limits)
        var buffer = ByteBuffer(string: text)
        return try parser.next(from: &buffer)
    }

    private func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test("Every RESP2 and RESP3 reply type decodes")
    func everyType() throws {
        let cases: [(String, _RESPValue)] = [
            ("+OK\r\n", .simpleString("OK")),
            ("+\r\n", .simpleString("")),
            ("-ERR unknown command\r\n", .error("ERR unknown command")),
            (":0\r\n", .integer(0)),
            (":-9223372036854775808\r\n", .integer(.min)),
            (":+42\r\n", .integer(42)),
            ("$5\r\nhe\r\no\r\n", .bulkString(bytes("he\r\no"))),
            ("$0\r\n\r\n", .bulkString(bytes(""))),
            ("$-1\r\n", .bulkString(nil)),
            ("*-1\r\n", .array(nil)),
            ("*0\r\n", .array([])),
            ("*2\r\n:1\r\n$1\r\na\r\n", .array([.integer(1), .bulkString(bytes("a"))])),
            ("_\r\n", .null),
            (",3.25\r\n", .double(3.25)),
            (",-1.5e10\r\n", .double(-1.5e10)),
            (",10\r\n", .double(10)),
            (",inf\r\n", .double(.infinity)),
            (",-inf\r\n", .double(-.infinity)),
            ("#t\r\n", .boolean(true)),
            ("#f\r\n", .boolean(false)),
            ("!21\r\nSYNTAX invalid syntax\r\n", .blobError(bytes("SYNTAX invalid syntax"))),
            ("=15\r\ntxt:Some string\r\n", .verbatimString(format: "txt", text: bytes("Some string"))),
            ("=4\r\nmkd:\r\n", .verbatimString(format: "mkd", text: bytes(""))),
            (
                "(3492890328409238509324850943850943825024385\r\n",
                .bigNumber("3492890328409238509324850943850943825024385")
            ),
            ("(-12\r\n", .bigNumber("-12")),
            (
                "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
                .map([
                    .init(key: .simpleString("first"), value: .integer(1)),
                    .init(key: .simpleString("second"), value: .integer(2)),
                ])
            ),
            ("%0\r\n", .map([])),
            ("~3\r\n:1\r\n:2\r\n#f\r\n", .set([.integer(1), .integer(2), .boolean(false)])),
            (
                "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2039\r\n",
                .attribute(
                    [
                        .init(
                            key: .simpleString("key-popularity"),
                            value: .map([.init(key: .bulkString(bytes("a")), value: .double(0.19))]))
                    ],
                    .array([.integer(2039)]))
            ),
            ("|0\r\n:7\r\n", .attribute([], .integer(7))),
            (
                ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
                .push([.bulkString(bytes("message")), .bulkString(bytes("ch")), .bulkString(bytes("hello"))])
            ),
            ("*2\r\n*1\r\n_\r\n*-1\r\n", .array([.array([.null]), .array(nil)])),
        ]
        for (text, expected) in cases {
            #expect(try parse(text) == expected, "\(text.debugDescription)")
            // Encoding gives back the canonical bytes (the two non-canonical inputs aside).
            if ![":+42\r\n", ",-1.5e10\r\n", ",10\r\n"].contains(text) {
                #expect(String(buffer: expected.encoded) == text, "\(text.debugDescription)")
            }
        }
        let nan = try parse(",nan\r\n")
        guard case .double(let value) = nan else {
            Issue.record("nan did not decode as a double")
            return
        }
        #expect(value.isNaN)
    }

    @Test("A reply split at every byte decodes only once it is complete; several replies in one buffer decode in order")
    func partialFrames() throws {
        let frame = "*3\r\n$5\r\nhello\r\n%1\r\n+k\r\n,1.5\r\n>2\r\n#t\r\n_\r\n"
        var parser = _RESPParser()
        var buffer = ByteBuffer()
        let bytes = Array(frame.utf8)
        for (index, byte) in bytes.enumerated() {
            buffer.writeInteger(byte)
            let value = try parser.next(from: &buffer)
            if index < bytes.count - 1 {
                #expect(value == nil, "complete after \(index + 1) of \(bytes.count) bytes")
            } else {
                #expect(
                    value
                        == .array([
                            .bulkString(self.bytes("hello")),
                            .map([.init(key: .simpleString("k"), value: .double(1.5))]),
                            .push([.boolean(true), .null]),
                        ]))
            }
        }
        #expect(buffer.readableBytes == 0)
        #expect(!parser.isMidReply)

        var two = ByteBuffer(string: ":1\r\n$2\r\nab\r\n+tail")
        #expect(try parser.next(from: &two) == .integer(1))
        #expect(try parser.next(from: &two) == .bulkString(self.bytes("ab")))
        #expect(try parser.next(from: &two) == nil)
        #expect(two.readableBytes == 5, "an incomplete line stays in the buffer")
    }

    @Test("A large array arriving in pieces is consumed element by element (linear, not re-parsed)")
    func largeArrayIsConsumedIncrementally() throws {
        var parser = _RESPParser()
        var buffer = ByteBuffer(string: "*10000\r\n")
        #expect(try parser.next(from: &buffer) == nil)
        #expect(parser.isMidReply)
        #expect(buffer.readableBytes == 0)
        var earlyValues = 0
        var leftBehind = 0
        for index in 0..<9_999 {
            buffer.writeString("$\(String(index).utf8.count)\r\n\(index)\r\n")
            if try parser.next(from: &buffer) != nil { earlyValues += 1 }
            leftBehind += buffer.readableBytes
        }
        #expect(earlyValues == 0)
        #expect(leftBehind == 0, "every complete element is consumed at once")
        buffer.writeString("$4\r\n9999\r")
        #expect(try parser.next(from: &buffer) == nil)
        #expect(buffer.readableBytes == 9, "the incomplete element waits in the buffer")
        buffer.writeString("\n")
        let value = try parser.next(from: &buffer)
        #expect(value?.elements?.count == 10_000)
        #expect(value?.elements?.last?.string == "9999")
    }

    @Test("Commands encode as arrays of bulk strings, binary-safe")
    func commandEncoding() {
        let command = _RedisCommand("SET", "key", .bytes(ByteBuffer(bytes: [0x00, 0x0D, 0x0A, 0xFF])), "PX", "100")
        #expect(command.name == "SET")
        #expect(
            Array(command.encoded.readableBytesView) == Array("*5\r\n$3\r\nSET\r\n$3\r\nkey\r\n$4\r\n".utf8) + [
                0x00, 0x0D, 0x0A, 0xFF,
            ] + Array("\r\n$2\r\nPX\r\n$3\r\n100\r\n".utf8))
        #expect(String(buffer: _RedisCommand("PING").encoded) == "*1\r\n$4\r\nPING\r\n")
        #expect(String(buffer: _RedisCommand("GET", "é").encoded) == "*2\r\n$3\r\nGET\r\n$2\r\né\r\n")
    }

    @Test("A bulk argument written longer or shorter than announced traps instead of writing past its room")
    func bulkOfTheWrongLengthTraps() async {
        await #expect(processExitsWith: .failure) {
            var writer = _RESPCommandWriter(capacity: 8)
            writer.bulk(length: 2) { $0.write("abc") }
        }
        await #expect(processExitsWith: .failure) {
            var writer = _RESPCommandWriter(capacity: 8)
            writer.bulk(length: 4) { $0.write("abc") }
        }
    }

    @Test("Commands written in place (keys, entry values, invalidations) are the bytes the argument-list encoder gives")
    func commandWriter() throws {
        let keyspace = _RedisKeyspace(prefix: "app")
        let hub = _InvalidationHub(instanceID: "instance-1")
        let storedAt = Date(timeIntervalSince1970: 1_700_000_000.123)
        let data = Data([0x00, 0x0D, 0x0A, 0xFF] + Array("é:*".utf8))
        for (namespace, key) in [
            ("ns", "k"), ("", ""), ("a:b", "c:d"), ("é", "日本"), (String(repeating: "n", count: 300), "x"),
        ] {
            var writer = _RESPCommandWriter(capacity: 8)
            writer.command("SET", argumentCount: 4)
            keyspace.writeKey(key, in: namespace, to: &writer)
            _RedisEntryFormat.write(data, storedAt: storedAt, expiresAt: nil, to: &writer)
            writer.argument("PX")
            writer.argument("1500")
            writer.command("PUBLISH", argumentCount: 2)
            keyspace.writeChannel(for: namespace, to: &writer)
            hub.writeMessage(key: key, to: &writer)

            let expected =
                _RedisCommand(
                    "SET", .bytes(keyspace.key(key, in: namespace)),
                    .bytes(_RedisEntryFormat.encode(data, storedAt: storedAt, expiresAt: nil)), "PX", "1500"
                ).encoded.readableBytesView
                + _RedisCommand("PUBLISH", .bytes(keyspace.channel(for: namespace)), .bytes(hub.message(key: key)))
                .encoded.readableBytesView
            #expect(Array(writer.buffer.readableBytesView) == Array(expected), "\(namespace) \(key)")
            #expect(writer.commandCount == 2)
        }
    }

    @Test(
        "Garbage and malformed frames throw a protocol error",
        arguments: [
            "?\r\n", "\r\n", "x", ":12a\r\n", ":\r\n", ":-\r\n", ":99999999999999999999\r\n",
            ":9223372036854775808\r\n",
            "$-2\r\n", "$abc\r\n", "$3\r\nabcd\r\n", "$3\r\nabc\n\n", "*-2\r\n", "%-1\r\n", "~-1\r\n", ">-1\r\n",
            "!-1\r\n", "=-1\r\n", "=3\r\ntxt\r\n", "=5\r\ntxt-x\r\n", "#x\r\n", "#tt\r\n", "_x\r\n", ",\r\n",
            ",1.2.3\r\n",
            ",0x10\r\n", ",e\r\n", "(\r\n", "(12a\r\n", "(-\r\n", "+ok\rX", "$?\r\n", "*?\r\n",
        ])
    func garbageThrows(text: String) {
        #expect(throws: RedisError.self) { _ = try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.code == .protocolError)
        }
    }

    @Test("Limits: bulk length, depth, element count and line length are enforced before data arrives")
    func limits() throws {
        var limits = _RESPParser.Limits()
        limits.maximumBulkLength = 10
        limits.maximumDepth = 3
        limits.maximumElements = 5
        limits.maximumLineLength = 16

        // A huge declared length fails at once, without waiting for (or buffering) the payload.
        #expect(throws: RedisError.self) { _ = try parse("$11\r\n", limits: limits) }
        #expect(throws: RedisError.self) { _ = try parse("!11\r\n", limits: limits) }
        #expect(throws: RedisError.self) { _ = try parse("$9223372036854775807\r\n") }
        #expect(try parse("$10\r\n0123456789\r\n", limits: limits) == .bulkString(bytes("0123456789")))

        #expect(try parse("*1\r\n*1\r\n*1\r\n:1\r\n", limits: limits) == .array([.array([.array([.integer(1)])])]))
        #expect(throws: RedisError.self) { _ = try parse("*1\r\n*1\r\n*1\r\n*1\r\n", limits: limits) }
        #expect(throws: RedisError.self) { _ = try parse(String(repeating: "*1\r\n", count: 100_000)) }
        #expect(throws: RedisError.self) { _ = try parse(String(repeating: "|1\r\n", count: 33)) }

        #expect(throws: RedisError.self) { _ = try parse("*6\r\n", limits: limits) }
        #expect(throws: RedisError.self) { _ = try parse("%6\r\n", limits: limits) }
        #expect(throws: RedisError.self) { _ = try parse("*99999999999\r\n") }

        #expect(
            try parse("+" + String(repeating: "a", count: 16) + "\r\n", limits: limits)
                == .simpleString(String(repeating: "a", count: 16)))
        #expect(throws: RedisError.self) {
            _ = try parse("+" + String(repeating: "a", count: 17) + "\r\n", limits: limits)
        }
        // A line with no end is refused once it is longer than the limit, not buffered forever.
        #expect(throws: RedisError.self) { _ = try parse("+" + String(repeating: "a", count: 40), limits: limits) }
        #expect(try parse("+" + String(repeating: "a", count: 10), limits: limits) == nil)
    }

    @Test("A push's kind is matched without decoding it, as lowercasing its text matched it")
    func kindMatching() {
        let texts = [
            "subscribe", "SUBSCRIBE", "SubScribe", "subscribes", "subscrib", "", "message", "MESSAGE", "Message",
            "m3ssage", "ſubscribe", "SUBSCRİBE", "ＳＵＢＳＣＲＩＢＥ", "subscribe\u{0}", "subscrib\u{C5}",
        ]
        var values: [_RESPValue] = [.bulkString(nil), .integer(1), .array([.bulkString(bytes("subscribe"))])]
        for text in texts {
            values += [
                .bulkString(bytes(text)), .simpleString(text), .verbatimString(format: "txt", text: bytes(text)),
                .attribute([], .bulkString(bytes(text))),
            ]
        }
        values.append(.bulkString(ByteBuffer(bytes: [0x53, 0x55, 0x42, 0x53, 0x43, 0x52, 0x49, 0x42, 0xC5])))
        for value in values {
            for kind: StaticString in ["subscribe", "message"] {
                let lowercased = value.string?.lowercased() == "\(kind)"
                #expect(value.isString(equalToLowercaseASCII: kind) == lowercased, "\(value) against \(kind)")
            }
        }
        #expect(_RESPValue.bulkString(bytes("SUBSCRIBE")).isString(equalToLowercaseASCII: "subscribe"))
        #expect(_RESPValue.simpleString("Message").isString(equalToLowercaseASCII: "message"))
    }
}
#endif
