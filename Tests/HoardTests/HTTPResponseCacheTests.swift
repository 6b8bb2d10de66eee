import Foundation
import Synchronization
import Testing

@testable import Hoard

#if AsyncHTTPClient
import HoardAsyncHTTPClient
#endif

/// Each test runs a loopback origin whose answers it scripts, and counts the requests
/// that reach it.
@Suite("HTTP response cache (RFC 9111)", .timeLimit(.minutes(3)))
struct HTTPResponseCacheTests {
    /// A memory-only cache on `clock`.
    static func cache(
        _ clock: ManualClock, shared: Bool = true, transport: any HTTPCacheTransport = URLSessionHTTPTransport()
    ) throws -> HTTPResponseCache {
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-test")
        storage.localStores = .none
        return try HTTPResponseCache(
            configuration: .init(storage: storage, isShared: shared), transport: transport, clock: clock)
    }

    #if AsyncHTTPClient
    @Test("Over AsyncHTTPClient: a fresh hit, then a 304 revalidation, with the same request counts")
    func asyncHTTPClientTransport() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { request, _ in
            if request.headers["if-none-match"] == "\"a\"" {
                return LoopbackResponse(status: 304, headers: ["Cache-Control": "max-age=10", "ETag": "\"a\""])
            }
            return LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=10", "ETag": "\"a\""], body: "nio")
        }
        let http = try Self.cache(clock, transport: AsyncHTTPClientTransport())
        #expect(try await http.data(from: origin.url()) == Data("nio".utf8))
        #expect(try await http.response(for: origin.url()).isFromCache)
        #expect(origin.requests.count == 1)
        clock.advance(by: 11)
        let revalidated = try await http.response(for: origin.url())
        #expect(revalidated.body == Data("nio".utf8))
        #expect(origin.requests.count == 2)
        #expect(http.statistics.revalidations == 1)
    }
    #endif

    /// An origin that answers every path with `headers` (and a Date from `clock`),
    /// the body `body`, and records each request's header fields.
    final class Origin: Sendable {
        /// Every request the origin received, in order.
        final class Log: Sendable {
            let requests = Mutex<[LoopbackRequest]>([])
        }

        let server: LoopbackHTTPServer
        let log = Log()

        init(clock: ManualClock, _ answer: @escaping @Sendable (LoopbackRequest, Int) -> LoopbackResponse) throws {
            let log = self.log
            server = try LoopbackHTTPServer { request in
                let index = log.requests.withLock { requests in
                    requests.append(request)
                    return requests.count - 1
                }
                var response = answer(request, index)
                response.headers["Date"] = _HTTPDate.format(clock.now())
                return response
            }
        }

        var requests: [LoopbackRequest] { log.requests.withLock { $0 } }
        func url(_ path: String = "/resource") -> URL { server.url(path) }
        deinit { server.stop() }
    }

    @Test("A fresh response is served with no request to the origin")
    func freshHit() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60"], body: "fresh")
        }
        let http = try Self.cache(clock)
        let first = try await http.response(for: origin.url())
        #expect(first.body == Data("fresh".utf8))
        #expect(!first.isFromCache)
        clock.advance(by: 59)
        let second = try await http.response(for: origin.url())
        #expect(second.isFromCache)
        #expect(second.body == Data("fresh".utf8))
        #expect(origin.requests.count == 1)
        #expect(http.statistics.freshHits == 1)
    }

    @Test("A stale response is revalidated with its validators; a 304 refreshes it without a body")
    func revalidationWith304() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { request, _ in
            if request.headers["if-none-match"] == "\"v1\"" {
                return LoopbackResponse(status: 304, headers: ["Cache-Control": "max-age=30", "ETag": "\"v1\""])
            }
            return LoopbackResponse(
                status: 200,
                headers: [
                    "Cache-Control": "max-age=10", "ETag": "\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT",
                ],
                body: "body v1")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 11)
        let revalidated = try await http.response(for: origin.url())
        #expect(revalidated.statusCode == 200)
        #expect(revalidated.body == Data("body v1".utf8))
        #expect(revalidated.isFromCache)
        #expect(revalidated[header: "cache-control"] == "max-age=30", "the 304's headers replace the stored ones")
        let requests = origin.requests
        #expect(requests.count == 2)
        #expect(requests[1].headers["if-none-match"] == "\"v1\"")
        #expect(requests[1].headers["if-modified-since"] == "Sun, 06 Nov 1994 08:49:37 GMT")
        // Fresh again for the 30 seconds the 304 gave
        clock.advance(by: 29)
        #expect(try await http.response(for: origin.url()).isFromCache)
        #expect(origin.requests.count == 2)
        #expect(http.statistics.revalidations == 1)
    }

    @Test("no-store is never stored, in the response or the request")
    func noStore() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { request, _ in
            request.path == "/secret"
                ? LoopbackResponse(status: 200, headers: ["Cache-Control": "no-store, max-age=60"], body: "secret")
                : LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60"], body: "public")
        }
        let http = try Self.cache(clock)
        for _ in 0..<3 { _ = try await http.response(for: origin.url("/secret")) }
        #expect(origin.requests.count == 3)
        for _ in 0..<2 {
            _ = try await http.response(for: origin.url("/public"), headers: ["Cache-Control": "no-store"])
        }
        #expect(origin.requests.count == 5)
        #expect(try await http.storage.value(for: origin.url("/secret").absoluteString) == nil)
    }

    @Test("Vary: Accept-Language keeps one response per language")
    func vary() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { request, _ in
            LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"],
                body: "hello in \(request.headers["accept-language"] ?? "none")")
        }
        let http = try Self.cache(clock)
        let english = try await http.response(for: origin.url(), headers: ["Accept-Language": "en"])
        let french = try await http.response(for: origin.url(), headers: ["Accept-Language": "fr"])
        let englishAgain = try await http.response(for: origin.url(), headers: ["Accept-Language": "en"])
        #expect(String(decoding: english.body, as: UTF8.self) == "hello in en")
        #expect(String(decoding: french.body, as: UTF8.self) == "hello in fr")
        #expect(englishAgain.body == english.body)
        #expect(englishAgain.isFromCache)
        #expect(origin.requests.count == 2)
        #expect(try await http.storage.value(for: origin.url().absoluteString)?.responses.count == 2)
    }

    @Test("Vary: * is never reused")
    func varyStar() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Vary": "*"], body: "varies")
        }
        let http = try Self.cache(clock)
        for _ in 0..<2 { _ = try await http.response(for: origin.url()) }
        #expect(origin.requests.count == 2)
    }

    @Test("A response to a request with Authorization is stored by a shared cache only when it allows it")
    func authorization() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { request, _ in
            request.path == "/public"
                ? LoopbackResponse(status: 200, headers: ["Cache-Control": "public, max-age=60"], body: "for all")
                : LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=60"], body: "for you")
        }
        let http = try Self.cache(clock)
        let credentials = ["Authorization": "Bearer token"]
        for _ in 0..<2 { _ = try await http.response(for: origin.url("/mine"), headers: credentials) }
        #expect(origin.requests.count == 2)
        for _ in 0..<2 { _ = try await http.response(for: origin.url("/public"), headers: credentials) }
        #expect(origin.requests.count == 3)

        // A private cache may store it; a shared one never stores `private`.
        let privateCache = try Self.cache(clock, shared: false)
        for _ in 0..<2 { _ = try await privateCache.response(for: origin.url("/mine"), headers: credentials) }
        #expect(origin.requests.count == 4)
    }

    @Test("stale-if-error serves the stale response when the origin answers 500; without it the 500 is returned")
    func staleIfError() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let failing = Atomic<Bool>(false)
        let origin = try Origin(clock: clock) { request, _ in
            if failing.load(ordering: .relaxed) { return LoopbackResponse(status: 500, body: "down") }
            let control = request.path == "/tolerant" ? "max-age=1, stale-if-error=60" : "max-age=1"
            return LoopbackResponse(status: 200, headers: ["Cache-Control": control], body: "ok")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url("/tolerant"))
        _ = try await http.response(for: origin.url("/strict"))
        clock.advance(by: 5)
        failing.store(true, ordering: .relaxed)
        let tolerant = try await http.response(for: origin.url("/tolerant"))
        #expect(tolerant.statusCode == 200)
        #expect(tolerant.body == Data("ok".utf8))
        let strict = try await http.response(for: origin.url("/strict"))
        #expect(strict.statusCode == 500)
        #expect(origin.requests.count == 4)
        await #expect(throws: HoardError.self) { try await http.data(from: origin.url("/strict")) }
        #expect(http.statistics.staleHits == 1)
    }

    @Test("stale-while-revalidate serves the stale response at once and revalidates once in the background")
    func staleWhileRevalidate() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { _, index in
            LoopbackResponse(
                status: 200, headers: ["Cache-Control": "max-age=1, stale-while-revalidate=60"],
                body: "version \(index)")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 5)
        let stale = try await http.response(for: origin.url())
        #expect(stale.body == Data("version 0".utf8))
        #expect(stale.isFromCache)
        while http.statistics.fetches < 2 { await Task.yield() }  // the background request's event
        let refreshed = try await http.response(for: origin.url())
        #expect(refreshed.body == Data("version 1".utf8))
        #expect(origin.requests.count == 2)
    }

    @Test("Stale reads that race start one background revalidation, whose failure is counted once")
    func staleReadsShareOneRevalidation() async throws {
        // Given stale responses whose revalidation is held, then fails
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let transport = HeldRevalidationTransport(clock: clock)
        let http = try Self.cache(clock, transport: transport)
        let urls = try (0..<50).map { try #require(URL(string: "http://origin.test/\($0)")) }
        for url in urls { _ = try await http.response(for: url) }
        clock.advance(by: 5)

        // When each is read twice, back to back, while its revalidation is held
        for url in urls {
            #expect(try await http.response(for: url).isFromCache)
            #expect(try await http.response(for: url).isFromCache)
        }
        #expect(await CacheTest.eventually { transport.revalidations.calls == urls.count })
        transport.revalidations.open()

        // Then each was revalidated once, and its failure counted once
        #expect(await CacheTest.eventually { http.statistics.backgroundFailures >= urls.count })
        #expect(http.statistics.backgroundFailures == urls.count)
        #expect(http.statistics.coalescedWaits == 0)
        #expect(transport.revalidations.calls == urls.count)
    }

    @Test("must-revalidate forbids serving stale, even when the client accepts it")
    func mustRevalidate() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { _, index in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=1, must-revalidate"], body: "v\(index)")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 5)
        let response = try await http.response(for: origin.url(), headers: ["Cache-Control": "max-stale=600"])
        #expect(response.body == Data("v1".utf8))
        #expect(origin.requests.count == 2)
    }

    @Test("In a shared cache, s-maxage forbids serving stale: no max-stale, stale-while-revalidate or stale-if-error")
    func sharedMaxAgeImpliesProxyRevalidate() async throws {
        // Given a response fresh for a second in a shared cache, which would allow
        // ten minutes of stale serving were it not for s-maxage
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let failing = Atomic<Bool>(false)
        let origin = try Origin(clock: clock) { _, index in
            if failing.load(ordering: .relaxed) { return LoopbackResponse(status: 500, body: "down") }
            return LoopbackResponse(
                status: 200, headers: ["Cache-Control": "s-maxage=1, stale-while-revalidate=600, stale-if-error=600"],
                body: "v\(index)")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())

        // When it is stale and the client accepts stale responses, it is revalidated
        clock.advance(by: 5)
        let acceptingStale = try await http.response(for: origin.url(), headers: ["Cache-Control": "max-stale=600"])
        #expect(acceptingStale.body == Data("v1".utf8))
        #expect(origin.requests.count == 2)

        // and stale-while-revalidate does not serve it stale either
        clock.advance(by: 5)
        let plain = try await http.response(for: origin.url())
        #expect(plain.body == Data("v2".utf8))
        #expect(origin.requests.count == 3)

        // nor does stale-if-error when the origin answers 500
        clock.advance(by: 5)
        failing.store(true, ordering: .relaxed)
        let failed = try await http.response(for: origin.url())
        #expect(failed.statusCode == 500)
        #expect(origin.requests.count == 4)
        #expect(http.statistics.staleHits == 0)
    }

    @Test("A private cache ignores s-maxage: the client's max-stale is honoured")
    func privateCacheIgnoresSharedMaxAge() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let origin = try Origin(clock: clock) { _, index in
            LoopbackResponse(status: 200, headers: ["Cache-Control": "max-age=1, s-maxage=1"], body: "v\(index)")
        }
        let http = try Self.cache(clock, shared: false)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 5)
        let stale = try await http.response(for: origin.url(), headers: ["Cache-Control": "max-stale=600"])
        #expect(stale.body == Data("v0".utf8))
        #expect(stale.isFromCache)
        #expect(origin.requests.count == 1)
        #expect(http.statistics.staleHits == 1)
    }

    @Test("Without an explicit lifetime, a tenth of the time since Last-Modified, at most a day")
    func heuristicFreshness() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let modified = _HTTPDate.format(clock.now().addingTimeInterval(-20 * 86_400))
        let origin = try Origin(clock: clock) { _, _ in
            LoopbackResponse(status: 200, headers: ["Last-Modified": modified], body: "old page")
        }
        let http = try Self.cache(clock)
        _ = try await http.response(for: origin.url())
        clock.advance(by: 86_000)
        #expect(try await http.response(for: origin.url()).isFromCache)
        #expect(origin.requests.count == 1)
        clock.advance(by: 500)  // past the one-day cap (20 days / 10 = 2 days, capped)
        _ = try await http.response(for: origin.url())
        #expect(origin.requests.count == 2)
        #expect(origin.requests[1].headers["if-modified-since"] == modified)
    }

    @Test("100 concurrent requests for one URL make one request to the origin")
    func coalescing() async throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let release = DispatchSemaphore(value: 0)
        let origin = try Origin(clock: clock) { _, _ in
            release.wait()  // until every caller is waiting for this one request
            return LoopbackResponse(status: 200, headers: ["Cache-Control": "no-store"], body: "shared")
        }
        let http = try Self.cache(clock)
        try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<100 { group.addTask { try await http.data(from: origin.url()) } }
            while http.statistics.coalescedWaits < 99 { await Task.yield() }
            release.signal()
            for try await body in group { #expect(body == Data("shared".utf8)) }
        }
        #expect(origin.requests.count == 1)
        #expect(http.statistics.coalescedWaits == 99)
    }

    @Test("Responses survive in a disk store; bytes that are not a stored response are a miss, not a crash")
    func diskRoundTrip() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
            let origin = try Origin(clock: clock) { _, _ in
                LoopbackResponse(
                    status: 200, headers: ["Cache-Control": "max-age=60", "Content-Type": "text/plain"], body: "kept")
            }
            let store = try DiskStore(directory: directory)
            func cache() throws -> HTTPResponseCache {
                var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-disk")
                storage.localStores = .stores([store])
                return try HTTPResponseCache(configuration: .init(storage: storage), clock: clock)
            }
            let first = try cache()
            _ = try await first.response(for: origin.url())
            await first.storage.flush()
            let second = try cache()
            let reloaded = try await second.response(for: origin.url())
            #expect(reloaded.isFromCache)
            #expect(reloaded.body == Data("kept".utf8))
            #expect(reloaded[header: "Content-Type"] == "text/plain")
            #expect(origin.requests.count == 1)

            try store.set(
                Data("not a stored response".utf8), for: origin.url("/other").absoluteString, in: "http-disk",
                storedAt: clock.now(), expiresAt: nil)
            let third = try cache()
            #expect(try await third.response(for: origin.url("/other")).body == Data("kept".utf8))
            #expect(origin.requests.count == 2)
        }
    }

    @Test("Cache-Control parsing: quoted values, case, repeated directives, bad numbers")
    func cacheControlParsing() {
        let control = HTTPCacheControl([
            "Max-Age=60, no-cache=\"Set-Cookie, X\"", "S-MAXAGE=120, stale-if-error=abc, PRIVATE",
        ])
        #expect(control.maxAge == 60)
        #expect(control.sharedMaxAge == 120)
        #expect(control.noCache)
        #expect(control.isPrivate)
        #expect(control.staleIfError == nil)
        #expect(HTTPCacheControl(["max-stale"]).maxStale == Int.max)
        #expect(_HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(_HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(_HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
        #expect(_HTTPDate.parse("0") == nil)
        #expect(_HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}

/// A transport that answers the first request for a URL with a response fresh for
/// a second and then servable stale for a minute, and holds every later request
/// at ``revalidations`` until it is opened, then fails it.
final class HeldRevalidationTransport: HTTPCacheTransport {
    struct Unreachable: Error {}

    let revalidations = FetchProbe(open: false)
    private let clock: ManualClock
    private let answered = Mutex<Set<URL>>([])

    init(clock: ManualClock) { self.clock = clock }

    func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        guard answered.withLock({ $0.insert(request.url).inserted }) else {
            await revalidations.enter()
            throw Unreachable()
        }
        return HTTPTransportResponse(
            statusCode: 200,
            headers: ["Cache-Control": "max-age=1, stale-while-revalidate=60", "Date": _HTTPDate.format(clock.now())],
            body: Data("first".utf8))
    }
}
