import Foundation
import Testing

@testable import Hoard

#if AsyncHTTPClient
import HoardAsyncHTTPClient
#endif

/// RFC 9111 and RFC 9110 behaviours of ``HTTPResponseCache`` beyond storing and
/// revalidating: `Age`, strict parsing, hop-by-hop fields, the client's own
/// conditions and ranges, `HEAD`, unsafe methods, redirects, targeted
/// `Cache-Control`. Each test runs the loopback origin of ``HTTPResponseCacheTests``.
@Suite("HTTP response cache: RFC 9111 semantics", .timeLimit(.minutes(3)))
struct HTTPResponseCacheSemanticsTests {
    typealias Origin = HTTPResponseCacheTests.Origin
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    static func cache(
        _ clock: ManualClock, targeted: String? = nil, transport: any HTTPCacheTransport = URLSessionHTTPTransport()
    ) throws -> HTTPResponseCache {
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-semantics-test")
        storage.localStores = .none
        return try HTTPResponseCache(
            configuration: .init(storage: storage, targetedCacheControl: targeted), transport: transport, clock: clock)
    }

    @Test("A response from storage carries its current Age: the origin's Age advanced by the time stored")
    func ageGenerated() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Age": "10"], body: "aged")
        }
        let http = try Self.cache(clock)
        let first = try await http.response(for: origin.url())
        #expect(first[header: "age"] == "10", "the origin's response passes as it came")
        clock.advance(by: 5)
        let second = try await http.response(for: origin.url())
        #expect(second.isFromCache)
        #expect(second.headers.values(for: "age") == ["15"])
        clock.advance(by: 50)
        #expect(try await http.response(for: origin.url()).isFromCache == false, "10 + 50 s is past max-age=60")
        #expect(origin.requests.count == 2)
    }

    @Test(
        "Expires that is not one exact HTTP date means already expired",
        arguments: [
            "Thu, 18 Aug 2050 02:01:18 UTC", "Thu, 18 Aug 2050 02:01:18 AEST", "Thu, 18 Aug 50 02:01:18 GMT",
            "Thu 18 Aug 2050 02:01:18 GMT", "Thu, 18  Aug  2050 02:01:18 GMT", "Thu, 18-Aug-2050 02:01:18 GMT",
            "Thu, 18 Aug 2050 02.01.18 GMT", "Thu, 18 Aug 2050 2:01:18 GMT", "0",
        ])
    func invalidExpires(_ expires: String) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Expires": expires], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache == false)
        #expect(origin.requests.count == 2)
    }

    @Test(
        "Expires in each of the three forms RFC 9110 defines (names in any case) keeps a response fresh",
        arguments: [
            "Thu, 18 Aug 2050 02:01:18 GMT", "THU, 18 AUG 2050 02:01:18 gmt", "Thursday, 18-Aug-50 02:01:18 GMT",
            "Thu Aug  8 02:01:18 2050",
        ])
    func validExpires(_ expires: String) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Expires": expires], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache)
        #expect(origin.requests.count == 1)
    }

    @Test("Two Expires fields are not a date: the response is stale at once")
    func twoExpires() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200, body: "x",
                lines: [("Expires", "Thu, 18 Aug 2050 02:01:18 GMT"), ("Expires", "Thu, 18 Aug 2050 02:01:19 GMT")])
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache == false)
    }

    @Test(
        "Age: only a non-negative integer counts (7200.0, -7200, abc are ignored); the first member wins",
        arguments: [
            ("7200.0", true), ("-7200", true), ("abc", true), ("7200", false), ("0, 7200", true), ("7200, 0", false),
            ("2147483648", false),
        ])
    func ageParsing(_ age: String, fresh: Bool) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=3600", "Age": age], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache == fresh)
    }

    @Test(
        "A max-age given twice keeps its first value",
        arguments: [("max-age=1800, max-age=1", true), ("max-age=1, max-age=1800", false)])
    func duplicateMaxAge(_ control: String, fresh: Bool) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": control], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 10)
        #expect(try await http.response(for: origin.url()).isFromCache == fresh)
    }

    @Test("Hop-by-hop fields, and those Connection names, are never stored")
    func hopByHop() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200,
                headers: [
                    "Cache-Control": "max-age=60", "X-A": "1", "X-B": "2", "Keep-Alive": "timeout=5",
                    "Proxy-Authenticate": "Basic", "Upgrade": "h2c",
                ],
                body: "x", lines: [("Connection", "x-a")])
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        let stored = try #require(try await http.storage.value(for: origin.url().absoluteString)?.responses.first)
        for name in ["connection", "x-a", "keep-alive", "proxy-authenticate", "upgrade"] {
            #expect(!stored.headers.contains(name), "\(name) was stored")
        }
        #expect(stored[header: "x-b"] == "2")
    }

    @Test("Repeated fields keep their order and stay apart through storage")
    func repeatedFieldsStored() throws {
        let headers: HTTPHeaderFields = ["Set-Cookie": "a=1", "Age": "7200", "Set-Cookie": "b=2", "Age": "0"]
        let response = HTTPCachedResponse(
            url: URL(string: "http://example.com/")!, statusCode: 200, headers: headers, body: Data("x".utf8),
            requestTime: Self.start, responseTime: Self.start)
        let decoded = try HTTPStoredResponses(cacheData: HTTPStoredResponses(responses: [response]).cacheEncoded())
        let fields = try #require(decoded.responses.first).headers
        #expect(fields.map(\.name) == ["Set-Cookie", "Age", "Set-Cookie", "Age"])
        #expect(fields.values(for: "set-cookie") == ["a=1", "b=2"])
        #expect(fields["age"] == "7200, 0")
        #expect(response.age(at: Self.start) == 7200, "the first Age line counts")
    }

    #if AsyncHTTPClient
    @Test("Over AsyncHTTPClient, repeated fields reach the cache apart and in order")
    func repeatedFieldsOverAsyncHTTPClient() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=3600"], body: "x",
                lines: [("Set-Cookie", "a=1"), ("Age", "7200"), ("Set-Cookie", "b=2"), ("Age", "0")])
        }
        let http = try Self.cache(clock, transport: AsyncHTTPClientTransport())
        let first = try await http.response(for: origin.url())
        #expect(first.headers.values(for: "set-cookie") == ["a=1", "b=2"])
        #expect(first.headers.values(for: "age") == ["7200", "0"])
        #expect(try await http.response(for: origin.url()).isFromCache == false, "Age 7200 makes it stale")
    }
    #endif

    /// An origin whose response is fresh for a minute, with an ETag, Last-Modified
    /// and a ten-byte body.
    static func validatedOrigin(_ clock: ManualClock) throws -> Origin {
        try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200,
                headers: [
                    "Cache-Control": "max-age=60", "ETag": "\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT",
                ],
                body: "0123456789")
        }
    }

    @Test("The client's If-None-Match / If-Modified-Since are answered 304 from a fresh stored response")
    func clientConditions() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Self.validatedOrigin(clock)
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        let matched = try await http.response(for: origin.url(), headers: ["If-None-Match": "\"x\", W/\"v1\""])
        #expect(matched.statusCode == 304)
        #expect(matched.body.isEmpty)
        #expect(matched[header: "etag"] == "\"v1\"")
        let other = try await http.response(for: origin.url(), headers: ["If-None-Match": "\"v2\""])
        #expect(other.statusCode == 200)
        #expect(other.body == Data("0123456789".utf8))
        let since = try await http.response(
            for: origin.url(), headers: ["If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(since.statusCode == 304)
        let before = try await http.response(
            for: origin.url(), headers: ["If-Modified-Since": "Sat, 05 Nov 1994 08:49:37 GMT"])
        #expect(before.statusCode == 200)
        #expect(origin.requests.count == 1)
    }

    @Test(
        "A byte Range of a complete stored 200 is answered 206 (or 416) from storage",
        arguments: [
            ("bytes=2-4", 206, "234", "bytes 2-4/10"), ("bytes=7-", 206, "789", "bytes 7-9/10"),
            ("bytes=-3", 206, "789", "bytes 7-9/10"), ("bytes=5-100", 206, "56789", "bytes 5-9/10"),
            ("bytes=10-", 416, "", "bytes */10"), ("bytes=0-1,4-5", 200, "0123456789", nil),
        ])
    func ranges(_ range: String, status: Int, body: String, contentRange: String?) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Self.validatedOrigin(clock)
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        let partial = try await http.response(for: origin.url(), headers: ["Range": range])
        #expect(partial.statusCode == status)
        #expect(partial.body == Data(body.utf8))
        #expect(partial[header: "content-range"] == contentRange)
        #expect(origin.requests.count == 1)
    }

    @Test("HEAD is answered from a stored GET, without a body; a HEAD with nothing stored reaches the origin")
    func headFromStoredGet() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Self.validatedOrigin(clock)
        let http = try Self.cache(clock)
        let head = try await http.response(to: HTTPCacheRequest(method: "HEAD", url: origin.url("/other")))
        #expect(!head.isFromCache)
        #expect(origin.requests.map(\.method) == ["HEAD"])
        #expect(try await http.storage.value(for: origin.url("/other").absoluteString) == nil, "HEAD is not stored")
        _ = try await http.response(for: origin.url())
        let stored = try await http.response(to: HTTPCacheRequest(method: "HEAD", url: origin.url()))
        #expect(stored.isFromCache)
        #expect(stored.statusCode == 200)
        #expect(stored.body.isEmpty)
        #expect(stored[header: "etag"] == "\"v1\"")
        #expect(origin.requests.count == 2)
    }

    @Test("A 200 to a HEAD whose validators match updates the stored GET response; one that differs does not")
    func headUpdatesStoredGet() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { request, _ in
            guard request.method == "HEAD" else {
                return LoopbackResponse(
                    status: 200, headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "X-Kept": "stored"],
                    body: "0123456789")
            }
            let tag = request.path == "/changed" ? "\"v2\"" : "\"v1\""
            return LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=100", "ETag": tag, "X-Updated": "head"],
                body: "0123456789")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url("/same"))
        _ = try await http.response(for: origin.url("/changed"))
        clock.advance(by: 11)

        let head = try await http.response(to: HTTPCacheRequest(method: "HEAD", url: origin.url("/same")))
        #expect(head.statusCode == 200)
        #expect(head.body.isEmpty)
        #expect(head[header: "x-kept"] == "stored", "fields the HEAD did not carry are kept")
        #expect(head[header: "x-updated"] == "head")
        #expect(origin.requests.map(\.method) == ["GET", "GET", "HEAD"])
        let get = try await http.response(for: origin.url("/same"))
        #expect(get.isFromCache, "the HEAD's max-age=100 made the stored response fresh")
        #expect(get.body == Data("0123456789".utf8))
        #expect(get[header: "x-updated"] == "head")
        #expect(get[header: "cache-control"] == "max-age=100")
        #expect(origin.requests.count == 3)

        let changed = try await http.response(to: HTTPCacheRequest(method: "HEAD", url: origin.url("/changed")))
        #expect(changed[header: "etag"] == "\"v2\"")
        #expect(changed[header: "x-kept"] == nil, "another representation's HEAD passes through as it came")
        _ = try await http.response(for: origin.url("/changed"))
        #expect(origin.requests.map(\.method) == ["GET", "GET", "HEAD", "HEAD", "GET"], "still stale: revalidated")
    }

    @Test(
        "An unsafe method passes through and, unless it fails, invalidates its URL and same-origin Location",
        arguments: ["POST", "PUT", "DELETE", "PATCH", "M-SEARCH"])
    func unsafeMethodInvalidates(_ method: String) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { request, _ in
            switch (request.method, request.path) {
            case ("GET", _):
                return LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: request.path)
            case (_, "/fails"):
                return LoopbackResponse(status: 500)
            default:
                return LoopbackResponse(
                    status: 200, headers: ["Location": "/moved", "Content-Location": "/described"],
                    body: "done \(request.body)")
            }
        }
        let http = try Self.cache(clock)
        for path in ["/target", "/moved", "/described", "/fails"] { _ = try await http.response(for: origin.url(path)) }
        let answer = try await http.response(
            to: HTTPCacheRequest(method: method, url: origin.url("/target"), body: Data("abc".utf8)))
        #expect(answer.body == Data("done abc".utf8))
        #expect(origin.requests.last?.method == method)
        _ = try await http.response(to: HTTPCacheRequest(method: method, url: origin.url("/fails")))
        for path in ["/target", "/moved", "/described"] {
            #expect(try await http.response(for: origin.url(path)).isFromCache == false, "\(path) was not invalidated")
        }
        #expect(try await http.response(for: origin.url("/fails")).isFromCache, "a 500 invalidates nothing")
    }

    @Test("A POST response whose Content-Location is its URL, with an explicit lifetime, answers later GETs")
    func postResponseReusedForGet() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { request, _ in
            LoopbackResponse(
                status: 200,
                headers: ["Cache-Control": "max-age=60", "Content-Location": request.path == "/same" ? "/same" : "/x"],
                body: "\(request.method) \(request.path)")
        }
        let http = try Self.cache(clock)
        for path in ["/same", "/other"] {
            _ = try await http.response(to: HTTPCacheRequest(method: "POST", url: origin.url(path)))
        }
        let same = try await http.response(for: origin.url("/same"))
        #expect(same.isFromCache)
        #expect(same.body == Data("POST /same".utf8))
        #expect(try await http.response(for: origin.url("/other")).isFromCache == false)
    }

    @Test(
        "must-understand stores a status the cache understands despite no-store, and no other",
        arguments: [(200, true), (299, false)])
    func mustUnderstand(_ status: Int, stored: Bool) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: status, headers: ["Cache-Control": "max-age=60, no-store, must-understand"], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache == stored)
    }

    @Test("If-Modified-Since against a stored response without Last-Modified compares its Date")
    func ifModifiedSinceWithoutLastModified() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60"], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 10)
        let since = _HTTPDate.format(clock.now())
        #expect(try await http.response(for: origin.url(), headers: ["If-Modified-Since": since]).statusCode == 304)
        let earlier = _HTTPDate.format(Self.start.addingTimeInterval(-10))
        #expect(try await http.response(for: origin.url(), headers: ["If-Modified-Since": earlier]).statusCode == 200)
    }

    @Test("Vary: Accept-Language ignores the order and case of the language ranges")
    func acceptLanguageNormalised() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"], body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url(), headers: ["Accept-Language": "en, DE"])
        #expect(try await http.response(for: origin.url(), headers: ["Accept-Language": "de, EN"]).isFromCache)
        #expect(try await http.response(for: origin.url(), headers: ["Accept-Language": "fr"]).isFromCache == false)
    }

    @Test("A Location on another origin is not invalidated")
    func crossOriginLocationKept() async throws {
        let clock = ManualClock(start: Self.start)
        let other = try Self.validatedOrigin(clock)
        let otherURL = other.url("/kept")
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 201, headers: ["Location": otherURL.absoluteString], body: "created")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: otherURL)
        _ = try await http.response(to: HTTPCacheRequest(method: "POST", url: origin.url("/create")))
        #expect(try await http.response(for: otherURL).isFromCache)
    }

    @Test("The default transport never follows a redirect: a cacheable 301 is stored as a 301")
    func redirectNotFollowed() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { request, _ in
            request.path == "/old"
                ? LoopbackResponse(
                    status: 301, headers: ["Location": "/new", "Cache-Control": "max-age=60"], body: "moved")
                : LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60"], body: "new")
        }
        let http = try Self.cache(clock)
        let first = try await http.response(for: origin.url("/old"))
        #expect(first.statusCode == 301)
        #expect(first[header: "location"] == "/new")
        let second = try await http.response(for: origin.url("/old"))
        #expect(second.statusCode == 301)
        #expect(second.isFromCache)
        #expect(origin.requests.map(\.path) == ["/old"])
    }

    @Test("Without stale-if-error a stale response is not served when the origin answers 503")
    func noStaleOnErrorWithoutPermission() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, index in
            index == 0
                ? LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=1"], body: "old")
                : LoopbackResponse(status: 503, body: "down")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 5)
        let answer = try await http.response(for: origin.url())
        #expect(answer.statusCode == 503)
        #expect(!answer.isFromCache)
    }

    @Test(
        "An unreachable origin: a stale response is served unless must-revalidate forbids it",
        arguments: [("max-age=1", true), ("max-age=1, must-revalidate", false)])
    func staleWhenDisconnected(_ control: String, served: Bool) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": control], body: "old")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 5)
        origin.server.stop()
        if served {
            let answer = try await http.response(for: origin.url())
            #expect(answer.isFromCache)
            #expect(answer.body == Data("old".utf8))
        } else {
            await #expect(throws: (any Error).self) { try await http.response(for: origin.url()) }
        }
    }

    @Test(
        "A public response of any status with Last-Modified gets a heuristic lifetime",
        arguments: [("public", true), ("", false)])
    func heuristicForPublic(_ control: String, stored: Bool) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            var headers = ["Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"]
            if !control.isEmpty { headers["Cache-Control"] = control }
            return LoopbackResponse(status: 299, headers: headers, body: "x")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 60)
        #expect(try await http.response(for: origin.url()).isFromCache == stored)
    }

    @Test(
        "CDN-Cache-Control, when configured, governs a shared cache instead of Cache-Control",
        arguments: [("CDN-Cache-Control", true), (nil, false)])
    func targetedCacheControl(_ targeted: String?, stored: Bool) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200, headers: ["Cache-Control": "no-store", "CDN-Cache-Control": "max-age=60"], body: "x")
        }
        let http = try Self.cache(clock, targeted: targeted)
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache == stored)
    }

    @Test(
        "A targeted field that is not a valid Structured Field dictionary is ignored",
        arguments: ["max-age=10000, &&&&&", "max-age=\"10000\"", "max-age=10000, a=\"open"])
    func invalidTargetedField(_ value: String) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(
                status: 200, headers: ["Cache-Control": "no-store", "CDN-Cache-Control": value], body: "x")
        }
        let http = try Self.cache(clock, targeted: "CDN-Cache-Control")
        _ = try await http.response(for: origin.url())
        #expect(try await http.response(for: origin.url()).isFromCache == false)
        #expect(_HTTPTargetedField.isValid(["max-age=60, private, x=?1;a=1, y=:aGk=:, z=1.5, t=tok/en"]))
    }
}
