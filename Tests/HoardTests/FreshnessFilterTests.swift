import Foundation
import Hoard
import Testing

/// `maxAge` and `newerThan` that no entry can satisfy: a NaN or negative `maxAge`, a
/// NaN `newerThan`.
@Suite("Freshness filters that are not a number or negative")
struct FreshnessFilterTests {
    static let nanDate = Date(timeIntervalSinceReferenceDate: .nan)
    /// Each invalid `maxAge`, tried with a clock that ran 30 seconds backwards after
    /// the write (the entry's age is -30 s, which a plain `age > maxAge` lets through
    /// for -1 and NaN).
    static let invalidMaxAges: [TimeInterval] = [.nan, -1, -60, -.infinity]

    @Test("MemoryCache: every read misses for a NaN or negative maxAge or a NaN newerThan; the entry stays")
    func memoryCache() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<String, String>(clock: clock)
        cache["feed"] = "v1"
        clock.advance(by: -30)

        for maxAge in Self.invalidMaxAges {
            #expect(cache["feed", maxAge: maxAge] == nil, "maxAge \(maxAge)")
            #expect(cache.value(for: "feed", maxAge: maxAge) == nil, "maxAge \(maxAge)")
            #expect(cache.entry(for: "feed", maxAge: maxAge) == nil, "maxAge \(maxAge)")
        }
        #expect(cache["feed", newerThan: Self.nanDate] == nil)
        #expect(cache.value(for: "feed", maxAge: 60, newerThan: Self.nanDate) == nil)
        #expect(cache.entry(for: "feed", newerThan: Self.nanDate) == nil)
        #expect(cache.statistics.misses == 15)
        #expect(cache.statistics.hits == 0)

        // Valid filters still hit, and the entry stayed.
        #expect(cache["feed", maxAge: 0] == "v1")
        #expect(cache["feed", maxAge: .infinity] == "v1")
        #expect(cache["feed", newerThan: .distantPast] == "v1")
        #expect(cache["feed"] == "v1")
    }

    @Test("Cache: the synchronous reads miss in memory and in the local stores for an invalid filter")
    func cacheSynchronousReads() async throws {
        try await DiskTest.withTemporaryDirectory { url in
            let clock = ManualClock()
            let disk = try DiskStore(directory: url, clock: clock)
            let cache = try Cache<String, Int>(configuration: CacheTest.configuration(disk: disk), clock: clock)
            cache["k"] = 10
            await cache.flush()
            clock.advance(by: -30)

            for tier in ["memory", "local store"] {
                if tier == "local store" { try await cache.clear(memory: true, disk: false, remote: false) }
                for maxAge in Self.invalidMaxAges {
                    #expect(cache.cachedValue(for: "k", maxAge: maxAge) == nil, "\(tier), maxAge \(maxAge)")
                    #expect(cache.cachedEntry(for: "k", maxAge: maxAge) == nil, "\(tier), maxAge \(maxAge)")
                    #expect(cache["k", maxAge: maxAge] == nil, "\(tier), maxAge \(maxAge)")
                }
                #expect(cache.cachedValue(for: "k", newerThan: Self.nanDate) == nil, "\(tier)")
                #expect(cache.cachedEntry(for: "k", newerThan: Self.nanDate) == nil, "\(tier)")
            }
            // A valid filter still finds the value in the local store.
            #expect(cache.cachedValue(for: "k", maxAge: 60) == 10)
        }
    }

    @Test("Cache: the asynchronous reads refuse an invalid filter with invalidArgument, without a fetch")
    func cacheAsynchronousReads() async throws {
        let clock = ManualClock()
        let probe = FetchProbe()
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration(), clock: clock) { _ in
            await probe.enter()
            return 99
        }
        cache["k"] = 10
        clock.advance(by: -30)

        var reads: [(String, () async throws -> Int?)] = []
        for maxAge in Self.invalidMaxAges {
            reads.append(("value maxAge \(maxAge)", { try await cache.value(for: "k", maxAge: maxAge) }))
            reads.append(
                ("value fetch maxAge \(maxAge)", { try await cache.value(for: "k", maxAge: maxAge, fetch: nil) }))
            reads.append(("entry maxAge \(maxAge)", { try await cache.entry(for: "k", maxAge: maxAge)?.value }))
            reads.append(("subscript maxAge \(maxAge)", { try await cache[async: "k", maxAge: maxAge] }))
        }
        reads.append(("value newerThan NaN", { try await cache.value(for: "k", newerThan: Self.nanDate) }))
        reads.append(("entry newerThan NaN", { try await cache.entry(for: "k", newerThan: Self.nanDate)?.value }))
        reads.append(("value never stored", { try await cache.value(for: "other", maxAge: .nan) }))
        for (name, read) in reads {
            let error = await #expect(throws: HoardError.self, "\(name)") { try await read() }
            #expect(error?.code == .invalidArgument, "\(name): \(String(describing: error))")
        }
        #expect(probe.calls == 0)
        // A valid filter still reads.
        #expect(try await cache.value(for: "k", maxAge: 60) == 10)
    }
}
