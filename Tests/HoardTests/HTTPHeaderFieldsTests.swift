import Foundation
import Testing

@testable import Hoard

/// `HTTPHeaderFields.Field` values kept as the bytes they came with: UTF-8 text,
/// or obs-text (RFC 9110, section 5.5) as ISO-8859-1, in memory and as stored.
@Suite("HTTPHeaderFields: field values and their bytes")
struct HTTPHeaderFieldsTests {
    /// "café" with é as the Latin-1 byte 0xE9: not UTF-8.
    static let latin1 = Array("caf".utf8) + [0xE9]

    /// A field as every version of Hoard before ISO-8859-1 values encoded it.
    struct EarlierField: Codable, Equatable {
        var name: String
        var value: String
    }

    @Test("A field made from bytes keeps them: valid UTF-8 as text, any other bytes as ISO-8859-1")
    func fieldsFromBytes() {
        let utf8 = HTTPHeaderFields.Field(name: "X-Title", valueBytes: Array("café".utf8))
        #expect(utf8.valueEncoding == .utf8)
        #expect(utf8.value == "café")
        #expect(utf8 == HTTPHeaderFields.Field(name: "X-Title", value: "café"))

        let latin1 = HTTPHeaderFields.Field(name: "X-Title", valueBytes: Self.latin1)
        #expect(latin1.valueEncoding == .isoLatin1)
        #expect(latin1.value == "caf\u{E9}", "one character per byte, no U+FFFD")
        #expect(latin1.valueBytes == Self.latin1)
        #expect(latin1 != utf8, "the same text, other bytes")

        // A lone continuation byte, a byte that never starts UTF-8, and UTF-8 next
        // to a byte that is not: each byte kept.
        for bytes: [UInt8] in [[0x80], [0x61, 0xFF], Array("é".utf8) + [0xE9], [0xC3]] {
            let field = HTTPHeaderFields.Field(name: "X", valueBytes: bytes)
            #expect(field.valueEncoding == .isoLatin1)
            #expect(field.valueBytes == bytes)
            #expect(!field.value.contains("\u{FFFD}"))
        }

        let fields = HTTPHeaderFields([latin1, HTTPHeaderFields.Field(name: "Accept", value: "text/plain")])
        #expect(fields.values(for: "x-title") == ["caf\u{E9}"])
        #expect(fields["accept"] == "text/plain")

        var edited = latin1
        edited.value = "caf\u{E9}"
        #expect(edited.valueEncoding == .utf8, "text set is UTF-8 text")
        #expect(edited.valueBytes == Array("café".utf8))
    }

    @Test("As stored: a UTF-8 field is encoded as before, an ISO-8859-1 one keeps its bytes and has no value key")
    func storedForm() throws {
        // Sorted keys: JSONEncoder's key order is not the same from one process to
        // the next, for synthesized conformances too.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let utf8 = HTTPHeaderFields.Field(name: "Content-Type", value: "text/plain; charset=é")
        #expect(
            try encoder.encode(utf8)
                == encoder.encode(EarlierField(name: "Content-Type", value: "text/plain; charset=é")))
        let earlier = try encoder.encode(EarlierField(name: "ETag", value: "\"v1\""))
        #expect(
            try JSONDecoder().decode(HTTPHeaderFields.Field.self, from: earlier) == .init(name: "ETag", value: "\"v1\"")
        )

        let latin1 = HTTPHeaderFields.Field(name: "Content-Disposition", valueBytes: Self.latin1)
        let json = try encoder.encode(latin1)
        #expect(
            try JSONDecoder().decode([String: String].self, from: json).keys.sorted() == ["isoLatin1Value", "name"])
        let decoded = try JSONDecoder().decode(HTTPHeaderFields.Field.self, from: json)
        #expect(decoded == latin1)
        #expect(decoded.valueBytes == Self.latin1)
        #expect(
            throws: DecodingError.self, "an earlier version decodes no altered value: it finds none"
        ) { try JSONDecoder().decode(EarlierField.self, from: json) }

        let beyond = Data(#"{"name":"X","isoLatin1Value":"\u0100"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(HTTPHeaderFields.Field.self, from: beyond) }
        let neither = Data(#"{"name":"X"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(HTTPHeaderFields.Field.self, from: neither) }
    }

    @Test("A stored response decodes with its ISO-8859-1 fields' bytes")
    func storedResponses() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let headers = HTTPHeaderFields([
            HTTPHeaderFields.Field(
                name: "Content-Disposition", valueBytes: Array("attachment; filename=".utf8) + Self.latin1),
            HTTPHeaderFields.Field(name: "Set-Cookie", value: "a=1"),
            HTTPHeaderFields.Field(name: "Set-Cookie", valueBytes: [0x62, 0x3D, 0xFF]),
        ])
        let stored = HTTPStoredResponses(responses: [
            HTTPCachedResponse(
                url: try #require(URL(string: "https://origin.test/")), statusCode: 200, headers: headers,
                body: Data("body".utf8), requestTime: date, responseTime: date, isFromCache: true)
        ])
        let decoded = try HTTPStoredResponses(cacheData: stored.cacheEncoded())
        #expect(decoded == stored)
        #expect(decoded.responses[0].headers.map(\.valueBytes) == headers.map(\.valueBytes))
        #expect(decoded.responses[0].headers.map(\.valueEncoding) == [.isoLatin1, .utf8, .isoLatin1])
    }
}
