import Foundation
import Synchronization
import Testing

@testable import Hoard

/// A local store that counts its lookups.
final class CountingStore: ForwardingStore {
    let inner: any CacheStore
    private let lookups = Atomic<Int>(0)
    var lookupCount: Int { lookups.load(ordering: .relaxed) }

    init(_ inner: any CacheStore) { self.inner = inner }

    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        lookups.add(1, ordering: .relaxed)
        return try inner.entry(for: key, in: namespace)
    }
}

/// A remote store that counts its lookups (`GET`s).
final class CountingRemoteStore: ForwardingRemoteStore {
    let inner = InMemoryRemoteStore()
    private let lookups = Atomic<Int>(0)
    var lookupCount: Int { lookups.load(ordering: .relaxed) }

    func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        lookups.add(1, ordering: .relaxed)
        return try await inner.entry(for: key, in: namespace)
    }
}

@Suite("Cache: concurrent reads of a key share one lookup below memory", .timeLimit(.minutes(3)))
struct CacheSharedReadTests {
    @Test("1,000 concurrent reads of a missing key make one local lookup, one remote lookup and one fetch")
    func stampedeLooksUpOncePerTier() async throws {
        try await DiskTest.withTemporaryDirectory { url in
            let local = CountingStore(try DiskStore(directory: url))
            let remote = CountingRemoteStore()
            let probe = FetchProbe(open: false)
            var configuration = Cache<String, Int>.Configuration(name: "test")
            configuration.localStores = .stores([local])
            configuration.remoteStores = [remote]
            let cache = try Cache<String, Int>(configuration: configuration) { _ in
                await probe.enter()
                return 42
            }
            let results = try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<1_000 {
                    group.addTask { try await cache.value(for: "answer") }
                }
                #expect(await CacheTest.eventually { cache.statistics.coalescedWaits == 999 })
                probe.open()
                return try await group.reduce(into: [Int?]()) { $0.append($1) }
            }
            #expect(results.count == 1_000)
            #expect(results.allSatisfy { $0 == 42 })
            #expect(local.lookupCount == 1)
            #expect(remote.lookupCount == 1)
            #expect(probe.calls == 1)
            #expect(cache.statistics.fetches == 1)
            #expect(cache.statistics.local.misses == 1)
        }
    }

    @Test("Concurrent reads of one key with different filters walk the tiers each, and share only the fetch")
    func differentFiltersDoNotShareAWalk() async throws {
        try await DiskTest.withTemporaryDirectory { url in
            let local = CountingStore(try DiskStore(directory: url))
            let remote = CountingRemoteStore()
            let probe = FetchProbe(open: false)
            var configuration = Cache<String, Int>.Configuration(name: "test")
            configuration.localStores = .stores([local])
            configuration.remoteStores = [remote]
            let cache = try Cache<String, Int>(configuration: configuration) { _ in
                await probe.enter()
                return 42
            }
            // The first read (no filter) walks both tiers and waits in the fetch.
            let unfiltered = Task { try await cache.value(for: "answer") }
            #expect(await CacheTest.eventually { probe.calls == 1 })
            // A read with a filter is another read: it must not receive the first
            // one's walk, so it looks in both tiers itself, then joins the fetch.
            let filtered = Task { try await cache.value(for: "answer", maxAge: 60) }
            #expect(await CacheTest.eventually { cache.statistics.coalescedWaits == 1 })
            #expect(local.lookupCount == 2)
            #expect(remote.lookupCount == 2)
            probe.open()
            #expect(try await unfiltered.value == 42)
            #expect(try await filtered.value == 42)
            #expect(probe.calls == 1)
        }
    }

    @Test("Reads with a NaN maxAge or newerThan are refused before any walk, and leave none registered")
    func nanFiltersAreRefused() async throws {
        let probe = FetchProbe()
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            await probe.enter()
            return 42
        }
        let nanDate = Date(timeIntervalSinceReferenceDate: .nan)
        await #expect(throws: HoardError.self) { try await cache.value(for: "answer", maxAge: .nan) }
        await #expect(throws: HoardError.self) { try await cache.value(for: "other", newerThan: nanDate) }
        #expect(probe.calls == 0)
        #expect(cache.sharedReads.walks.withLock { $0.isEmpty })
    }
}
