#if HTTPTypes
import Foundation
import HTTPTypes
import HoardHTTPTypes
import Synchronization
import Testing

@testable import Hoard

/// Field values with obs-text (bytes 0x80–0xFF that are not UTF-8, which RFC 9110,
/// section 5.5 allows) through the swift-http-types bridge and the cache: the
/// client and the origin receive exactly the bytes that were sent, first from the
/// origin and later from storage, and validators and `Vary` compare those bytes.
@Suite("HTTP response cache with swift-http-types: obs-text field values", .timeLimit(.minutes(3)))
struct HTTPTypesObsTextTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let url = URL(string: "https://origin.test/files/1")!

    /// `text` with every `%` made the byte `byte`: `latin1("caf%", 0xE9)` is
    /// "café" in ISO-8859-1, which is not UTF-8.
    static func latin1(_ text: String, _ byte: UInt8 = 0xE9) -> [UInt8] {
        text.utf8.map { $0 == UInt8(ascii: "%") ? byte : $0 }
    }

    /// The bytes of a field's value, as swift-http-types keeps them.
    static func bytes(_ field: HTTPField) -> [UInt8] {
        field.withUnsafeBytesOfValue { Array($0) }
    }

    /// Each field as its name and the bytes of its value, in order, leaving out
    /// `Age` (which a response from storage gains).
    static func wire(_ fields: HTTPFields) -> [String] {
        fields.filter { $0.name != .age }.map { "\($0.name.rawName): \(bytes($0))" }
    }

    /// The bytes of the first field named `name`.
    static func value(_ fields: HTTPFields, _ name: HTTPField.Name) -> [UInt8]? {
        fields.first { $0.name == name }.map(bytes)
    }

    static func cache(
        _ clock: ManualClock, _ transport: HTTPTypesTransport, remote: InMemoryRemoteStore? = nil
    ) throws -> HTTPResponseCache {
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-obs-text")
        storage.localStores = .none
        if let remote { storage.remoteStores = [remote] }
        return try HTTPResponseCache(configuration: .init(storage: storage), transport: transport, clock: clock)
    }

    /// What an `HTTPTypesTransport`'s client received.
    final class Sent: Sendable {
        let requests = Mutex<[HTTPRequest]>([])
        var all: [HTTPRequest] { requests.withLock { $0 } }
        var count: Int { all.count }

        func record(_ request: HTTPRequest) -> Int {
            requests.withLock {
                $0.append(request)
                return $0.count - 1
            }
        }
    }

    @Test("Fields with obs-text convert to HTTPHeaderFields and back with the same bytes; other fields unchanged")
    func fieldsRoundTrip() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.append(HTTPField(name: .contentDisposition, value: Self.latin1(#"attachment; filename="caf%.txt""#)))
        fields.append(HTTPField(name: .setCookie, value: "a=1"))
        // A lone continuation byte and a byte that never starts UTF-8.
        fields.append(HTTPField(name: .setCookie, value: Array("b=".utf8) + [0x80, 0xFF]))
        fields.append(HTTPField(name: try #require(HTTPField.Name("X-Title")), value: "café"))
        // Valid UTF-8 runs next to a byte that is not: "é" in UTF-8, then in Latin-1.
        fields.append(HTTPField(name: try #require(HTTPField.Name("X-Mixed")), value: Array("é".utf8) + [0xE9]))

        let converted = HTTPHeaderFields(fields)
        #expect(converted.values(for: "content-type") == ["text/plain"])
        #expect(converted.values(for: "x-title") == ["café"], "valid UTF-8 stays text")
        let back = try HTTPFields(converted)
        #expect(Self.wire(back) == Self.wire(fields))
        #expect(Array(back) == Array(fields))
    }

    @Test("A response with obs-text fields reaches the client with the origin's bytes, fetched and from storage")
    func responseThroughCache() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        var originFields = HTTPFields()
        originFields.append(HTTPField(name: .cacheControl, value: "max-age=60"))
        originFields.append(
            HTTPField(name: .contentDisposition, value: Self.latin1(#"attachment; filename="caf%.txt""#)))
        originFields.append(HTTPField(name: .setCookie, value: Self.latin1("name=Ren%e", 0xE9)))
        originFields.append(HTTPField(name: .setCookie, value: "plain=1"))
        originFields.append(HTTPField(name: .contentType, value: "text/plain; charset=utf-8"))
        // Dated, so that the cache adds no Date of its own (RFC 9110, section 6.6.1).
        originFields.append(HTTPField(name: .date, value: _HTTPDate.format(clock.now())))
        let transport = HTTPTypesTransport { [originFields] request, _ in
            _ = sent.record(request)
            return (HTTPResponse(status: .ok, headerFields: originFields), Data("body".utf8))
        }
        let remote = InMemoryRemoteStore(clock: clock)
        let http = try Self.cache(clock, transport, remote: remote)
        let request = HTTPRequest(method: .get, url: Self.url)

        let (fetched, fetchedBody) = try await http.response(to: request)
        #expect(fetched.status == .ok)
        #expect(Self.wire(fetched.headerFields) == Self.wire(originFields))
        #expect(fetchedBody == Data("body".utf8))

        clock.advance(by: 5)
        let (hit, hitBody) = try await http.response(to: request)
        #expect(sent.count == 1, "served from storage")
        #expect(Self.wire(hit.headerFields) == Self.wire(originFields))
        #expect(hit.headerFields[.age] == "5")
        #expect(hitBody == Data("body".utf8))

        // Another cache over the same remote store: the response is decoded from
        // the bytes the first one stored.
        await http.flush()
        let other = try Self.cache(clock, transport, remote: remote.anotherInstance())
        let (decoded, decodedBody) = try await other.response(to: request)
        #expect(sent.count == 1, "served from the remote store")
        #expect(Self.wire(decoded.headerFields) == Self.wire(originFields))
        #expect(decodedBody == Data("body".utf8))
    }

    @Test("A request field with obs-text reaches the origin with its bytes; the response is still cached")
    func requestThroughCache() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        let transport = HTTPTypesTransport { request, _ in
            _ = sent.record(request)
            return (HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=60"]), Data("ok".utf8))
        }
        let http = try Self.cache(clock, transport)
        let name = try #require(HTTPField.Name("X-File-Name"))
        var request = HTTPRequest(method: .get, url: Self.url)
        request.headerFields.append(HTTPField(name: name, value: Self.latin1("caf%.txt")))
        request.headerFields.append(HTTPField(name: .accept, value: "text/plain"))

        _ = try await http.response(to: request)
        let received = try #require(sent.all.first)
        #expect(Self.wire(received.headerFields) == Self.wire(request.headerFields))
        #expect(Self.value(received.headerFields, name) == Self.latin1("caf%.txt"))

        let (again, body) = try await http.response(to: request)
        #expect(again.status == .ok)
        #expect(body == Data("ok".utf8))
        #expect(sent.count == 1, "a field Vary does not name does not keep a response from storage")
    }

    @Test("Revalidation sends an obs-text ETag with its bytes; the 304's obs-text fields update the stored response")
    func revalidationWithObsTextValidator() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        let etag = Self.latin1(#""caf%""#)
        let transport = HTTPTypesTransport { request, _ in
            _ = sent.record(request)
            var fields = HTTPFields()
            fields.append(HTTPField(name: .cacheControl, value: "max-age=10"))
            fields.append(HTTPField(name: .eTag, value: etag))
            if Self.value(request.headerFields, .ifNoneMatch) == etag {
                fields.append(HTTPField(name: .contentDisposition, value: Self.latin1("inline; filename=%", 0xE8)))
                return (HTTPResponse(status: .notModified, headerFields: fields), Data())
            }
            fields.append(HTTPField(name: .contentDisposition, value: Self.latin1("inline; filename=%")))
            return (HTTPResponse(status: .ok, headerFields: fields), Data("v1".utf8))
        }
        let http = try Self.cache(clock, transport)
        let request = HTTPRequest(method: .get, url: Self.url)

        let (first, _) = try await http.response(to: request)
        #expect(Self.value(first.headerFields, .eTag) == etag)
        clock.advance(by: 11)
        let (revalidated, body) = try await http.response(to: request)
        #expect(sent.count == 2)
        #expect(Self.value(sent.all[1].headerFields, .ifNoneMatch) == etag, "the validator's bytes, unaltered")
        #expect(http.statistics.revalidations == 1, "the 304 matched the stored ETag")
        #expect(revalidated.status == .ok)
        #expect(body == Data("v1".utf8))
        #expect(Self.value(revalidated.headerFields, .eTag) == etag)
        #expect(Self.value(revalidated.headerFields, .contentDisposition) == Self.latin1("inline; filename=%", 0xE8))
    }

    @Test("A client's If-None-Match and If-Range match an obs-text ETag only with the same bytes")
    func clientValidatorsCompareBytes() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        let etag = Self.latin1(#""caf%""#)
        let transport = HTTPTypesTransport { request, _ in
            _ = sent.record(request)
            var fields = HTTPFields()
            fields.append(HTTPField(name: .cacheControl, value: "max-age=60"))
            fields.append(HTTPField(name: .eTag, value: etag))
            return (HTTPResponse(status: .ok, headerFields: fields), Data("0123456789".utf8))
        }
        let http = try Self.cache(clock, transport)
        let plain = HTTPRequest(method: .get, url: Self.url)
        _ = try await http.response(to: plain)

        var same = plain
        same.headerFields.append(HTTPField(name: .ifNoneMatch, value: etag))
        #expect(try await http.response(to: same).response.status == .notModified)

        var other = plain
        other.headerFields.append(HTTPField(name: .ifNoneMatch, value: Self.latin1(#""caf%""#, 0xE8)))
        let (full, body) = try await http.response(to: other)
        #expect(full.status == .ok, "another byte is another entity tag")
        #expect(body == Data("0123456789".utf8))

        var utf8 = plain
        utf8.headerFields.append(HTTPField(name: .ifNoneMatch, value: #""café""#))
        #expect(try await http.response(to: utf8).response.status == .ok, "é in UTF-8 is not the byte 0xE9")

        var range = plain
        range.headerFields.append(HTTPField(name: .range, value: "bytes=0-3"))
        range.headerFields.append(HTTPField(name: .ifRange, value: etag))
        let (partial, partialBody) = try await http.response(to: range)
        #expect(partial.status == .partialContent)
        #expect(partialBody == Data("0123".utf8))

        var otherRange = plain
        otherRange.headerFields.append(HTTPField(name: .range, value: "bytes=0-3"))
        otherRange.headerFields.append(HTTPField(name: .ifRange, value: Self.latin1(#""caf%""#, 0xE8)))
        let (whole, wholeBody) = try await http.response(to: otherRange)
        #expect(whole.status == .ok, "an If-Range that does not match asks for the whole response")
        #expect(wholeBody == Data("0123456789".utf8))
        #expect(sent.count == 1)
    }

    @Test("Concurrent requests whose field values differ only in their bytes each reach the origin")
    func concurrentRequestsKeptApart() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        let gate = FetchProbe(open: false)
        let name = try #require(HTTPField.Name("X-Name"))
        let transport = HTTPTypesTransport { request, _ in
            _ = sent.record(request)
            await gate.enter()
            let fields: HTTPFields = [.cacheControl: "no-store"]
            return (
                HTTPResponse(status: .ok, headerFields: fields),
                Data("\(Self.value(request.headerFields, name) ?? [])".utf8)
            )
        }
        let http = try Self.cache(clock, transport)
        func body(_ value: [UInt8]) async throws -> String {
            var request = HTTPRequest(method: .get, url: Self.url)
            request.headerFields.append(HTTPField(name: name, value: value))
            return String(decoding: try await http.response(to: request).body, as: UTF8.self)
        }
        let values = [Self.latin1("caf%", 0xE9), Self.latin1("caf%", 0xE8), Array("café".utf8)]

        async let first = body(values[0])
        while sent.count < 1 { await Task.yield() }
        async let second = body(values[1])
        async let third = body(values[2])
        // Each of the other two has either reached the origin or joined the first.
        while sent.count + http.statistics.coalescedWaits < 3 { await Task.yield() }
        gate.open()
        #expect(try await [first, second, third] == values.map { "\($0)" })
        #expect(sent.count == 3)
        #expect(http.statistics.coalescedWaits == 0)
    }

    @Test("Vary on a request field with obs-text never serves one request's response to another")
    func varyOnObsTextRequestField() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        let name = try #require(HTTPField.Name("X-Name"))
        let transport = HTTPTypesTransport { request, _ in
            let index = sent.record(request)
            let fields: HTTPFields = [.cacheControl: "max-age=60", .vary: "X-Name"]
            return (HTTPResponse(status: .ok, headerFields: fields), Data("response \(index)".utf8))
        }
        let http = try Self.cache(clock, transport)
        func request(_ value: [UInt8]) -> HTTPRequest {
            var request = HTTPRequest(method: .get, url: Self.url)
            request.headerFields.append(HTTPField(name: name, value: value))
            return request
        }

        let first = try await http.response(to: request(Self.latin1("caf%", 0xE9))).body
        let second = try await http.response(to: request(Self.latin1("caf%", 0xE8))).body
        let third = try await http.response(to: request(Array("café".utf8))).body
        #expect(first == Data("response 0".utf8))
        #expect(second == Data("response 1".utf8), "0xE8 is not 0xE9")
        #expect(third == Data("response 2".utf8), "é in UTF-8 is not the byte 0xE9")
        #expect(sent.count == 3)
        #expect(Self.value(sent.all[1].headerFields, name) == Self.latin1("caf%", 0xE8))

        // A UTF-8 value selects as before; a response to an obs-text one was not stored.
        #expect(try await http.response(to: request(Array("café".utf8))).body == Data("response 2".utf8))
        #expect(sent.count == 3)
        #expect(try await http.response(to: request(Self.latin1("caf%", 0xE9))).body == Data("response 3".utf8))
        #expect(sent.count == 4)
    }
}
#endif
