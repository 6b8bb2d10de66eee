import Foundation
import Hoard
import Synchronization
import Testing

@Suite("Cache tiers", .timeLimit(.minutes(3)))
struct CacheTests {
    @Test("A memory-only cache reads, writes and removes through its subscript")
    func memoryOnly() async throws {
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration())
        #expect(cache["a"] == nil)
        cache["a"] = 1
        #expect(cache["a"] == 1)
        #expect(try await cache.value(for: "a") == 1)
        cache["a"] = nil
        #expect(cache["a"] == nil)
        #expect(Self.synchronousDefault(cache) == 7)
        #expect(await cache.value(for: "a", default: 8) == 8)
    }

    static func synchronousDefault(_ cache: Cache<String, Int>) -> Int {
        cache.cachedValue(for: "a", default: 7)
    }

    @Test("A new Cache on the same store reads what the previous one wrote and flushed")
    func survivesRestart() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            do {
                let cache = try Cache<String, String>(
                    configuration: CacheTest.configuration(disk: try DiskStore(directory: directory)))
                cache["greeting"] = "hello"
                try await cache.set("world", for: "subject")
                await cache.flush()
            }
            let reopened = try Cache<String, String>(
                configuration: CacheTest.configuration(disk: try DiskStore(directory: directory)))
            #expect(reopened["greeting"] == "hello")
            #expect(reopened["subject"] == "world")
        }
    }

    @Test("A disk hit is promoted into memory")
    func diskHitIsPromoted() throws {
        try DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("stored".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            let cache = try Cache<String, String>(configuration: CacheTest.configuration(disk: disk))
            #expect(cache.memoryCount == 0)
            #expect(cache["k"] == "stored")
            #expect(cache.memoryCount == 1)
            #expect(cache["k"] == "stored")
            let statistics = cache.statistics
            #expect(statistics.local.hits == 1)
            #expect(statistics.memory.promotions == 1)
            #expect(statistics.memory.hits == 1)
            #expect(statistics.memory.misses == 1)
        }
    }

    @Test("entry(for:) gives the stored date and expiry, and an entry can be written back as it is")
    func entries() async throws {
        let clock = ManualClock()
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory, clock: clock)
            let cache = try Cache<String, Int>(configuration: CacheTest.configuration(disk: disk), clock: clock)
            try await cache.set(5, for: "k", expires: .seconds(100))
            let entry = try #require(cache.cachedEntry(for: "k"))
            #expect(entry.value == 5)
            #expect(entry.storedAt == clock.now())
            #expect(entry.expiresAt == clock.now().addingTimeInterval(100))

            let other = try Cache<String, Int>(
                configuration: CacheTest.configuration("other", disk: disk), clock: clock)
            try await other.set(entry, for: "k")
            clock.advance(by: 50)
            #expect(try await other.entry(for: "k") == entry)
            clock.advance(by: 51)
            #expect(other["k"] == nil)
        }
    }

    @Test("Bytes on disk that do not decode as the value type are a miss and reported, and stay")
    func undecodableEntry() throws {
        try DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("not json".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            let failures = FailureLog()
            var configuration: Cache<String, [Int]>.Configuration = CacheTest.configuration(disk: disk)
            configuration.onError = { failures.append($0) }
            let cache = try Cache<String, [Int]>(configuration: configuration)
            #expect(cache["k"] == nil)
            #expect(
                try disk.entry(for: "k", in: "test")?.data == Data("not json".utf8), "intact bytes are not destroyed")
            let failure = try #require(failures.all.first)
            #expect(failure.key == "k")
            #expect(failure.operation == .decode)
            #expect(failure.tier == .local(0))
            #expect(cache.statistics.decodeFailures == 1)
            #expect(cache.statistics.errors == 1)
        }
    }

    @Test("maxAge and newerThan skip old entries; with a fetcher a too-old entry is refetched")
    func freshness() async throws {
        let clock = ManualClock()
        let probe = FetchProbe()
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration(), clock: clock) { _ in
            await probe.enter()
            return probe.calls * 10
        }
        #expect(try await cache.value(for: "k") == 10)
        clock.advance(by: 30)
        #expect(try await cache.value(for: "k", maxAge: 60) == 10)
        #expect(cache["k", maxAge: 10] == nil)
        #expect(try await cache.value(for: "k", maxAge: 10) == 20)
        #expect(try await cache.value(for: "k", newerThan: clock.now()) == 30)
        #expect(probe.calls == 3)
    }

    @Test("Out-of-range settings are a clear thrown error")
    func invalidConfiguration() throws {
        for change in [
            { (c: inout Cache<String, Int>.Configuration) in c.name = "" },
            { c in c.name = "a/b" },
            { c in c.expiryJitter = 1 },
            { c in c.staleWhileRevalidate = -1 },
            { c in c.negativeCaching = .nan },
        ] {
            var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
            change(&configuration)
            #expect(throws: HoardError.self) { try Cache<String, Int>(configuration: configuration) }
        }
        for bad in ["", "a/b", "..", String(repeating: "n", count: 256)] {
            var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
            configuration.name = bad
            let error = try #require(throws: HoardError.self) { try Cache<String, Int>(configuration: configuration) }
            #expect(error.code == .invalidName, "a name is refused as a name: \(error)")
        }
    }
}

/// Collects failures reported to an error handler.
final class FailureLog: Sendable {
    private let failures = Mutex<[CacheFailure]>([])
    func append(_ failure: CacheFailure) { failures.withLock { $0.append(failure) } }
    var all: [CacheFailure] { failures.withLock { $0 } }
}
