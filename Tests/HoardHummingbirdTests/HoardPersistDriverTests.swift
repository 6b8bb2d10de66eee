#if Hummingbird
import Foundation
import Hoard
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HoardHummingbird

/// Hummingbird's own persist scenarios (its `PersistTests`), through a real
/// `Application`, with the Hoard driver; time moves on a `ManualClock`.
@Suite("Hummingbird PersistDriver", .timeLimit(.minutes(3)))
struct HoardPersistDriverTests {
    static func driver(_ clock: ManualClock, store: DiskStore? = nil) throws -> HoardPersistDriver {
        var configuration = Cache<String, Data>.Configuration(name: "persist")
        configuration.localStores = store.map { .stores([$0]) } ?? .none
        return try HoardPersistDriver(configuration: configuration, clock: clock)
    }

    /// The routes of Hummingbird's persist tests, plus `create`.
    static func router(_ persist: HoardPersistDriver) -> Router<BasicRequestContext> {
        let router = Router()
        router.put("/persist/:tag") { request, context -> HTTPResponse.Status in
            let buffer = try await request.body.collect(upTo: .max)
            try await persist.set(key: try context.parameters.require("tag"), value: String(buffer: buffer))
            return .ok
        }
        router.put("/persist/:tag/:time") { request, context -> HTTPResponse.Status in
            guard let time = context.parameters.get("time", as: Int.self) else { throw HTTPError(.badRequest) }
            let buffer = try await request.body.collect(upTo: .max)
            try await persist.set(
                key: try context.parameters.require("tag"), value: String(buffer: buffer), expires: .seconds(time))
            return .ok
        }
        router.put("/create/:tag") { request, context -> HTTPResponse.Status in
            let buffer = try await request.body.collect(upTo: .max)
            do {
                try await persist.create(key: try context.parameters.require("tag"), value: String(buffer: buffer))
            } catch let error as PersistError where error == .duplicate {
                throw HTTPError(.conflict)
            }
            return .ok
        }
        router.put("/number/:tag") { _, context -> HTTPResponse.Status in
            // JSON cannot encode NaN.
            try await persist.set(key: try context.parameters.require("tag"), value: Double.nan)
            return .ok
        }
        router.get("/persist/:tag") { _, context -> String? in
            try await persist.get(key: try context.parameters.require("tag"), as: String.self)
        }
        router.get("/number/:tag") { _, context -> String? in
            try await persist.get(key: try context.parameters.require("tag"), as: Int.self).map(String.init)
        }
        router.get("/persist/:tag/ttl") { _, context -> String? in
            try await persist.getWithTTL(key: try context.parameters.require("tag"), as: String.self)?.ttl
                .map { String($0.components.seconds) }
        }
        router.delete("/persist/:tag") { _, context -> HTTPResponse.Status in
            try await persist.remove(key: try context.parameters.require("tag"))
            return .noContent
        }
        return router
    }

    static func body(_ text: String) -> ByteBuffer { ByteBufferAllocator().buffer(string: text) }

