import Foundation
import Hoard
import Testing

@Suite("Cache expiry", .timeLimit(.minutes(3)))
struct CacheExpiryTests {
    @Test("Lifetimes apply in memory and on disk through the injected clock")
    func lifetimes() async throws {
        let clock = ManualClock()
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory, clock: clock)
            var configuration: Cache<String, Int>.Configuration = CacheTest.configuration(disk: disk)
            configuration.defaultExpiry = .minutes(1)
            let cache = try Cache<String, Int>(configuration: configuration, clock: clock)
            cache["default"] = 1
            cache["long", expires: .hours(1)] = 2
            await cache.flush()
            clock.advance(by: 61)
            #expect(cache["default"] == nil)
            #expect(cache["long"] == 2)

            let reopened = try Cache<String, Int>(configuration: configuration, clock: clock)
            #expect(reopened["default"] == nil, "the disk entry expired too")
            #expect(reopened["long"] == 2)
        }
    }

    @Test("A local-store lifetime shorter than the entry's caps it on disk only")
    func localExpiry() async throws {
        let clock = ManualClock()
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory, clock: clock)
            var configuration: Cache<String, Int>.Configuration = CacheTest.configuration(disk: disk)
            configuration.localExpiry = .seconds(10)
            let cache = try Cache<String, Int>(configuration: configuration, clock: clock)
            try await cache.set(1, for: "k", expires: .seconds(100))
            let stored = try #require(try disk.entry(for: "k", in: "test"))
            #expect(stored.expiresAt == clock.now().addingTimeInterval(10))
            clock.advance(by: 11)
            #expect(cache["k"] == 1, "memory keeps the entry's own lifetime")
        }
    }

    @Test("Stale-while-revalidate serves an expired value at once and refreshes it once")
    func staleWhileRevalidate() async throws {
        let clock = ManualClock()
        let probe = FetchProbe()
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.defaultExpiry = .seconds(10)
        configuration.staleWhileRevalidate = 60
        let cache = try Cache<String, Int>(configuration: configuration, clock: clock) { _ in
            await probe.enter()
            return probe.calls
        }
        #expect(try await cache.value(for: "k") == 1)
        clock.advance(by: 11)
        #expect(try await cache.value(for: "k") == 1, "stale, served at once")
        #expect(cache["k"] == 1 || cache["k"] == 2)
        #expect(await CacheTest.eventually { cache["k"] == 2 })
        #expect(probe.calls == 2)
        #expect(cache.statistics.staleHits >= 1)
        #expect(try #require(cache.cachedEntry(for: "k")).expiresAt == clock.now().addingTimeInterval(10))
        clock.advance(by: 100)
        // A read that arrives while the refresh's flight is ending joins it (and
        // gets its value); the first read after it fetches.
        var refetched: Int?
        for _ in 0..<10_000 where refetched != 3 {
            refetched = try await cache.value(for: "k")
            await Task.yield()
        }
        #expect(refetched == 3, "past the grace period it is fetched before answering")
        #expect(probe.calls == 3)
    }

    @Test(
        "A stale remote hit is served at once, counted as stale, and refreshed once in the background, as a local one is"
    )
    func staleRemoteHit() async throws {
        let clock = ManualClock()
        let remote = InMemoryRemoteStore(clock: clock)
        // Written by another instance with a 10 s lifetime and 60 s of grace.
        try await remote.set(
            Data("1".utf8), for: "k", in: "test", storedAt: clock.now(), expiresAt: clock.now().addingTimeInterval(70))
        clock.advance(by: 20)
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [remote]
        configuration.defaultExpiry = .seconds(10)
        configuration.staleWhileRevalidate = 60
        let probe = FetchProbe()
        let cache = try Cache<String, String>(configuration: configuration, clock: clock) { _ in
            await probe.enter()
            return "fresh"
        }
        var events = cache.events.makeAsyncIterator()
        let entry = try await cache.entry(for: "k")
        #expect(entry?.value == "1", "served at once")
        #expect(entry.flatMap(\.expiresAt).map { $0 < clock.now() } == true, "past its own lifetime")
        #expect(cache.statistics.staleHits == 1)
        while let event = await events.next() {
            if case .set("k") = event { break }  // the background refresh wrote its value
        }
        #expect(probe.calls == 1)
        #expect(cache["k"] == "fresh")
    }

    @Test("Lifetime jitter spreads expiries within the configured fraction")
    func jitter() throws {
        let clock = ManualClock()
        var configuration: Cache<Int, Int>.Configuration = CacheTest.configuration()
        configuration.expiryJitter = 0.2
        configuration.defaultExpiry = .seconds(100)
        let cache = try Cache<Int, Int>(configuration: configuration, clock: clock)
        var lifetimes: Set<Double> = []
        for key in 0..<50 {
            cache[key] = key
            let entry = try #require(cache.cachedEntry(for: key))
            let lifetime = try #require(entry.expiresAt).timeIntervalSince(entry.storedAt)
            #expect(lifetime >= 80 && lifetime <= 120)
            lifetimes.insert(lifetime)
        }
        #expect(lifetimes.count > 40)
    }
}
