import Foundation
import Testing

@testable import Hoard

/// Writes whose dates no store can keep (a NaN or infinite stored date, a NaN
/// expiry) are refused alone, with `invalidArgument`, and change nothing else.
@Suite("Writes with dates no store can keep")
struct WriteDateTests {
    static let nan = Date(timeIntervalSinceReferenceDate: .nan)
    static let stored = Date(timeIntervalSince1970: 1_000)

    static func expectInvalidArgument(_ body: () throws -> Void) {
        #expect {
            try body()
        } throws: { error in
            (error as? HoardError)?.code == .invalidArgument
        }
    }

    @Test("A store's share of a batch: a change refused with invalidArgument fails alone, and its key is cleaned")
    func invalidArgumentIsChangeSpecific() {
        let writes: [CacheStoreWrite] = [
            .set(Data("a".utf8), for: "a", in: "ns", storedAt: Self.stored, expiresAt: nil),
            .set(Data("b".utf8), for: "b", in: "ns", storedAt: Self.nan, expiresAt: nil),
            .set(Data("c".utf8), for: "c", in: "ns", storedAt: Self.stored, expiresAt: nil),
        ]
        var share = _StoreBatch(count: writes.count)
        while let range = share.next {
            share.finish(range, error: range.contains(1) ? HoardError(.invalidArgument, "NaN") : nil)
        }
        #expect(share.failures.map(\.position) == [1])
        #expect(share.staleKeys(of: writes) == [1])
    }

    @Test("DiskStore refuses a NaN or infinite stored date and a NaN expiry, keeping the older value")
    func diskStoreRefusesBadDates() throws {
        try DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("old".utf8), for: "k", in: "ns", storedAt: Self.stored, expiresAt: nil)
            Self.expectInvalidArgument {
                try disk.set(Data("new".utf8), for: "k", in: "ns", storedAt: Self.nan, expiresAt: nil)
            }
            Self.expectInvalidArgument {
                try disk.set(
                    Data("new".utf8), for: "k", in: "ns", storedAt: .init(timeIntervalSinceReferenceDate: .infinity),
                    expiresAt: nil)
            }
            Self.expectInvalidArgument {
                try disk.set(Data("new".utf8), for: "k", in: "ns", storedAt: Self.stored, expiresAt: Self.nan)
            }
            // A batch holding one such change is refused whole, as any refused batch.
            Self.expectInvalidArgument {
                try disk.write([
                    .set(Data("other".utf8), for: "other", in: "ns", storedAt: Self.stored, expiresAt: nil),
                    .set(Data("new".utf8), for: "k", in: "ns", storedAt: Self.nan, expiresAt: nil),
                ])
            }
            #expect(try disk.entry(for: "k", in: "ns")?.data == Data("old".utf8))
            #expect(try disk.entry(for: "other", in: "ns") == nil)
            // An infinite expiry is a date every store keeps.
            try disk.set(
                Data("forever".utf8), for: "k", in: "ns", storedAt: Self.stored,
                expiresAt: .init(timeIntervalSinceReferenceDate: .infinity))
            #expect(try disk.entry(for: "k", in: "ns")?.data == Data("forever".utf8))
        }
    }

    @Test("InMemoryRemoteStore refuses a NaN stored date, keeping the older value")
    func remoteStoreRefusesBadDates() async throws {
        let server = InMemoryRemoteStore()
        try await server.set(Data("old".utf8), for: "k", in: "ns", storedAt: Self.stored, expiresAt: nil)
        await #expect {
            try await server.set(Data("new".utf8), for: "k", in: "ns", storedAt: Self.nan, expiresAt: nil)
        } throws: { error in
            (error as? HoardError)?.code == .invalidArgument
        }
        #expect(try await server.entry(for: "k", in: "ns")?.data == Data("old".utf8))
    }

    @Test("Cache.set of an entry with a NaN stored date throws at once; every tier keeps the older value")
    func cacheRefusesEntryWithBadDate() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let cache = try Cache<String, String>(configuration: CacheTest.configuration(disk: disk))
            try await cache.set("v1", for: "k")
            await #expect {
                try await cache.set(CacheEntry(value: "v2", storedAt: Self.nan, expiresAt: nil), for: "k")
            } throws: { error in
                (error as? HoardError)?.code == .invalidArgument && (error as? HoardError)?.key == "k"
            }
            await #expect {
                try await cache.set(CacheEntry(value: "v2", storedAt: Self.stored, expiresAt: Self.nan), for: "k")
            } throws: { error in
                (error as? HoardError)?.code == .invalidArgument
            }
            try await cache.set("w", for: "other")
            await cache.flush()
            #expect(cache.cachedValue(for: "k") == "v1")
            #expect(try disk.value(for: "k", as: String.self, in: "test") == "v1")
            #expect(try disk.value(for: "other", as: String.self, in: "test") == "w")
        }
    }

    @Test(
        "A NaN lifetime: set throws and changes nothing; the subscript reports the write and removes the older value")
    func cacheRefusesNaNLifetime() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let failures = FailureLog()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.onError = { failures.append($0) }
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("v1", for: "k")
            await #expect {
                try await cache.set("v2", for: "k", expires: .after(.nan))
            } throws: { error in
                (error as? HoardError)?.code == .invalidArgument
            }
            #expect(cache.cachedValue(for: "k") == "v1")
            cache["k", expires: .at(Self.nan)] = "v3"
            await cache.flush()
            #expect(cache.cachedValue(for: "k") == nil)
            #expect(try disk.value(for: "k", as: String.self, in: "test") == nil)
            let reported = failures.all.filter { $0.key == "k" && $0.operation == .write }
            #expect(reported.count == 1)
            #expect((reported.first?.error as? HoardError)?.code == .invalidArgument)
        }
    }

    @Test(
        "MemoryCache: a NaN lifetime or stored date is refused, and the older value removed; a NaN default is rejected")
    func memoryCacheRefusesBadDates() throws {
        let cache = try MemoryCache<String, Int>(configuration: .init(memoryPressure: nil))
        cache.set(1, for: "k")
        #expect(cache.set(2, for: "k", expires: .after(.nan)) == false)
        #expect(cache.entry(for: "k") == nil)
        cache.set(1, for: "k")
        #expect(cache.set(CacheEntry(value: 2, storedAt: Self.nan, expiresAt: nil), for: "k") == false)
        #expect(cache.entry(for: "k") == nil)
        cache.set(1, for: "k")
        #expect(cache.set(CacheEntry(value: 2, storedAt: Self.stored, expiresAt: Self.nan), for: "k") == false)
        #expect(cache.entry(for: "k") == nil)
        #expect(cache.set(CacheEntry(value: 3, storedAt: Self.stored, expiresAt: nil), for: "k"))
        #expect(cache.entry(for: "k")?.value == 3)
        #expect(throws: HoardError.self) {
            _ = try MemoryCache<String, Int>(configuration: .init(defaultExpiry: .after(.nan)))
        }
    }

    @Test("A configuration with an infinite staleWhileRevalidate or a NaN lifetime is rejected")
    func configurationRejectsUnkeepableDurations() {
        var stale = Cache<String, String>.Configuration(name: "stale")
        stale.staleWhileRevalidate = .infinity
        #expect {
            _ = try Cache<String, String>(configuration: stale) { _ in "fetched" }
        } throws: { error in
            (error as? HoardError)?.code == .invalidConfiguration
        }
        for expiry in [Expiry.after(.nan), .at(Self.nan)] {
            var lifetime = Cache<String, String>.Configuration(name: "lifetime")
            lifetime.defaultExpiry = expiry
            #expect(throws: HoardError.self) { _ = try Cache<String, String>(configuration: lifetime) }
            var local = Cache<String, String>.Configuration(name: "local")
            local.localExpiry = expiry
            #expect(throws: HoardError.self) { _ = try Cache<String, String>(configuration: local) }
        }
        var finite = Cache<String, String>.Configuration(name: "finite")
        finite.localStores = .none
        finite.staleWhileRevalidate = 365 * 86_400
        #expect(throws: Never.self) { _ = try Cache<String, String>(configuration: finite) { _ in "fetched" } }
    }
}
