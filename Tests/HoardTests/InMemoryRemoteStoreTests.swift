import Foundation
import Testing

@testable import Hoard

@Suite("InMemoryRemoteStore", .timeLimit(.minutes(1)))
struct InMemoryRemoteStoreTests {
    struct Down: Error {}

    @Test("Each instance hears of the other instances' changes, in order, never of its own")
    func invalidationsSkipTheWriter() async throws {
        let first = InMemoryRemoteStore()
        let second = first.anotherInstance()
        var heardByFirst = first.invalidations(in: "ns").makeAsyncIterator()
        var heardBySecond = second.invalidations(in: "ns").makeAsyncIterator()
        let otherNamespace = second.invalidations(in: "other")

        try await first.set(Data([1]), for: "a", in: "ns", storedAt: Date(), expiresAt: nil)
        try await second.removeValue(for: "b", in: "ns")
        try await first.removeAll(in: "ns")
        try await second.set(Data([2]), for: "c", in: "ns", storedAt: Date(), expiresAt: nil)

        // Streams deliver in order: an echo of the first's own changes would come
        // before the second's.
        #expect(await heardByFirst.next() == .key("b"))
        #expect(await heardByFirst.next() == .key("c"))
        #expect(await heardBySecond.next() == .key("a"))
        #expect(await heardBySecond.next() == .all)

        // Another namespace heard nothing: its first invalidation is this one.
        try await first.set(Data([3]), for: "d", in: "other", storedAt: Date(), expiresAt: nil)
        var heardInOther = otherNamespace.makeAsyncIterator()
        #expect(await heardInOther.next() == .key("d"))
    }

    @Test("Instances share the entries; failures and call counts are each instance's own")
    func instancesShareEntries() async throws {
        let first = InMemoryRemoteStore()
        let second = first.anotherInstance()
        try await first.set(Data("v".utf8), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
        #expect(try await second.entry(for: "k", in: "ns")?.data == Data("v".utf8))
        #expect(try await second.entries(for: ["k", "missing"], in: "ns").keys.sorted() == ["k"])

        first.failsWith = Down()
        await #expect(throws: Down.self) { try await first.entry(for: "k", in: "ns") }
        await #expect(throws: Down.self) { try await first.removeValue(for: "k", in: "ns") }
        #expect(try await second.entry(for: "k", in: "ns") != nil, "the failing instance changed nothing")
        #expect((first.readCount, first.writeCount) == (0, 1))
        #expect((second.readCount, second.writeCount) == (3, 0))
    }

    @Test("A cache over memory and one instance keeps what it writes in memory")
    func cacheKeepsItsOwnWrites() async throws {
        let store = InMemoryRemoteStore()
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [store]
        let cache = try Cache<String, Int>(configuration: configuration)
        cache["marker"] = 0
        try await cache.set(1, for: "k")
        await cache.flush()

        // Another instance's change of the marker reaches the cache after anything
        // the store sent for the cache's own writes, which came first.
        try await store.anotherInstance().set(
            Data("5".utf8), for: "marker", in: "test", storedAt: Date(), expiresAt: nil)
        #expect(await CacheTest.eventually { cache["marker"] == nil }, "the other instance's change dropped the marker")
        #expect(cache["k"] == 1, "the cache's own write is still in memory")
        #expect(try await cache.value(for: "marker") == 5)
    }
}
