import Foundation
import Hoard
import Testing

@Suite("HTTP cache", .timeLimit(.minutes(3)))
struct CacheHTTPTests {
    @Test("Downloads once over loopback, serves from memory after, and fails on non-2xx")
    func downloads() async throws {
        let server = try LoopbackHTTPServer(routes: [
            "/hello?lang=en": (200, "hello"),
            "/hello?lang=fr": (200, "bonjour"),
            "/gone": (404, "nope"),
        ])
        defer { server.stop() }
        var configuration = Cache<URL, Data>.Configuration(name: "http-test")
        configuration.localStores = .none
        let cache = try Cache.http(configuration: configuration)

        #expect(try await cache.value(for: server.url("/hello?lang=en")) == Data("hello".utf8))
        #expect(try await cache.value(for: server.url("/hello?lang=en")) == Data("hello".utf8))
        #expect(server.requests(to: "/hello?lang=en") == 1)
        #expect(
            try await cache.value(for: server.url("/hello?lang=fr")) == Data("bonjour".utf8),
            "a different query is a different key")

        do {
            _ = try await cache.value(for: server.url("/gone"))
            Issue.record("a 404 must throw")
        } catch let error as HoardError {
            #expect(error.code == .httpFailed)
            #expect(error.description.contains("404"))
        }
        #expect(cache[server.url("/gone")] == nil, "nothing stored after a failure")
    }

    @Test("Cache.http() and HTTPResponseCache.data(from:) fail a non-2xx status with the same error")
    func nonSuccessIsOneError() async throws {
        let server = try LoopbackHTTPServer(routes: ["/teapot": (418, "short and stout"), "/ok": (204, "")])
        defer { server.stop() }
        var configuration = Cache<URL, Data>.Configuration(name: "http-status-test")
        configuration.localStores = .none
        let cache = try Cache.http(configuration: configuration)
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-status-responses")
        storage.localStores = .none
        let http = try HTTPResponseCache(configuration: .init(storage: storage))

        let url = server.url("/teapot")
        let fromCache = await #expect(throws: HoardError.self) { try await cache.value(for: url) }
        let fromHTTP = await #expect(throws: HoardError.self) { try await http.data(from: url) }
        for error in [fromCache, fromHTTP] {
            #expect(error?.code == .httpFailed)
            #expect(error?.message == "the server answered HTTP 418 for \(url.absoluteString)")
            #expect(error?.key == url.absoluteString)
        }
        #expect(try await cache.value(for: server.url("/ok")) == Data(), "every 2xx is a body, 204 included")
        #expect(try await http.data(from: server.url("/ok")) == Data())
    }
}