    @Test("set, then get; set twice keeps the second; create after create is a conflict; remove")
    func setCreateRemove() async throws {
        let persist = try Self.driver(ManualClock())
        let app = Application(responder: Self.router(persist).buildResponder())
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("one")) { _ in }
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("two")) { _ in }
            try await client.execute(uri: "/persist/a", method: .get) { #expect(String(buffer: $0.body) == "two") }
            try await client.execute(uri: "/create/b", method: .put, body: Self.body("first")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/create/b", method: .put, body: Self.body("second")) {
                #expect($0.status == .conflict)
            }
            try await client.execute(uri: "/persist/b", method: .get) { #expect(String(buffer: $0.body) == "first") }
            try await client.execute(uri: "/persist/b", method: .delete) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/b", method: .get) { #expect($0.status == .noContent) }
        }
    }

    @Test("Values expire on the driver's clock; the TTL counts down; set without expiry keeps the old one")
    func expiry() async throws {
        let clock = ManualClock()
        let persist = try Self.driver(clock)
        let app = Application(responder: Self.router(persist).buildResponder())
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/short/0", method: .put, body: Self.body("gone")) { _ in }
            try await client.execute(uri: "/persist/long/10", method: .put, body: Self.body("kept")) { _ in }
            try await client.execute(uri: "/persist/long/ttl", method: .get) {
                #expect(String(buffer: $0.body) == "10")
            }
            clock.advance(by: 1)
            try await client.execute(uri: "/persist/short", method: .get) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/long", method: .get) { #expect(String(buffer: $0.body) == "kept") }
            try await client.execute(uri: "/persist/long/ttl", method: .get) { #expect(String(buffer: $0.body) == "9") }
            // A set without expiry keeps the 9 seconds left
            try await client.execute(uri: "/persist/long", method: .put, body: Self.body("updated")) { _ in }
            try await client.execute(uri: "/persist/long/ttl", method: .get) { #expect(String(buffer: $0.body) == "9") }
            clock.advance(by: 9)
            try await client.execute(uri: "/persist/long", method: .get) { #expect($0.status == .noContent) }
        }
    }

    @Test("A value of another type reads as nil and stays; a value that cannot be encoded fails that request only")
    func wrongTypeAndBadValue() async throws {
        let persist = try Self.driver(ManualClock())
        let app = Application(responder: Self.router(persist).buildResponder())
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/text", method: .put, body: Self.body("not a number")) { _ in }
            try await client.execute(uri: "/number/text", method: .get) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/text", method: .get) {
                #expect(String(buffer: $0.body) == "not a number")
            }
            try await client.execute(uri: "/number/bad", method: .put) { #expect($0.status == .internalServerError) }
            try await client.execute(uri: "/persist/text", method: .get) { #expect($0.status == .ok) }
        }
    }

    @Test("Over a disk store, values outlive the driver; run() flushes queued writes on graceful shutdown")
    func diskAndShutdown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-persist-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(start: Date())
        let store = try DiskStore(directory: directory, clock: clock)
        let first = try Self.driver(clock, store: store)
        try await first.set(key: "session", value: ["user": 42], expires: .seconds(60))
        try await first.shutdown()
        let second = try Self.driver(clock, store: store)
        #expect(try await second.get(key: "session", as: [String: Int].self) == ["user": 42])
        #expect(try await second.getWithTTL(key: "session", as: [String: Int].self)?.ttl == .seconds(60))
    }

    struct Stamped: Codable, Sendable, Equatable {
        var name: String
        var at: Date
    }

    @Test("Dates are stored as ISO-8601 strings; a value stored with JSONEncoder's default dates still reads")
    func isoDates() async throws {
        let persist = try Self.driver(ManualClock())
        let date = Date(timeIntervalSince1970: 1_800_000_000.25)
        try await persist.set(key: "new", value: Stamped(name: "a", at: date))
        let stored = try #require(try await persist.cache.value(for: "new"))
        #expect(String(decoding: stored, as: UTF8.self).contains("\"2027-01-15T08:00:00.250Z\""))
        #expect(try await persist.get(key: "new", as: Stamped.self) == Stamped(name: "a", at: date))

        // Stored the way the driver wrote it before: seconds since 2001.
        let old = try JSONEncoder().encode(Stamped(name: "b", at: date))
        #expect(String(decoding: old, as: UTF8.self).contains("\"at\":8"))
        try await persist.cache.set(old, for: "old")
        #expect(try await persist.get(key: "old", as: Stamped.self) == Stamped(name: "b", at: date))
        #expect(try await persist.getWithTTL(key: "old", as: Stamped.self)?.object == Stamped(name: "b", at: date))
        await persist.flush()
    }

    @Test("getWithTTL of an expiry too far for Int64 milliseconds is the longest Duration of them, not a trap")
    func farExpiries() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-persist-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(start: Date())
        let store = try DiskStore(directory: directory, clock: clock)
        let first = try Self.driver(clock, store: store)
        let longest = Duration.milliseconds(Int64.max)
        try await first.set(key: "max", value: "v", expires: .seconds(Int64.max))
        let value = try JSONEncoder().encode("v")
        try await first.cache.set(value, for: "greatest", expires: .after(.greatestFiniteMagnitude))
        try await first.cache.set(value, for: "infinite", expires: .after(.infinity))
        try await first.shutdown()
        // Read back from the disk store by a second driver, as after a restart.
        let second = try Self.driver(clock, store: store)
        // An infinite lifetime reads back from disk as an infinitely far expiry.
        for key in ["max", "greatest", "infinite"] {
            let read = try await second.getWithTTL(key: key, as: String.self)
            #expect(read?.object == "v", "\(key)")
            #expect(read?.ttl == longest, "\(key)")
        }
    }

    @Test(
        "The time left is whole milliseconds within .zero...milliseconds(Int64.max); NaN is none",
        arguments: [
            (Double.infinity, Duration?.some(.milliseconds(Int64.max))),
            // Redis's clamped expiry (Int64.max milliseconds since 1970), read at 1970.
            (Double(Int64.max) / 1000, .milliseconds(Int64.max)), (.greatestFiniteMagnitude, .milliseconds(Int64.max)),
            (1.5, .milliseconds(1_500)), (0.000_4, .zero), (-10, .zero), (-Double.infinity, .zero), (.nan, nil),
        ])
    func timeLeft(_ expiresAt: Double, _ expected: Duration?) {
        let now = Date(timeIntervalSince1970: 0)
        #expect(HoardPersistDriver.timeLeft(until: Date(timeIntervalSince1970: expiresAt), now: now) == expected)
    }

    @Test("A store directory that cannot be created stops the driver at startup with a clear error")
    func badDirectory() throws {
        var configuration = Cache<String, Data>.Configuration(name: "persist")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-not-a-dir-\(UUID())")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8))
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(throws: HoardError.self) {
            configuration.localStores = .stores([try DiskStore(directory: file.appendingPathComponent("store"))])
        }
    }
}
#endif
