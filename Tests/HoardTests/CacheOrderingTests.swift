import Foundation
import Hoard
import Testing

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
