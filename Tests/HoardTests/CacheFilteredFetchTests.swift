import Foundation
import Synchronization
import Testing

@testable import Hoard

/// A local store that counts the changes sent to it (batches, sets, removals, clears).
final class ChangeCountingStore: ForwardingStore {
    let inner: any CacheStore
    private let changes = Atomic<Int>(0)
    var changeCount: Int { changes.load(ordering: .relaxed) }

    init(_ inner: any CacheStore) { self.inner = inner }

    func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
        changes.add(batch.count, ordering: .relaxed)
        try inner.write(batch)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) throws(HoardError) {
        changes.add(1, ordering: .relaxed)
        try inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool {
        changes.add(1, ordering: .relaxed)
        return try inner.removeValue(for: key, in: namespace)
    }
    func removeAll(in namespace: String) throws(HoardError) -> Int {
        changes.add(1, ordering: .relaxed)
        return try inner.removeAll(in: namespace)
    }
}

/// A remote store that counts the changes sent to it (batches, sets, removals, clears).
final class ChangeCountingRemoteStore: ForwardingRemoteStore {
    let inner = InMemoryRemoteStore()
    private let changes = Atomic<Int>(0)
    var changeCount: Int { changes.load(ordering: .relaxed) }

    func write(_ batch: [CacheStoreWrite]) async throws {
        changes.add(batch.count, ordering: .relaxed)
        try await inner.write(batch)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws {
        changes.add(1, ordering: .relaxed)
        try await inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func removeValue(for key: String, in namespace: String) async throws {
        changes.add(1, ordering: .relaxed)
        try await inner.removeValue(for: key, in: namespace)
    }
    func removeAll(in namespace: String) async throws {
        changes.add(1, ordering: .relaxed)
        try await inner.removeAll(in: namespace)
    }
}

/// A read with a freshness filter skips every value of a key, and the fetch then
/// returns `nil`: the source says the key has no value, so the values the filter
/// skipped are removed from every tier (as a stale refresh that finds nothing
/// removes the stale value), unless the key changed since the read began.
@Suite(
    "Cache: a fetch that finds nothing after a freshness filter skipped the key's values", .serialized,
    .timeLimit(.minutes(3)))
struct CacheFilteredFetchTests {
    /// The asynchronous reads that take freshness filters and run a fetch. Each
    /// skips a value stored a minute before it.
    enum Read: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case value = "value(for:maxAge:)"
        case valueFetching = "value(for:maxAge:fetch:)"
        case entry = "entry(for:maxAge:)"
        case subscriptAsync = "[async:maxAge:]"
        case newerThan = "value(for:newerThan:)"

        var testDescription: String { rawValue }

        func run(_ cache: Cache<String, String>, fetch: @escaping Cache<String, String>.Fetch) async throws -> String? {
            switch self {
            case .value: try await cache.value(for: "k", maxAge: 30)
            case .valueFetching: try await cache.value(for: "k", maxAge: 30, fetch: fetch)
            case .entry: try await cache.entry(for: "k", maxAge: 30)?.value
            case .subscriptAsync: try await cache[async: "k", maxAge: 30]
            // Stored at the clock's start, a minute ago.
            case .newerThan: try await cache.value(for: "k", newerThan: Date(timeIntervalSinceReferenceDate: 0))
            }
        }
    }

    /// Where the key's value is when the read begins.
    enum Holder: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case memory, disk, remote, everywhere
        var testDescription: String { rawValue }
    }

    /// A cache at the clock's start (the reference date), over `disk` and `remote`
    /// when given, whose fetch waits for `probe` and finds nothing.
    private static func cache(
        clock: ManualClock, disk: (any CacheStore)? = nil, remote: (any RemoteCacheStore)? = nil,
        negativeCaching: TimeInterval? = nil, probe: FetchProbe
    ) throws -> Cache<String, String> {
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.localStores = disk.map { .stores([$0]) } ?? .none
        configuration.remoteStores = remote.map { [$0] } ?? []
        configuration.negativeCaching = negativeCaching
        return try Cache<String, String>(configuration: configuration, clock: clock) { _ -> String? in
            await probe.enter()
            return nil
        }
    }

    @Test("Memory only: the value the filter skipped is gone once the fetch finds nothing", arguments: Read.allCases)
    func memoryOnly(read: Read) async throws {
        // Given a value stored a minute ago in a cache without stores
        let clock = ManualClock()
        let probe = FetchProbe()
        let cache = try Self.cache(clock: clock, probe: probe)
        try await cache.set("old", for: "k")
        clock.advance(by: 60)

        // When a read that wants it newer skips it and the fetch finds nothing
        let fetch: Cache<String, String>.Fetch = { _ in
            await probe.enter()
            return nil
        }
        #expect(try await read.run(cache, fetch: fetch) == nil)

        // Then no later read, with or without a filter, returns it
        #expect(probe.calls == 1)
        #expect(await CacheTest.eventually { cache.writer.isQuiet })
        #expect(cache.cachedValue(for: "k") == nil, "the source said the key has no value")
        #expect(cache["k"] == nil)
        #expect(try await cache.value(for: "k", fetch: nil) == nil)
    }

