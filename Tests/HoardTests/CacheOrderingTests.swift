import Foundation
import Testing

@testable import Hoard

/// A read that found a value below memory races a newer change of the key: the
/// newer change must win in every tier, whatever the read returns.
@Suite("Cache: promotions never overwrite newer changes", .timeLimit(.minutes(3)))
struct CacheOrderingTests {
    /// Starts an async read that stops at `gate` after finding the stored value.
    private static func startGatedRead(
        _ cache: Cache<String, String>, gate: StoreGate
    ) async -> Task<String?, any Error> {
        gate.close()
        let read = Task { try await cache.value(for: "k") }
        await gate.arrival()
        return read
    }

    @Test("A remote hit in flight does not overwrite a set made meanwhile, in memory or on disk")
    func remoteHitAgainstSet() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = GatedRemoteStore()
            try await remote.inner.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)

            let read = await Self.startGatedRead(cache, gate: remote.readGate)
            try await cache.set("2", for: "k")
            await cache.flush()
            remote.readGate.open()
            #expect(try await read.value == "1", "the read began before the write")
            await cache.flush()

            #expect(cache["k"] == "2")
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(try await remote.inner.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(cache.statistics.droppedPromotions == 1)
            #expect(cache.statistics.memory.promotions == 0)
        }
    }

    @Test("A local-store hit in flight does not overwrite a set made meanwhile")
    func localHitAgainstSet() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            let gated = ReadGatedStore(disk)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, String>(configuration: configuration)

            let read = await Self.startGatedRead(cache, gate: gated.gate)
            cache["k"] = "2"
            await cache.flush()
            gated.gate.open()
            #expect(try await read.value == "1")
            await cache.flush()

            #expect(cache["k"] == "2", "memory keeps the newer value")
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(cache.statistics.droppedPromotions == 1)
        }
    }

    @Test("A hit in flight does not bring back a key removed meanwhile")
    func hitAgainstRemoval() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = GatedRemoteStore()
            try await remote.inner.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)

            let read = await Self.startGatedRead(cache, gate: remote.readGate)
            try await cache.removeValue(for: "k")
            remote.readGate.open()
            _ = try await read.value
            await cache.flush()

            #expect(cache["k"] == nil)
            #expect(cache.memoryCount == 0)
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await remote.inner.entry(for: "k", in: "test") == nil)
        }
    }

    @Test("A hit in flight promotes nothing after a clear")
    func hitAgainstClear() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            let gated = ReadGatedStore(disk)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, String>(configuration: configuration)

            let read = await Self.startGatedRead(cache, gate: gated.gate)
            try await cache.clear()
            gated.gate.open()
            _ = try await read.value
            await cache.flush()

            #expect(cache.memoryCount == 0, "the old value is not put back into memory")
            #expect(cache["k"] == nil)
            #expect(try disk.entry(for: "k", in: "test") == nil)
        }
    }

    @Test("A fetch that began before a set does not overwrite it; its waiters still get the fetched value")
    func fetchAgainstSet() async throws {
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            await probe.enter()
            return 1
        }
        let read = Task { try await cache.value(for: "k") }
        #expect(await CacheTest.eventually { probe.calls == 1 })
        cache["k"] = 2
        probe.open()
        #expect(try await read.value == 1)
        #expect(cache["k"] == 2)
        #expect(cache.statistics.droppedPromotions == 1)
    }

    @Test(
        "A remote hit's copy stays readable while queued for the local store, through a later clear of the remote stores"
    )
    func promotionQueuedBeforeRemoteClear() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = GatedStore(try DiskStore(directory: directory))
            let remote = GatedRemoteStore()
            try await remote.inner.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([disk])
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)

            disk.close()  // the promotion's batch waits at the local store
            #expect(try await cache.value(for: "k") == "1")
            let clear = Task { try await cache.clear(memory: true, disk: false, remote: true) }
            #expect(await CacheTest.eventually { cache.memoryCount == 0 }, "the clear is queued")
            // The local store will hold the copy (queued before the clear): reads
            // answer it now, not a miss that turns into "1" once the batch lands.
            #expect(cache.cachedValue(for: "k") == "1")
            #expect(try await cache.value(for: "k") == "1")

            disk.release()
            try await clear.value
            await cache.flush()
            #expect(try await remote.inner.entry(for: "k", in: "test") == nil)
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("1".utf8))
            try await cache.clear(memory: true, disk: false, remote: false)
            #expect(try await cache.value(for: "k") == "1", "from the local store")
        }
    }

    /// A cache over `local` (and `remote`) serving stale values for an hour, whose
    /// fetch answers "fetched" once `fetches` is open.
    private static func staleServing(
        local: any CacheStore, remote: GatedRemoteStore? = nil, fetches: FetchProbe
    ) throws -> Cache<String, String> {
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.localStores = .stores([local])
        configuration.remoteStores = remote.map { [$0] } ?? []
        configuration.staleWhileRevalidate = 3_600
        return try Cache<String, String>(configuration: configuration) { _ in
            await fetches.enter()
            return "fetched"
        }
    }

    /// Stored an hour ago, past its lifetime (which ended half an hour ago) and
    /// within the hour of grace: served stale, and refreshed.
    private static let staleDates = (storedAt: Date() - 3_600, expiresAt: Date() + 1_800)

    @Test("A stale local hit in flight does not refresh over a set made meanwhile: the read began before it")
    func staleLocalHitAgainstSet() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let dates = Self.staleDates
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            let gated = ReadGatedStore(disk)
            let fetches = FetchProbe()
            let cache = try Self.staleServing(local: gated, fetches: fetches)

            let read = await Self.startGatedRead(cache, gate: gated.gate)
            cache["k"] = "2"
            gated.gate.open()
            #expect(try await read.value == "1", "the read began before the write")
            // A refresh, had one started, holds a read ticket until it has written.
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            #expect(cache["k"] == "2", "the write is not replaced by a refresh of the value it replaced")
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(fetches.calls == 0, "nothing left to refresh")
            #expect(cache.statistics.staleHits == 1)
        }
    }

    @Test("A stale hit of a synchronous read in flight does not refresh over a set made meanwhile")
    func staleCachedHitAgainstSet() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let dates = Self.staleDates
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            let gated = ReadGatedStore(disk)
            let fetches = FetchProbe()
            let cache = try Self.staleServing(local: gated, fetches: fetches)

            gated.gate.close()
            // On a thread of its own: the gate blocks it.
            let read = Task(executorPreference: _BlockingExecutor(label: "test.gated-cached-read", width: 1)) {
                cache.cachedValue(for: "k")
            }
            await gated.gate.arrival()
            cache["k"] = "2"
            gated.gate.open()
            #expect(await read.value == "1", "the read began before the write")
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            #expect(cache["k"] == "2")
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(fetches.calls == 0)
        }
    }

    @Test("A stale memory hit does not refresh over a set made between the read and its refresh")
    func staleMemoryHitAgainstSet() async throws {
        let clock = HoldingClock()
        let fetches = FetchProbe()
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.staleWhileRevalidate = 3_600
        let cache = try Cache<String, String>(configuration: configuration, clock: clock) { _ in
            await fetches.enter()
            return "fetched"
        }
        // The clock reads the reference date: stored an hour before it, past its
        // lifetime for half an hour, within the hour of grace.
        let stale = CacheEntry(
            value: "1", storedAt: Date(timeIntervalSinceReferenceDate: -3_600),
            expiresAt: Date(timeIntervalSinceReferenceDate: -1_800))
        try await cache.set(stale, for: "k")

        let read = Task(executorPreference: _BlockingExecutor(label: "test.held-memory-read", width: 1)) {
            clock.holdsThisThread()
            // Memory's own look at the clock passes; the read's next one, once it
            // has found the stale value, is held.
            clock.arm(passing: 1)
            defer { clock.finished() }
            return cache.cachedValue(for: "k")
        }
        await clock.waitUntilHeld()
        #expect(clock.hasHeld)
        cache["k"] = "2"
        clock.release()
        #expect(await read.value == "1", "the read found the value before the write")
        #expect(await CacheTest.eventually { cache.writer.isQuiet })

        #expect(cache["k"] == "2", "the write is not replaced by a refresh of the value it replaced")
        #expect(fetches.calls == 0)
    }

    @Test("A stale remote hit in flight does not refresh over a removal made meanwhile")
    func staleRemoteHitAgainstRemoval() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = GatedRemoteStore()
            let dates = Self.staleDates
            try await remote.inner.set(
                Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            let fetches = FetchProbe()
            let cache = try Self.staleServing(local: disk, remote: remote, fetches: fetches)

            let read = await Self.startGatedRead(cache, gate: remote.readGate)
            try await cache.removeValue(for: "k")
            remote.readGate.open()
            #expect(try await read.value == "1", "the read began before the removal")
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()

            #expect(cache["k"] == nil, "the removed key is not filled again by a refresh")
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await remote.inner.entry(for: "k", in: "test") == nil)
            #expect(fetches.calls == 0)
        }
    }

    @Test("A stale hit with no change since its read began is still refreshed, in the background")
    func staleHitRefreshed() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let dates = Self.staleDates
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            let fetches = FetchProbe()
            let cache = try Self.staleServing(local: disk, fetches: fetches)

            #expect(try await cache.value(for: "k") == "1")
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()
            #expect(fetches.calls == 1)
            #expect(cache["k"] == "fetched")
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("fetched".utf8))
        }
    }

    @Test(
        "A refresh whose fetch returns nil removes the stale value from every tier; with negative caching, memory remembers the miss",
        arguments: [false, true])
    func staleRefreshFindingNothing(remembersMisses: Bool) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = InMemoryRemoteStore()
            let dates = Self.staleDates
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            try await remote.set(
                Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            let fetches = FetchProbe()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([disk])
            configuration.remoteStores = [remote]
            configuration.staleWhileRevalidate = 3_600
            configuration.negativeCaching = remembersMisses ? 600 : nil
            let cache = try Cache<String, String>(configuration: configuration) { _ -> String? in
                await fetches.enter()
                return nil
            }

            #expect(try await cache.value(for: "k") == "1", "served stale while the refresh runs")
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()
            #expect(fetches.calls == 1)
            #expect(cache["k"] == nil, "the source has no value: the stale one is gone from memory and disk")
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await remote.entry(for: "k", in: "test") == nil)
            #expect(try await cache.value(for: "k") == nil)
            #expect(fetches.calls == (remembersMisses ? 1 : 2), "a remembered miss is not fetched again")
        }
    }

    @Test("A refresh that finds nothing does not remove a value written while it fetched")
    func staleRefreshFindingNothingAgainstSet() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let dates = Self.staleDates
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: dates.storedAt, expiresAt: dates.expiresAt)
            let fetches = FetchProbe(open: false)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([disk])
            configuration.staleWhileRevalidate = 3_600
            let cache = try Cache<String, String>(configuration: configuration) { _ -> String? in
                await fetches.enter()
                return nil
            }

            #expect(try await cache.value(for: "k") == "1")
            #expect(await CacheTest.eventually { fetches.calls == 1 }, "the refresh is fetching")
            cache["k"] = "2"
            fetches.open()
            #expect(await CacheTest.eventually { cache.writer.isQuiet })
            await cache.flush()
            #expect(cache["k"] == "2", "the write made during the refresh stays")
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("2".utf8))
        }
    }

    @Test("Without a race, a remote hit is promoted into memory and every local store, in the writer's order")
    func promotionWithoutRace() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = GatedRemoteStore()
            try await remote.inner.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)
            #expect(try await cache.value(for: "k") == "1")
            cache["k"] = "2"  // queued after the promotion: it must land last
            await cache.flush()
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(cache.statistics.memory.promotions == 1)
            #expect(cache.statistics.local.promotions == 1)
            #expect(cache.statistics.droppedPromotions == 0)
        }
    }
}
