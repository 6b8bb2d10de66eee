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

    @Test(
        "A date of any year round-trips to the millisecond or fails to encode, never reads back as another date",
        arguments: [
            -62_135_596_800.0, -62_135_596_800.5, -30_000_000_000, -12_212_553_600.001, -12_212_553_600,
            -1, 0, 1_700_000_000.123, 253_402_300_799.999, 253_402_300_800, 1e13,
        ])
    func everyYearRoundTripsOrFails(secondsSince1970: Double) throws {
        let codec = ValueCodec<Date>.json
        let date = Date(timeIntervalSince1970: secondsSince1970)
        let encoded: Data
        do {
            encoded = try codec.encode(date)
        } catch {
            #expect(error.code == .encodingFailed, "\(error)")
            #expect(
                !(secondsSince1970 >= -12_212_553_600 && secondsSince1970 < 253_402_300_800),
                "years 1583 to 9999 encode")
            return
        }
        let decoded = try codec.decode(encoded)
        #expect(
            abs(decoded.timeIntervalSince1970 - secondsSince1970) < 0.0011,
            "\(secondsSince1970) read back as \(decoded.timeIntervalSince1970)")
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
