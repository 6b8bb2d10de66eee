import Foundation
import Testing

@testable import Hoard

/// The URL a stored response is kept under: URLs that name the same target URI
/// (RFC 9110, sections 4.2.3 and 7.1; RFC 3986, section 6.2.2) share it, so an
/// unsafe method invalidates what a `GET` stored under any of them; URLs that
/// differ otherwise, in a reserved character's escape or the query's order
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
    /// given) as `Location` and `contentLocation` as `Content-Location`.
    static func origin(location: String? = nil, contentLocation: String? = nil) -> ScriptedTransport {
        ScriptedTransport { request, index in
            guard request.method == "GET" else {
                var headers = HTTPHeaderFields()
                if let location { headers.append(name: "Location", value: location) }
                if let contentLocation { headers.append(name: "Content-Location", value: contentLocation) }
                return HTTPTransportResponse(statusCode: 204, headers: headers, body: Data())
            }
            return HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=600"], body: Data("v\(index)".utf8))
        }
    }

    @Test(
        "An unsafe method invalidates a response stored under an equivalent URL: fragment, case, default port, empty path, escapes, dot-segments",
        arguments: [
            ("http://origin.test/page#top", "PUT", "http://origin.test/page", nil),
            ("http://origin.test/page", "DELETE", "http://origin.test/page#section", nil),
            ("http://origin.test/page", "PUT", "HTTP://Origin.TEST/page", nil),
            ("http://origin.test/page", "PATCH", "http://origin.test:80/page", nil),
            ("https://origin.test/", "DELETE", "https://origin.test:443", nil),
            ("http://origin.test/page", "POST", "http://origin.test/create", "http://ORIGIN.test/page"),
            ("http://origin.test/page", "POST", "http://origin.test/create", "http://origin.test:80/page"),
            ("http://origin.test/page#top", "POST", "http://origin.test/create", "/page"),
            ("http://origin.test/a~b", "PUT", "http://origin.test/a%7Eb", nil),
            ("http://origin.test/a%3Ab", "DELETE", "http://origin.test/a%3ab", nil),
            ("http://origin.test/a/c", "PATCH", "http://origin.test/a/./b/../c", nil),
            ("http://origin.test/A/c?x=%7E", "PUT", "http://origin.test/%41/b/%2E%2E/c?x=~", nil),
            ("http://origin.test/a/c", "POST", "http://origin.test/create", "http://origin.test/a/./b/../c"),
            ("http://origin.test/~x", "POST", "http://origin.test/create", "/%7ex"),
            ("http://origin.test:80/a/c", "POST", "http://origin.test/create", "http://ORIGIN.test/a/%2E/c"),
            ("http://origin.test/page", "POST", "http://origin.test/create", "http://%6Frigin.TEST/page"),
        ] as [(String, String, String, String?)])
    func unsafeMethodInvalidatesEquivalentURL(stored: String, method: String, target: String, location: String?)
        async throws
    {
        let after = try await Self.responseAfter(storing: stored, method, target, location: location)
        #expect(after.isFromCache == false, "\(stored) was not invalidated by \(method) \(target)")
        #expect(after.body == Data("v2".utf8))
    }

    /// Stores the response of `stored` (checking that it is then served from the
    /// cache), sends `method` to `target`, whose response names `location`, and
    /// returns the next response for `stored`.
    static func responseAfter(
        storing stored: String, _ method: String, _ target: String, location: String?
    ) async throws -> HTTPCachedResponse {
        let http = try Self.cache(ManualClock(start: Self.start), Self.origin(location: location))
        let url = try #require(URL(string: stored))
        _ = try await http.response(for: url)
        #expect(try await http.response(for: url).isFromCache, "stored before the \(method)")
        _ = try await http.response(to: HTTPCacheRequest(method: method, url: try #require(URL(string: target))))
        return try await http.response(for: url)
    }

    @Test(
        "An unsafe method does not invalidate a URL that differs by a reserved character's escape or the query's order",
        arguments: [
            ("http://origin.test/a/b", "PUT", "http://origin.test/a%2Fb", nil),
            ("http://origin.test/a?b", "DELETE", "http://origin.test/a%3Fb", nil),
            ("http://origin.test/p?a=1&b=2", "PUT", "http://origin.test/p?b=2&a=1", nil),
            ("http://origin.test/p?a=%26", "PUT", "http://origin.test/p?a=&", nil),
            ("http://origin.test/a/b", "POST", "http://origin.test/create", "/a%2fb"),
        ] as [(String, String, String, String?)])
    func unsafeMethodKeepsDistinctURL(stored: String, method: String, target: String, location: String?)
        async throws
    {
        let after = try await Self.responseAfter(storing: stored, method, target, location: location)
        #expect(after.isFromCache, "\(stored) was invalidated by \(method) \(target)")
        #expect(after.body == Data("v0".utf8))
    }

    @Test("A POST's same-origin Content-Location invalidates the equivalent URL, escapes and dot-segments normalised")
    func contentLocationInvalidatesEquivalentURL() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = Self.origin(contentLocation: "/%7Ea/./b/../c%3a")
        let http = try Self.cache(clock, origin)
        let url = try #require(URL(string: "http://origin.test/~a/c%3A"))
        _ = try await http.response(for: url)
        _ = try await http.response(
            to: HTTPCacheRequest(method: "POST", url: try #require(URL(string: "http://origin.test/create"))))
        let after = try await http.response(for: url)
        #expect(after.isFromCache == false, "the Content-Location names the stored URL")
        #expect(after.body == Data("v2".utf8))
    }

    @Test(
        "The key of a URL: its target URI with the equivalences of RFC 9110 and RFC 3986; reserved escapes, query order, user and other schemes as they are",
        arguments: [
            ("HTTPS://H.TEST:443?A=B#f", "https://h.test/?A=B"),
            ("http://h.test:0080/x?#", "http://h.test/x?"),
            ("HTTP://[FE80::AB]:80/Path", "http://[fe80::ab]/Path"),
            ("http://h.test:8080/a%7Eb?b=2&a=1", "http://h.test:8080/a~b?b=2&a=1"),
            ("http://User@H.test/x", "http://User@h.test/x"),
            ("urn:ISBN:123", "urn:ISBN:123"),
            ("foo://H.test", "foo://h.test"),
            // Unreserved characters decoded; other escapes with uppercase hex digits.
            ("http://h.test/%41%62c%2D%2e%5F%7e", "http://h.test/Abc-._~"),
            ("http://h.test/a%3ab%e9%C3%a9", "http://h.test/a%3Ab%E9%C3%A9"),
            ("http://%6Frigin.TEST/", "http://origin.test/"),
            ("http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]/"),
            // Reserved characters stay escaped: %2F is not /, %3F is not ?, %26 is not &.
            ("http://h.test/a%2Fb%2f?x=%3F&y=%26", "http://h.test/a%2Fb%2F?x=%3F&y=%26"),
            // The query: escapes normalised, its bytes otherwise kept, dot-segments included.
            ("http://h.test/p?b=%7E&a=./../%3a", "http://h.test/p?b=~&a=./../%3A"),
            // Dot-segments removed from the path (RFC 3986, section 5.2.4).
            ("http://h.test/a/./b/../c", "http://h.test/a/c"),
            ("http://h.test/../a/b/..", "http://h.test/a/"),
            ("http://h.test/a/.", "http://h.test/a/"),
            ("http://h.test/a/%2E%2e/b", "http://h.test/b"),
            ("http://h.test/a/.b/..c/", "http://h.test/a/.b/..c/"),
            ("http://h.test/a//../b", "http://h.test/a/b"),
            // A malformed escape is kept (URL encodes its % as %25).
            ("http://h.test/%zz%4?q=%g1", "http://h.test/%25zz%254?q=%25g1"),
        ])
    func keyOfURL(_ url: String, key: String) throws {
        #expect(_HTTPRequest.key(for: try #require(URL(string: url))) == key)
    }

    @Test(
        "Escapes: an unreserved character's decoded, others in uppercase hex, a malformed one kept as it is",
        arguments: [
            ("%7E%7e%41%2d%2E%5f%30", false, "~~A-._0"),
            ("a%2fb%3f%3A%26%25%e9", false, "a%2Fb%3F%3A%26%25%E9"),
            ("%zz%4%%41%", false, "%zz%4%A%"),
            ("100%", false, "100%"),
            ("%g1%1g%4", false, "%g1%1g%4"),
            ("%4F%2fHost", true, "o%2Fhost"),
            ("", false, ""),
        ])
    func percentEncodingNormalised(_ text: String, lowercasingLetters: Bool, normalised: String) {
        #expect(_HTTPTargetURI.normalizedPercentEncoding(text, lowercasingLetters: lowercasingLetters) == normalised)
    }

    @Test(
        "Dot-segments removed as RFC 3986, section 5.2.4 does",
        arguments: [
            ("/a/b/c/./../../g", "/a/g"),
            ("mid/content=5/../6", "mid/6"),
            ("/../../x", "/x"),
            ("/a/b/..", "/a/"),
            ("/.", "/"),
            ("/..", "/"),
            ("/a/..b/.c/...", "/a/..b/.c/..."),
            ("/a//./b", "/a//b"),
            ("", ""),
        ])
    func dotSegmentsRemoved(_ path: String, removed: String) {
        #expect(_HTTPTargetURI.removingDotSegments(path) == removed)
    }

    /// RFC 3986, section 5.2.4, step by step on strings, as the RFC writes it: the
    /// reference the linear ``_HTTPTargetURI/removingDotSegments(_:)`` is checked
    /// against.
    static func referenceRemovingDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output = ""
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") || input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") || input == "/.." {
                input = "/" + input.dropFirst(input == "/.." ? 3 : 4)
                output = String(output[..<(output.lastIndex(of: "/") ?? output.startIndex)])
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.index(input.startIndex, offsetBy: input.first == "/" ? 1 : 0)
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output += input[..<end]
                input = input[end...]
            }
        }
        return output
    }

    @Test("Dot-segments removed as the RFC's steps remove them, on every path of up to 8 of a, . and /")
    func dotSegmentsMatchTheRFCSteps() {
        var paths = [""]
        var mismatches: [String] = []
        for _ in 1...8 {
            paths = paths.flatMap { path in ["a", ".", "/"].map { path + $0 } }
            for path in paths where _HTTPTargetURI.removingDotSegments(path) != Self.referenceRemovingDotSegments(path)
            {
                mismatches.append(path)
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    @Test("A path of 200,000 dot-segments is reduced in one pass: a request cannot make the key quadratic")
    func longDotSegmentRunIsReduced() {
        let path = "/a" + String(repeating: "/b/../.", count: 100_000) + String(repeating: "/..", count: 100_000) + "/x"
        #expect(_HTTPTargetURI.removingDotSegments(path) == "/x")
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

    @Test("URLs that differ by unreserved escapes, hex case and dot-segments share one stored response")
    func percentEncodingAndDotSegmentsShareOneResponse() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = Self.origin()
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: try #require(URL(string: "http://origin.test/a/~b%3A?q=%3A")))
        for equivalent in ["http://origin.test/a/%7Eb%3a?q=%3a", "http://origin.test/x/../a/./%7eb%3A?q=%3A"] {
            let response = try await http.response(for: try #require(URL(string: equivalent)))
            #expect(response.isFromCache, "\(equivalent) is the stored URL")
            #expect(response.body == Data("v0".utf8))
        }
        for distinct in ["http://origin.test/a%2F~b%3A?q=%3A", "http://origin.test/a/~b:?q=%3A"] {
            let response = try await http.response(for: try #require(URL(string: distinct)))
            #expect(response.isFromCache == false, "\(distinct) differs by a reserved character's escape")
        }
        #expect(origin.requests.count == 3)
    }
}
