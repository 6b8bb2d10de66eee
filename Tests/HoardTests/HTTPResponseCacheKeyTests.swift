import Foundation
import Testing

@testable import Hoard

/// The URL a stored response is kept under: URLs that name the same target URI
/// (RFC 9110, sections 4.2.3 and 7.1) share it, so an unsafe method invalidates
/// what a `GET` stored under any of them; URLs that differ otherwise, query order
/// included, do not. Each test runs against a ``ScriptedTransport``.
@Suite("HTTP response cache: equivalent URLs")
struct HTTPResponseCacheKeyTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    static func cache(_ clock: ManualClock, _ origin: ScriptedTransport) throws -> HTTPResponseCache {
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-key-test")
        storage.localStores = .none
        return try HTTPResponseCache(configuration: .init(storage: storage), transport: origin, clock: clock)
    }

    /// An origin whose `GET` responses stay fresh for ten minutes, each with a body
    /// of its own, and whose other methods answer `204` with `location` (when
    /// given) as `Location`.
    static func origin(location: String? = nil) -> ScriptedTransport {
        ScriptedTransport { request, index in
            guard request.method == "GET" else {
                var headers = HTTPHeaderFields()
                if let location { headers.append(name: "Location", value: location) }
                return HTTPTransportResponse(statusCode: 204, headers: headers, body: Data())
            }
            return HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=600"], body: Data("v\(index)".utf8))
        }
    }

    @Test(
        "An unsafe method invalidates a response stored under an equivalent URL: fragment, scheme and host case, default port, empty path",
        arguments: [
            ("http://origin.test/page#top", "PUT", "http://origin.test/page", nil),
            ("http://origin.test/page", "DELETE", "http://origin.test/page#section", nil),
            ("http://origin.test/page", "PUT", "HTTP://Origin.TEST/page", nil),
            ("http://origin.test/page", "PATCH", "http://origin.test:80/page", nil),
            ("https://origin.test/", "DELETE", "https://origin.test:443", nil),
            ("http://origin.test/page", "POST", "http://origin.test/create", "http://ORIGIN.test/page"),
            ("http://origin.test/page", "POST", "http://origin.test/create", "http://origin.test:80/page"),
            ("http://origin.test/page#top", "POST", "http://origin.test/create", "/page"),
        ] as [(String, String, String, String?)])
    func unsafeMethodInvalidatesEquivalentURL(stored: String, method: String, target: String, location: String?)
        async throws
    {
        let clock = ManualClock(start: Self.start)
        let origin = Self.origin(location: location)
        let http = try Self.cache(clock, origin)
        let url = try #require(URL(string: stored))
        _ = try await http.response(for: url)
        #expect(try await http.response(for: url).isFromCache, "stored before the \(method)")
        _ = try await http.response(to: HTTPCacheRequest(method: method, url: try #require(URL(string: target))))
        let after = try await http.response(for: url)
        #expect(after.isFromCache == false, "\(stored) was not invalidated by \(method) \(target)")
        #expect(after.body == Data("v2".utf8))
    }

    @Test(
        "The key of a URL: its target URI with RFC 9110's equivalences; path, query, user and other schemes as they are",
        arguments: [
            ("HTTPS://H.TEST:443?A=B#f", "https://h.test/?A=B"),
            ("http://h.test:0080/x?#", "http://h.test/x?"),
            ("HTTP://[FE80::AB]:80/Path", "http://[fe80::ab]/Path"),
            ("http://h.test:8080/a%7Eb?b=2&a=1", "http://h.test:8080/a%7Eb?b=2&a=1"),
            ("http://User@H.test/x", "http://User@h.test/x"),
            ("urn:ISBN:123", "urn:ISBN:123"),
        ])
    func keyOfURL(_ url: String, key: String) throws {
        #expect(_HTTPRequest.key(for: try #require(URL(string: url))) == key)
    }

    @Test("URLs naming the same target URI share one stored response; another query order is another URL")
    func equivalentURLsShareOneResponse() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = Self.origin()
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: try #require(URL(string: "http://origin.test/page?a=1&b=2#top")))
        for equivalent in ["http://origin.test/page?a=1&b=2", "HTTP://Origin.Test:80/page?a=1&b=2#other"] {
            let response = try await http.response(for: try #require(URL(string: equivalent)))
            #expect(response.isFromCache, "\(equivalent) is the stored URL")
            #expect(response.body == Data("v0".utf8))
        }
        let reordered = try await http.response(for: try #require(URL(string: "http://origin.test/page?b=2&a=1")))
        #expect(reordered.isFromCache == false, "a query in another order is another URL")
        #expect(origin.requests.count == 2)
        let path = try await http.response(for: try #require(URL(string: "http://origin.test/Page?a=1&b=2")))
        #expect(path.isFromCache == false, "a path's case is kept")
    }
}
