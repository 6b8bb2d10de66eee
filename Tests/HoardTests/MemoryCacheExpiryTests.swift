import Foundation
import Hoard
import Testing

@Suite("MemoryCache expiry and freshness")
struct MemoryCacheExpiryTests {
    @Test("Per-entry lifetimes: after a duration, at a date, never")
    func perEntryLifetimes() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<String, Int>(clock: clock)
        cache.set(1, for: "short", expires: .seconds(10))
        cache.set(2, for: "dated", expires: .at(clock.now().addingTimeInterval(100)))
        cache.set(3, for: "forever", expires: .never)

        clock.advance(by: 9.9)
        #expect(cache["short"] == 1)
        clock.advance(by: 0.1)
        #expect(cache["short"] == nil, "an entry is expired at its expiry instant")
        #expect(cache["dated"] == 2)
        clock.advance(by: 100)
        #expect(cache["dated"] == nil)
        clock.advance(by: 1_000_000)
        #expect(cache["forever"] == 3)
        #expect(cache.statistics.expirations == 2)
    }

    @Test("The default lifetime applies when a write gives none, and a write can override it")
    func defaultLifetime() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<String, Int>(configuration: .init(defaultExpiry: .minutes(1)), clock: clock)
        cache["default"] = 1
        cache.set(2, for: "override", expires: .hours(1))
        cache.set(3, for: "never", expires: .never)
        clock.advance(by: 61)
        #expect(cache["default"] == nil)
        #expect(cache["override"] == 2)
        #expect(cache["never"] == 3)
    }

    @Test("Expired entries are removed lazily on read and by removeExpired()")
    func removalOfExpired() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<Int, Int>(clock: clock)
        for i in 0..<10 { cache.set(i, for: i, expires: .seconds(Double(i + 1))) }
        cache[100] = 100
        clock.advance(by: 5.5)
        #expect(cache.count == 11, "nothing is removed until read or swept")
        #expect(!cache.contains(0))
        #expect(cache[0] == nil)
        #expect(cache.count == 10)
        #expect(cache.removeExpired() == 4)
        #expect(cache.count == 6)
        #expect(cache[5] == 5)
        #expect(cache[100] == 100)
    }

    @Test("maxAge and newerThan filter on the stored date without removing")
    func freshnessFilters() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<String, String>(clock: clock)
        let before = clock.now()
        clock.advance(by: 1)
        cache["feed"] = "v1"
        clock.advance(by: 30)

        #expect(cache["feed", maxAge: 60] == "v1")
        #expect(cache["feed", maxAge: 10] == nil)
        #expect(cache["feed"] == "v1", "a too-old entry stays for readers without a filter")
        #expect(cache["feed", newerThan: before] == "v1")
        #expect(cache["feed", newerThan: clock.now()] == nil)
        #expect(cache.value(for: "feed", maxAge: 60, newerThan: clock.now()) == nil)

        let entry = try #require(cache.entry(for: "feed"))
        #expect(entry.value == "v1")
        #expect(entry.storedAt == before.addingTimeInterval(1))
        #expect(entry.expiresAt == nil)
    }

    @Test("An entry written back as it is keeps its stored date and expiry")
    func entryRoundTrip() throws {
        let clock = ManualClock()
        let source = try MemoryCache<String, Int>(clock: clock)
        let target = try MemoryCache<String, Int>(clock: clock)
        source.set(7, for: "x", expires: .seconds(100))
        clock.advance(by: 40)
        let entry = try #require(source.entry(for: "x"))
        target.set(entry, for: "x")
        #expect(target.entry(for: "x") == entry)
        clock.advance(by: 61)
        #expect(target["x"] == nil)
    }
}
