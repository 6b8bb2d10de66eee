#if Vapor
import Foundation
import Hoard
import HoardVapor
import Testing
import Vapor
import VaporTesting

/// Vapor's cache API through a real `Application`, backed by Hoard; time moves on a
/// `ManualClock`.
@Suite("Vapor Cache", .timeLimit(.minutes(3)))
struct HoardVaporCacheTests {
    static func hoard(_ clock: ManualClock) throws -> Hoard.Cache<String, Data> {
        var configuration = Hoard.Cache<String, Data>.Configuration(name: "vapor")
        configuration.localStores = .none
        return try Hoard.Cache<String, Data>(configuration: configuration, clock: clock)
    }

    static func routes(_ app: Application) {
        app.get("set", ":key", ":value", ":seconds") { request async throws -> HTTPStatus in
            let seconds = request.parameters.get("seconds", as: Int.self) ?? 0
            try await request.cache.set(
                request.parameters.get("key")!, to: request.parameters.get("value")!,
                expiresIn: seconds > 0 ? .seconds(seconds) : nil)
            return .ok
        }
        app.get("get", ":key") { request async throws -> String in
            try await request.cache.get(request.parameters.get("key")!, as: String.self) ?? "none"
        }
        app.get("number", ":key") { request async throws -> String in
            try await request.cache.get(request.parameters.get("key")!, as: Int.self).map(String.init) ?? "none"
        }
        app.get("delete", ":key") { request async throws -> HTTPStatus in
            try await request.cache.delete(request.parameters.get("key")!)
            return .ok
        }
    }

    static func text(_ response: TestingHTTPResponse) -> String { String(buffer: response.body) }

    @Test("get, set with and without expiry, delete, through app.caches.use(.hoard(...))")
    func roundTrip() async throws {
        let clock = ManualClock()
        let hoard = try Self.hoard(clock)
        try await withApp { app in
            app.caches.use(.hoard(hoard))
            Self.routes(app)
            let tester = try app.testing()
            try await tester.test(.GET, "set/a/hello/10") { #expect($0.status == .ok) }
            try await tester.test(.GET, "set/b/forever/0") { #expect($0.status == .ok) }
            try await tester.test(.GET, "get/a") { #expect(Self.text($0) == "hello") }
            clock.advance(by: 11)
            try await tester.test(.GET, "get/a") { #expect(Self.text($0) == "none") }
            try await tester.test(.GET, "get/b") { #expect(Self.text($0) == "forever") }
            try await tester.test(.GET, "delete/b") { #expect($0.status == .ok) }
            try await tester.test(.GET, "get/b") { #expect(Self.text($0) == "none") }
            #expect(try await app.cache.get("b", as: String.self) == nil)
            // The values are the Hoard cache's
            try await app.cache.set("direct", to: "from the app")
            #expect(try await hoard.value(for: "direct") == Data("\"from the app\"".utf8))
        }
    }

    @Test("A value of another type reads as nil and stays stored")
    func wrongType() async throws {
        let clock = ManualClock()
        try await withApp { app in
            app.caches.use(.hoard(try Self.hoard(clock)))
            Self.routes(app)
            let tester = try app.testing()
            try await tester.test(.GET, "set/word/hello/0") { _ in }
            try await tester.test(.GET, "number/word") { #expect(Self.text($0) == "none") }
            try await tester.test(.GET, "get/word") { #expect(Self.text($0) == "hello") }
        }
    }

    @Test("A value that cannot be encoded fails that call with the encoder's error; the cache keeps working")
    func unencodable() async throws {
        try await withApp { app in
            app.caches.use(.hoard(try Self.hoard(ManualClock())))
            await #expect(throws: EncodingError.self) { try await app.cache.set("nan", to: Double.nan) }
            try await app.cache.set("fine", to: 1)
            #expect(try await app.cache.get("fine", as: Int.self) == 1)
        }
    }

    @Test("An invalid configuration fails at startup with a clear error")
    func invalidConfiguration() async throws {
        var configuration = Hoard.Cache<String, Data>.Configuration(name: "vapor")
        configuration.memory = .init(countLimit: 0)
        #expect(throws: HoardError.self) { try Application.Caches.Provider.hoard(configuration: configuration) }
    }
}
#endif
