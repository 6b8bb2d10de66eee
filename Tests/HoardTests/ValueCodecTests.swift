import Foundation
import Hoard
import Testing

@Suite("ValueCodec")
struct ValueCodecTests {
    struct User: Codable, Sendable, Equatable {
        var name: String
        var joined: Date
    }

    @Test("Codable values round-trip through JSON with ISO-8601 dates")
    func codableRoundTrip() throws {
        let codec = try ValueCodec<User>.automatic()
        let user = User(name: "Ada", joined: Date(timeIntervalSince1970: 1_700_000_000.25))
        let bytes = try codec.encode(user)
        let text = try #require(String(data: bytes, encoding: .utf8))
        #expect(text.contains("2023-11-14T22:13:20.250Z"))
        #expect(try codec.decode(bytes) == user)
    }

    @Test("Dates without fractional seconds decode too")
    func plainISODates() throws {
        let json = Data(#"{"name":"Bo","joined":"2023-11-14T22:13:20Z"}"#.utf8)
        let user = try ValueCodec<User>.json.decode(json)
        #expect(user.joined == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test("Data and String pass through without JSON")
    func passThrough() throws {
        let bytes = Data([0, 1, 2, 255])
        #expect(try ValueCodec<Data>.automatic().encode(bytes) == bytes)
        #expect(try ValueCodec<String>.automatic().encode("héllo") == Data("héllo".utf8))
        #expect(try ValueCodec<String>.automatic().decode(Data("héllo".utf8)) == "héllo")
    }

    struct Pixels: CacheValue, Equatable {
        var bytes: [UInt8]
        func cacheEncoded() throws -> Data { Data([0xAB] + bytes) }
        init(bytes: [UInt8]) { self.bytes = bytes }
        init(cacheData: Data) throws {
            guard cacheData.first == 0xAB else { throw HoardError(.decodingFailed, "missing magic byte") }
            bytes = Array(cacheData.dropFirst())
        }
        var cacheCost: Int { bytes.count * 4 }
    }

    @Test("A CacheValue type supplies its own encoding, decoding and cost")
    func customCacheValue() throws {
        let codec = try ValueCodec<Pixels>.automatic()
        let value = Pixels(bytes: [1, 2, 3])
        #expect(try codec.encode(value) == Data([0xAB, 1, 2, 3]))
        #expect(try codec.decode(Data([0xAB, 9])) == Pixels(bytes: [9]))

        let cache = try MemoryCache<String, Pixels>()
        cache["p"] = value
        #expect(cache.totalCost == 12)
    }

    @Test("Undecodable bytes throw decodingFailed, never trap")
    func badBytesThrow() throws {
        let garbage = Data([0xFF, 0xFE, 0x00, 0x7B])
        #expect(throws: HoardError.self) { try ValueCodec<User>.json.decode(garbage) }
        #expect(throws: HoardError.self) { try ValueCodec<String>.automatic().decode(Data([0xC3, 0x28])) }
        #expect(throws: HoardError.self) { try ValueCodec<Pixels>.automatic().decode(Data([1, 2])) }
        do {
            _ = try ValueCodec<User>.json.decode(Data(#"{"name":"x","joined":"yesterday"}"#.utf8))
            Issue.record("decoding a bad date should throw")
        } catch {
            #expect(error.code == .decodingFailed)
            #expect(error.underlying != nil)
            #expect(error.description.contains("User"))
        }
    }

    final class NotCodable: Sendable {}

    @Test("A type with no codec is a clear error")
    func noCodec() {
        #expect(throws: HoardError.self) { try ValueCodec<NotCodable>.automatic() }
    }
}
