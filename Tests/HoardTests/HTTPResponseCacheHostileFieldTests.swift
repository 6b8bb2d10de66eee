import Foundation
import Synchronization
import Testing

@testable import Hoard

/// An origin without a network: each request is answered by `answer`, given the
/// request and how many requests came before it; every request is recorded.
final class ScriptedTransport: HTTPCacheTransport {
    private let answer: @Sendable (HTTPCacheRequest, Int) -> HTTPTransportResponse
    private let log = Mutex<[HTTPCacheRequest]>([])

    init(_ answer: @escaping @Sendable (HTTPCacheRequest, Int) -> HTTPTransportResponse) {
        self.answer = answer
    }

    /// Every request sent so far, oldest first.
    var requests: [HTTPCacheRequest] { log.withLock { $0 } }

    func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        let index = log.withLock { log in
            log.append(request)
            return log.count - 1
        }
        return answer(request, index)
    }
}

/// Field values at the edges of RFC 9111's grammar, and revalidations whose `304`
/// does not fit the stored response: each is answered as the RFC says.
@Suite("HTTP response cache: edge-case fields and mismatched revalidations")
struct HTTPResponseCacheHostileFieldTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let url = URL(string: "http://origin.test/resource")!

    static func cache(_ clock: ManualClock, _ origin: ScriptedTransport) throws -> HTTPResponseCache {
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-hostile-test")
        storage.localStores = .none
        return try HTTPResponseCache(configuration: .init(storage: storage), transport: origin, clock: clock)
    }

    @Test("Delta-seconds: leading zeros are kept, values past 2^31 count as 2^31, other text is no value")
    func deltaSecondsParsing() {
        #expect(HTTPCacheControl.deltaSeconds("000000000005000") == 5_000)
        #expect(HTTPCacheControl.deltaSeconds("99999999999999999999") == 1 << 31)
        #expect(HTTPCacheControl.deltaSeconds("2147483649") == 1 << 31)
        #expect(HTTPCacheControl.deltaSeconds("0") == 0)
        #expect(HTTPCacheControl.deltaSeconds("-5") == 0)
        #expect(HTTPCacheControl.deltaSeconds("abc") == nil)
        #expect(HTTPCacheControl.deltaSeconds("") == nil)
        #expect(HTTPCacheControl.deltaSeconds("1e3") == nil)
        #expect(HTTPCacheControl(["min-fresh=99999999999999999999"]).minFresh == 1 << 31)
    }

    @Test("Pragma: no-cache in a request without Cache-Control makes the cache revalidate")
    func pragmaNoCache() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { _, index in
            HTTPTransportResponse(
                statusCode: 200,
                headers: [
                    "Cache-Control": "max-age=3600", "Date": _HTTPDate.format(clock.now()), "ETag": "\"v\(index)\"",
                ],
                body: Data("v\(index)".utf8))
        }
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: Self.url)
        clock.advance(by: 1)
        _ = try await http.response(to: HTTPCacheRequest(url: Self.url, headers: ["Pragma": "no-cache"]))
        #expect(origin.requests.count == 2, "Pragma: no-cache reaches the origin")
        #expect(http.statistics.freshHits == 0)
        // With a Cache-Control of its own, the request's Pragma is ignored.
        _ = try await http.response(
            to: HTTPCacheRequest(url: Self.url, headers: ["Pragma": "no-cache", "Cache-Control": "max-stale=0"]))
        #expect(origin.requests.count == 2)
    }

    @Test("A min-fresh too large for an Int asks more freshness than any response has")
    func hugeMinFresh() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { _, index in
            HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=3600", "Date": _HTTPDate.format(clock.now())],
                body: Data("v\(index)".utf8))
        }
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: Self.url)
        let second = try await http.response(
            to: HTTPCacheRequest(url: Self.url, headers: ["Cache-Control": "min-fresh=99999999999999999999"]))
        #expect(second.isFromCache == false)
        #expect(origin.requests.count == 2)
    }

    @Test("A max-age too large for an Int keeps the response fresh")
    func hugeMaxAge() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { _, index in
            HTTPTransportResponse(
                statusCode: 200,
                headers: ["Cache-Control": "max-age=99999999999999999999", "Date": _HTTPDate.format(clock.now())],
                body: Data("v\(index)".utf8))
        }
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: Self.url)
        clock.advance(by: 10)
        #expect(try await http.response(for: Self.url).isFromCache)
        #expect(origin.requests.count == 1)
    }

    @Test("An Age with leading zeros keeps its value: a response that old is stale")
    func ageWithLeadingZeros() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { _, index in
            HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=3600", "Age": "000000000005000"],
                body: Data("v\(index)".utf8))
        }
        let http = try Self.cache(clock, origin)
        let first = try await http.response(for: Self.url)
        #expect(first.age(at: clock.now()) >= 5_000)
        let second = try await http.response(for: Self.url)
        #expect(second.isFromCache == false)
        #expect(origin.requests.count == 2)
    }

    @Test("A Vary brought by a 304 selects by the revalidating request, and replaces the stored response")
    func varyFrom304() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { request, index in
            let date = _HTTPDate.format(clock.now())
            if index == 0 {
                return HTTPTransportResponse(
                    statusCode: 200, headers: ["Cache-Control": "max-age=10", "Date": date, "ETag": "\"fr\""],
                    body: Data("bonjour".utf8))
            }
            if request.headers["if-none-match"] == "\"fr\"" {
                return HTTPTransportResponse(
                    statusCode: 304,
                    headers: [
                        "Cache-Control": "max-age=3600", "Date": date, "ETag": "\"fr\"", "Vary": "Accept-Language",
                    ],
                    body: Data())
            }
            return HTTPTransportResponse(
                statusCode: 200,
                headers: ["Cache-Control": "max-age=3600", "Date": date, "Vary": "Accept-Language", "ETag": "\"en\""],
                body: Data("hello".utf8))
        }
        let http = try Self.cache(clock, origin)
        let french = HTTPCacheRequest(url: Self.url, headers: ["Accept-Language": "fr"])
        #expect(try await http.response(to: french).body == Data("bonjour".utf8))
        clock.advance(by: 20)
        #expect(try await http.response(to: french).body == Data("bonjour".utf8))
        #expect(origin.requests.count == 2)
        let noLanguage = try await http.response(to: HTTPCacheRequest(url: Self.url))
        #expect(noLanguage.body == Data("hello".utf8), "the response selected by Accept-Language: fr is not used")
        let again = try await http.response(to: french)
        #expect(again.isFromCache && again.body == Data("bonjour".utf8), "the French request still selects it")
        #expect(origin.requests.count == 3)
    }

    @Test("only-if-cached with no-store does not reach the origin")
    func onlyIfCachedNoStore() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { _, _ in
            HTTPTransportResponse(statusCode: 200, headers: ["Cache-Control": "max-age=60"], body: Data("x".utf8))
        }
        let http = try Self.cache(clock, origin)
        let response = try await http.response(
            to: HTTPCacheRequest(url: Self.url, headers: ["Cache-Control": "only-if-cached, no-store"]))
        #expect(origin.requests.isEmpty)
        #expect(response.statusCode == 504)
    }

    @Test("A 304 with another strong ETag updates nothing: the response is asked for whole")
    func mismatchedValidator304() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { request, index in
            let date = _HTTPDate.format(clock.now())
            if index == 0 {
                return HTTPTransportResponse(
                    statusCode: 200, headers: ["Cache-Control": "max-age=10", "Date": date, "ETag": "\"v1\""],
                    body: Data("one".utf8))
            }
            if request.headers["if-none-match"] != nil {
                return HTTPTransportResponse(
                    statusCode: 304, headers: ["Cache-Control": "max-age=3600", "Date": date, "ETag": "\"v2\""],
                    body: Data())
            }
            return HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=3600", "Date": date, "ETag": "\"v2\""],
                body: Data("two".utf8))
        }
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: Self.url)
        clock.advance(by: 20)
        let second = try await http.response(for: Self.url)
        #expect(second.body == Data("two".utf8))
        #expect(origin.requests.map { $0.headers["if-none-match"] } == [nil, "\"v1\"", nil])
        let stored = try await http.storage.value(for: Self.url.absoluteString)
        #expect(stored?.responses.map(\.body) == [Data("two".utf8)], "\"one\" is never stored as \"v2\"")
        let third = try await http.response(for: Self.url)
        #expect(third.isFromCache && third.body == Data("two".utf8))
    }

    @Test("A 304 updates by its validators: a weak ETag matches weakly, a Last-Modified alone must be the same")
    func validatorSelection() {
        let stored = HTTPCachedResponse(
            url: Self.url, statusCode: 200,
            headers: ["ETag": "\"a\"", "Last-Modified": "Tue, 14 Nov 2023 22:13:20 GMT"], body: Data(),
            requestTime: Self.start, responseTime: Self.start, isFromCache: true)
        #expect(stored.isSelected(by: ["ETag": "\"a\""]))
        #expect(stored.isSelected(by: ["ETag": "W/\"a\""]))
        #expect(!stored.isSelected(by: ["ETag": "\"b\""]))
        #expect(stored.isSelected(by: ["Last-Modified": "Tue, 14 Nov 2023 22:13:20 GMT"]))
        #expect(!stored.isSelected(by: ["Last-Modified": "Wed, 15 Nov 2023 22:13:20 GMT"]))
        #expect(stored.isSelected(by: [:]))
        var weak = stored
        weak.headers["ETag"] = "W/\"a\""
        #expect(weak.isSelected(by: ["ETag": "W/\"a\""]))
        #expect(!weak.isSelected(by: ["ETag": "\"a\""]), "a strong validator selects only a response with it strong")
    }

    @Test(
        "A 304 (or a 200 to a HEAD) without Date or Age dates the stored response when it came: the earlier exchange's Date and Age no longer age it",
        arguments: ["GET", "HEAD"])
    func updateWithoutDateOrAge(_ method: String) async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { request, index in
            if index == 0 {
                return HTTPTransportResponse(
                    statusCode: 200,
                    headers: [
                        "Cache-Control": "max-age=10", "Date": _HTTPDate.format(clock.now()), "Age": "8",
                        "ETag": "\"v1\"",
                    ],
                    body: Data("one".utf8))
            }
            return HTTPTransportResponse(
                statusCode: request.method == "HEAD" ? 200 : 304, headers: ["ETag": "\"v1\""], body: Data())
        }
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: Self.url)
        clock.advance(by: 20)
        let revalidated = try await http.response(to: HTTPCacheRequest(method: method, url: Self.url))
        #expect(revalidated.statusCode == 200)
        #expect(revalidated[header: "age"] == "0")
        #expect(revalidated[header: "date"] == _HTTPDate.format(clock.now()))
        clock.advance(by: 5)
        let fresh = try await http.response(for: Self.url)
        #expect(fresh.isFromCache && fresh.body == Data("one".utf8))
        #expect(fresh[header: "age"] == "5")
        #expect(origin.requests.map(\.method) == ["GET", method], "fresh for ten seconds from the update")
    }

    @Test("A response without Date is dated when it arrived, forwarded and served from the cache with that Date")
    func responseWithoutDate() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { _, _ in
            HTTPTransportResponse(statusCode: 200, headers: ["Cache-Control": "max-age=60"], body: Data("one".utf8))
        }
        let http = try Self.cache(clock, origin)
        let arrived = _HTTPDate.format(clock.now())
        let forwarded = try await http.response(for: Self.url)
        #expect(forwarded[header: "date"] == arrived)
        clock.advance(by: 5)
        let stored = try await http.response(for: Self.url)
        #expect(stored.isFromCache)
        #expect(stored[header: "date"] == arrived)
        #expect(stored[header: "age"] == "5")
        #expect(origin.requests.count == 1)
    }

    @Test("A 304 with a strong ETag does not update a response stored with that tag weak: it is asked for whole")
    func strongNotModifiedKeepsWeakResponseApart() async throws {
        let clock = ManualClock(start: Self.start)
        let origin = ScriptedTransport { request, index in
            let date = _HTTPDate.format(clock.now())
            if index == 0 {
                return HTTPTransportResponse(
                    statusCode: 200,
                    headers: [
                        "Cache-Control": "max-age=10", "Date": date, "ETag": "W/\"a\"", "Content-Encoding": "gzip",
                    ],
                    body: Data("compressed".utf8))
            }
            if request.headers["if-none-match"] != nil {
                return HTTPTransportResponse(
                    statusCode: 304, headers: ["Cache-Control": "max-age=3600", "Date": date, "ETag": "\"a\""],
                    body: Data())
            }
            return HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=3600", "Date": date, "ETag": "\"a\""],
                body: Data("identity".utf8))
        }
        let http = try Self.cache(clock, origin)
        _ = try await http.response(for: Self.url)
        clock.advance(by: 20)
        let second = try await http.response(for: Self.url)
        #expect(second.body == Data("identity".utf8))
        #expect(second[header: "content-encoding"] == nil)
        #expect(origin.requests.map { $0.headers["if-none-match"] } == [nil, "W/\"a\"", nil])
        // A range of the strong "a" is cut from that representation's bytes, never from the weak one's.
        let range = try await http.response(
            to: HTTPCacheRequest(url: Self.url, headers: ["Range": "bytes=0-1", "If-Range": "\"a\""]))
        #expect(range.isFromCache)
        #expect(range.statusCode == 206)
        #expect(range.body == Data("id".utf8))
    }
}
