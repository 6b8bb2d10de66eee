#if HTTPTypes
import Foundation
import HTTPTypes
import HoardHTTPTypes
import Synchronization
import Testing

@testable import Hoard

/// The swift-http-types bridge (product HoardHTTPTypes): conversions both ways, and
/// requests through it against the loopback origin and through `HTTPTypesTransport`.
@Suite("HTTP response cache with swift-http-types", .timeLimit(.minutes(3)))
struct HTTPTypesBridgeTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("Fields convert both ways in order, repeated names apart, each name in its own case")
    func fieldsRoundTrip() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .setCookie, value: "a=1"))
        fields.append(HTTPField(name: try #require(HTTPField.Name("X-Trace-ID")), value: "7"))
        fields.append(HTTPField(name: .setCookie, value: "b=2"))
        fields.append(HTTPField(name: .age, value: "7200"))
        fields.append(HTTPField(name: try #require(HTTPField.Name("age")), value: "0"))
        let converted = HTTPHeaderFields(fields)
        #expect(converted.map(\.name) == ["Set-Cookie", "X-Trace-ID", "Set-Cookie", "Age", "age"])
        #expect(converted.values(for: "set-cookie") == ["a=1", "b=2"])
        #expect(converted.values(for: "age") == ["7200", "0"])
        let back = try HTTPFields(converted)
        #expect(Array(back) == Array(fields))
        #expect(back.map(\.name.rawName) == ["Set-Cookie", "X-Trace-ID", "Set-Cookie", "Age", "age"])
        #expect(back[values: .age] == ["7200", "0"])
    }

    @Test("A field name or value that is not valid HTTP throws, nothing is dropped or altered")
    func invalidFields() {
        let badName = #expect(throws: HoardError.self) { try HTTPFields(["bad name": "x"]) }
        #expect(badName?.code == .invalidHTTPMessage)
        let badValue = #expect(throws: HoardError.self) { try HTTPFields(["X-Split": "a\r\nInjected: b"]) }
        #expect(badValue?.code == .invalidHTTPMessage)
        let badStatus = #expect(throws: HoardError.self) {
            try HTTPResponse(HTTPTransportResponse(statusCode: 1_000, headers: [:], body: Data()))
        }
        #expect(badStatus?.code == .invalidHTTPMessage)
    }

    @Test("A request converts with its method, URL and repeated fields, and back; no absolute URL throws")
    func requestConversion() throws {
        var request = HTTPRequest(
            method: try #require(HTTPRequest.Method("M-SEARCH")), scheme: "http", authority: "127.0.0.1:8080",
            path: "/a/b?x=1&y=2")
        request.headerFields.append(HTTPField(name: .cookie, value: "a=1"))
        request.headerFields.append(HTTPField(name: .accept, value: "text/plain"))
        request.headerFields.append(HTTPField(name: .cookie, value: "b=2"))
        let converted = try HTTPCacheRequest(request, body: Data("hi".utf8))
        #expect(converted.method == "M-SEARCH")
        #expect(converted.url.absoluteString == "http://127.0.0.1:8080/a/b?x=1&y=2")
        #expect(converted.headers.map(\.name) == ["Cookie", "Accept", "Cookie"])
        #expect(converted.headers.values(for: "cookie") == ["a=1", "b=2"])
        #expect(converted.body == Data("hi".utf8))

        let back = try HTTPRequest(converted)
        #expect(back.method.rawValue == "M-SEARCH")
        #expect(back.scheme == "http")
        #expect(back.authority == "127.0.0.1:8080")
        #expect(back.path == "/a/b?x=1&y=2")
        #expect(Array(back.headerFields) == Array(request.headerFields))

        // As a server receives it: no scheme.
        let received = HTTPRequest(method: .get, scheme: nil, authority: "example.com", path: "/")
        let noURL = #expect(throws: HoardError.self) { try HTTPCacheRequest(received) }
        #expect(noURL?.code == .invalidHTTPMessage)
        let badMethod = #expect(throws: HoardError.self) {
            try HTTPRequest(HTTPCacheRequest(method: "NOT A TOKEN", url: try #require(URL(string: "http://a.test/"))))
        }
        #expect(badMethod?.code == .invalidHTTPMessage)
        let relative = #expect(throws: HoardError.self) {
            try HTTPRequest(HTTPCacheRequest(url: try #require(URL(string: "/relative"))))
        }
        #expect(relative?.code == .invalidHTTPMessage)
    }

    @Test(
        "A request through the bridge is stored under its normalised target URI; a malformed escape does not trap",
        arguments: [
            ("HTTP", "Origin.TEST:80", "/a/./b/../%7Ec%3a?q=%2f", "http://origin.test/a/~c%3A?q=%2F"),
            ("http", "origin.test", "/a%2Fb", "http://origin.test/a%2Fb"),
            ("http", "origin.test", "/%zz/%4?q=%", "http://origin.test/%25zz/%254?q=%25"),
        ])
    func requestKey(scheme: String, authority: String, path: String, key: String) throws {
        let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)
        #expect(_HTTPRequest(try HTTPCacheRequest(request)).key == key)
    }

    @Test("Through the bridge: stored, served with its Age, 304 for the client's validator, revalidated, invalidated")
    func cachedAndRevalidated() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try HTTPResponseCacheTests.Origin(clock: clock) { request, _ in
            if request.method == "POST" { return LoopbackResponse(status: 204) }
            if request.headers["if-none-match"] == "\"v1\"" {
                return LoopbackResponse(status: 304, headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\""])
            }
            return LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\""], body: "bridged")
        }
        let http = try HTTPResponseCacheTests.cache(clock)
        var request = HTTPRequest(method: .get, url: origin.url("/resource?q=1"))
        request.headerFields[.accept] = "text/plain"

        let (first, firstBody) = try await http.response(to: request)
        #expect(first.status == .ok)
        #expect(first.headerFields[.eTag] == "\"v1\"")
        #expect(firstBody == Data("bridged".utf8))
        #expect(origin.requests.first?.path == "/resource?q=1")
        #expect(origin.requests.first?.headers["accept"] == "text/plain")

        clock.advance(by: 4)
        let (stored, storedBody) = try await http.response(to: request)
        #expect(stored.status == .ok)
        #expect(stored.headerFields[.age] == "4")
        #expect(storedBody == Data("bridged".utf8))
        #expect(origin.requests.count == 1)

        var conditional = request
        conditional.headerFields[.ifNoneMatch] = "\"v1\""
        let (notModified, noBody) = try await http.response(to: conditional)
        #expect(notModified.status == .notModified)
        #expect(noBody.isEmpty)
        #expect(origin.requests.count == 1)

        clock.advance(by: 7)
        let (revalidated, revalidatedBody) = try await http.response(to: request)
        #expect(revalidated.status == .ok)
        #expect(revalidatedBody == Data("bridged".utf8))
        #expect(origin.requests.count == 2)
        #expect(origin.requests.last?.headers["if-none-match"] == "\"v1\"")
        #expect(http.statistics.revalidations == 1)

        var post = request
        post.method = .post
        let (posted, _) = try await http.response(to: post, body: Data("form".utf8))
        #expect(posted.status == .noContent)
        #expect(origin.requests.last?.method == "POST")
        #expect(origin.requests.last?.body == "form")
        _ = try await http.response(to: request)
        #expect(origin.requests.count == 4, "the POST removed the stored response")
    }

    /// What an `HTTPTypesTransport`'s client received.
    final class Sent: Sendable {
        let requests = Mutex<[(request: HTTPRequest, body: Data)]>([])
        var all: [(request: HTTPRequest, body: Data)] { requests.withLock { $0 } }
    }

    @Test("HTTPTypesTransport: the client gets an HTTPRequest with fields in order; the cache revalidates through it")
    func transportAdapter() async throws {
        let clock = ManualClock(start: Self.start)
        let sent = Sent()
        let transport = HTTPTypesTransport { request, body in
            sent.requests.withLock { $0.append((request, body)) }
            var fields: HTTPFields = [.cacheControl: "max-age=10", .eTag: "\"t\""]
            fields[.date] = _HTTPDate.format(clock.now())
            if request.headerFields[.ifNoneMatch] == "\"t\"" {
                return (HTTPResponse(status: .notModified, headerFields: fields), Data())
            }
            fields.append(HTTPField(name: .setCookie, value: "a=1"))
            fields.append(HTTPField(name: .setCookie, value: "b=2"))
            return (HTTPResponse(status: .ok, headerFields: fields), Data("adapted".utf8))
        }
        let http = try HTTPResponseCacheTests.cache(clock, transport: transport)
        let url = try #require(URL(string: "https://origin.test/item?id=3"))
        let headers = HTTPHeaderFields([("Cookie", "a=1"), ("X-Trace", "1"), ("Cookie", "b=2")])

        let first = try await http.response(to: HTTPCacheRequest(url: url, headers: headers))
        #expect(first.body == Data("adapted".utf8))
        #expect(first.headers.values(for: "set-cookie") == ["a=1", "b=2"])
        let request = try #require(sent.all.first).request
        #expect(request.method == .get)
        #expect(request.scheme == "https")
        #expect(request.authority == "origin.test")
        #expect(request.path == "/item?id=3")
        #expect(request.headerFields.map(\.name.rawName) == ["Cookie", "X-Trace", "Cookie"])
        #expect(request.headerFields[values: .cookie] == ["a=1", "b=2"])

        #expect(try await http.response(to: HTTPCacheRequest(url: url, headers: headers)).isFromCache)
        #expect(sent.all.count == 1)
        clock.advance(by: 11)
        let revalidated = try await http.response(to: HTTPCacheRequest(url: url, headers: headers))
        #expect(revalidated.isFromCache)
        #expect(revalidated.body == Data("adapted".utf8))
        #expect(revalidated.headers.values(for: "set-cookie") == ["a=1", "b=2"])
        #expect(sent.all.count == 2)
        #expect(sent.all.last?.request.headerFields[.ifNoneMatch] == "\"t\"")

        _ = try await http.response(to: HTTPCacheRequest(method: "PUT", url: url, body: Data("new".utf8)))
        #expect(sent.all.last?.request.method == .put)
        #expect(sent.all.last?.body == Data("new".utf8))
    }
}
#endif