    @Test(
        "Memory and disk: the value the filter skipped is gone from both once the fetch finds nothing",
        arguments: Read.allCases)
    func memoryAndDisk(read: Read) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            // Given a value stored a minute ago, in memory and on disk
            let clock = ManualClock()
            let disk = try DiskStore(directory: directory, clock: clock)
            let probe = FetchProbe()
            let cache = try Self.cache(clock: clock, disk: disk, probe: probe)
            try await cache.set("old", for: "k")
            await cache.flush()
            clock.advance(by: 60)

            // When a read that wants it newer skips it and the fetch finds nothing
            let fetch: Cache<String, String>.Fetch = { _ in
                await probe.enter()
                return nil
            }
            #expect(try await read.run(cache, fetch: fetch) == nil)
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            // Then neither tier holds it
            #expect(probe.calls == 1)
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(cache.cachedValue(for: "k") == nil)
            try await cache.clear(memory: true, disk: false, remote: false)
            #expect(cache.cachedValue(for: "k") == nil, "nothing left on disk to promote")
        }
    }

    @Test(
        "Whichever tier held the value the filter skipped (memory, disk, remote or all), it is removed from every tier",
        arguments: Holder.allCases)
    func everyTier(holder: Holder) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            // Given a value stored a minute ago in one tier, or all of them
            let clock = ManualClock()
            let disk = try DiskStore(directory: directory, clock: clock)
            let remote = InMemoryRemoteStore()
            let probe = FetchProbe()
            let cache = try Self.cache(clock: clock, disk: disk, remote: remote, probe: probe)
            let stored = clock.now()
            switch holder {
            case .memory:
                try await cache.set("old", for: "k")
                await cache.flush()
                try await cache.clear(memory: false, disk: true, remote: true)
            case .disk:
                try disk.set(Data("old".utf8), for: "k", in: "test", storedAt: stored, expiresAt: nil)
            case .remote:
                try await remote.set(Data("old".utf8), for: "k", in: "test", storedAt: stored, expiresAt: nil)
            case .everywhere:
                try await cache.set("old", for: "k")
                await cache.flush()
            }
            clock.advance(by: 60)

            // When a read with maxAge skips it and the fetch finds nothing
            #expect(try await cache.value(for: "k", maxAge: 30) == nil)
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            // Then no tier holds it
            #expect(probe.calls == 1)
            #expect(cache.cachedValue(for: "k") == nil)
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await remote.entry(for: "k", in: "test") == nil)
            #expect(try await cache.value(for: "k", fetch: nil) == nil)
        }
    }

    @Test("With negative caching, memory then remembers the miss: the next read fetches nothing")
    func remembersTheMiss() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            // Given a value stored a minute ago, and a cache that remembers misses
            let clock = ManualClock()
            let disk = try DiskStore(directory: directory, clock: clock)
            let probe = FetchProbe()
            let cache = try Self.cache(clock: clock, disk: disk, negativeCaching: 600, probe: probe)
            try await cache.set("old", for: "k")
            await cache.flush()
            clock.advance(by: 60)

            // When a filtered read's fetch finds nothing
            #expect(try await cache.value(for: "k", maxAge: 30) == nil)
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            // Then the value is gone and the miss is remembered
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await cache.value(for: "k") == nil)
            #expect(probe.calls == 1, "a remembered miss is not fetched again")
            #expect(cache.statistics.negativeHits == 1)
            clock.advance(by: 600)
            #expect(try await cache.value(for: "k") == nil, "once the miss is forgotten, no tier brings the value back")
            #expect(probe.calls == 2)
        }
    }

    @Test("A key that no tier holds is not removed from the stores: a negative lookup writes nothing")
    func negativeLookupWritesNothing() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            // Given tiers that hold nothing for the key
            let clock = ManualClock()
            let disk = ChangeCountingStore(try DiskStore(directory: directory, clock: clock))
            let remote = ChangeCountingRemoteStore()
            let probe = FetchProbe()
            let cache = try Self.cache(clock: clock, disk: disk, remote: remote, probe: probe)

            // When filtered and unfiltered reads find nothing, and nor does the fetch
            #expect(try await cache.value(for: "k", maxAge: 30) == nil)
            #expect(try await cache.value(for: "k", newerThan: clock.now()) == nil)
            #expect(try await cache.value(for: "k") == nil)
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            // Then no store was sent a change
            #expect(probe.calls == 3)
            #expect(disk.changeCount == 0)
            #expect(remote.changeCount == 0)
        }
    }

    @Test("A value the filter accepts is served; nothing is fetched or removed")
    func acceptedValueStays() async throws {
        try await Self.withOldValue(withDisk: true, fetchHeld: false) { fixture in
            let (disk, probe, cache) = (try #require(fixture.disk), fixture.probe, fixture.cache)
            #expect(try await cache.value(for: "k", maxAge: 120) == "old")
            try await cache.clear(memory: true, disk: false, remote: false)
            #expect(try await cache.value(for: "k", maxAge: 120) == "old", "from disk")
            await cache.flush()
            #expect(probe.calls == 0)
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("old".utf8))
        }
    }

    @Test("The synchronous filtered reads never fetch, so they remove nothing")
    func synchronousReadsRemoveNothing() async throws {
        // Given a value stored a minute ago, in memory and on disk
        try await Self.withOldValue(withDisk: true, fetchHeld: false) { fixture in
            let (disk, probe, cache) = (try #require(fixture.disk), fixture.probe, fixture.cache)

            // When the synchronous reads skip it, in memory and on disk
            for tier in ["memory", "disk"] {
                if tier == "disk" { try await cache.clear(memory: true, disk: false, remote: false) }
                #expect(cache.cachedValue(for: "k", maxAge: 30) == nil, "\(tier)")
                #expect(cache.cachedEntry(for: "k", maxAge: 30) == nil, "\(tier)")
                #expect(cache["k", maxAge: 30] == nil, "\(tier)")
                #expect(cache["k", maxAge: nil, newerThan: Date(timeIntervalSinceReferenceDate: 0)] == nil, "\(tier)")
            }
            await cache.flush()

            // Then nothing was fetched and the value stays
            #expect(probe.calls == 0)
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("old".utf8))
            #expect(cache.cachedValue(for: "k") == "old")
        }
    }

    /// A cache (over a disk, `withDisk`) holding `k` = "old", stored a minute
    /// before its clock reads; its fetch waits for `probe` (held until the probe
    /// opens, unless made open).
    struct OldValue {
        let disk: DiskStore?
        let probe: FetchProbe
        let cache: Cache<String, String>
    }

    /// Runs `body` with an ``OldValue`` in a temporary directory, its fetch held
    /// (`fetchHeld`) or not.
    static func withOldValue(
        withDisk: Bool, fetchHeld: Bool = true, _ body: (OldValue) async throws -> Void
    ) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let clock = ManualClock()
            let disk = withDisk ? try DiskStore(directory: directory, clock: clock) : nil
            let probe = FetchProbe(open: !fetchHeld)
            let cache = try Self.cache(clock: clock, disk: disk, probe: probe)
            try await cache.set("old", for: "k")
            await cache.flush()
            clock.advance(by: 60)
            try await body(OldValue(disk: disk, probe: probe, cache: cache))
        }
    }

    @Test("A set made while the fetch runs is not removed when it finds nothing", arguments: [false, true])
    func setDuringFetchStays(withDisk: Bool) async throws {
        // Given a value stored a minute ago, and a fetch held open
        try await Self.withOldValue(withDisk: withDisk) { fixture in
            let (disk, probe, cache) = (fixture.disk, fixture.probe, fixture.cache)
            // When a filtered read skips it and fetches, and the key is set meanwhile
            let read = Task { try await cache.value(for: "k", maxAge: 30) }
            #expect(await CacheTest.eventually { probe.calls == 1 }, "the read is fetching")
            cache["k"] = "new"
            probe.open()
            // (A `try` outside `#expect`, so the closure is known to throw before the
            // macros expand.)
            let found = try await read.value
            #expect(found == nil, "the fetch found nothing")
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            // Then the set stays in every tier
            #expect(cache["k"] == "new", "the write made during the fetch stays")
            #expect(try await cache.value(for: "k", maxAge: 30) == "new")
            if let disk { #expect(try disk.entry(for: "k", in: "test")?.data == Data("new".utf8)) }
            #expect(probe.calls == 1)
        }
    }

    @Test("A removal and a set made while the fetch runs win over it", arguments: [false, true])
    func removalAndSetDuringFetchStay(withDisk: Bool) async throws {
        try await Self.withOldValue(withDisk: withDisk) { fixture in
            let (disk, probe, cache) = (fixture.disk, fixture.probe, fixture.cache)
            let read = Task { try await cache.entry(for: "k", maxAge: 30) }
            #expect(await CacheTest.eventually { probe.calls == 1 })
            try await cache.removeValue(for: "k")
            try await cache.set("new", for: "k")
            probe.open()
            #expect(try await read.value == nil)
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            #expect(cache["k"] == "new")
            if let disk { #expect(try disk.entry(for: "k", in: "test")?.data == Data("new".utf8)) }
        }
    }
}
