import Foundation
import Testing

@testable import Hoard

@Suite("Cache observation and remote tiers", .timeLimit(.minutes(3)))
struct CacheObservationTests {
    @Test("updates(for:) sees the current value, writes, fetches and removals in order")
    func updates() async throws {
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in 99 }
        cache["k"] = 1
        var updates = cache.updates(for: "k").makeAsyncIterator()
        #expect(await updates.next() == .some(1))
        cache["k"] = 2
        try await cache.removeValue(for: "k")
        _ = try await cache.value(for: "k")
        #expect(await updates.next() == .some(2))
        #expect(await updates.next() == .some(nil))
        #expect(await updates.next() == .some(99))
    }

    @Test("updates(for:) never sends a starting value older than a change made while it was being read")
    func updatesStartingValueAgainstChange() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("1".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            let store = HookedStore(disk)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([store])
            let cache = try Cache<String, String>(configuration: configuration)
            // The key changes after the subscription's read found "1" on the disk.
            store.onNextRead { cache["k"] = "2" }
            var updates = cache.updates(for: "k").makeAsyncIterator()
            #expect(await updates.next() == .some("2"), "the change, which is newer than the value read")
            cache["k"] = "3"
            #expect(await updates.next() == .some("3"), "and no older value after it")
            #expect(cache["k"] == "3")
        }
    }

    @Test("updates(for:) sends nil when a clear or another instance's invalidation removes the value")
    func updatesOnClearAndInvalidation() async throws {
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration())
        cache["k"] = 1
        var updates = cache.updates(for: "k").makeAsyncIterator()
        #expect(await updates.next() == .some(1))
        try await cache.clear()
        cache["k"] = 2
        #expect(await updates.next() == .some(nil), "the clear removed the value")
        #expect(await updates.next() == .some(2))
        cache.invalidate(.key("k"))
        cache["k"] = 3
        #expect(await updates.next() == .some(nil), "the invalidation of the key removed it")
        #expect(await updates.next() == .some(3))
        cache.invalidate(.all)
        cache["k"] = 4
        #expect(await updates.next() == .some(nil), "the invalidation of everything removed it")
        #expect(await updates.next() == .some(4))
    }

    @Test(
        "A clear of memory over a disk that keeps the value is not an update; a clear of the disk then removes it, and updates(for:) sends nil"
    )
    func updatesOnClearsOfSomeTiers() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let cache = try Cache<String, Int>(configuration: CacheTest.configuration(disk: disk))
            try await cache.set(1, for: "k")
            var updates = cache.updates(for: "k").makeAsyncIterator()
            #expect(await updates.next() == .some(1))
            try await cache.clear(memory: true, disk: false)  // the disk still holds it
            try await cache.clear(memory: false, disk: true)  // now it is gone
            #expect(cache["k"] == nil)
            cache["k"] = 2
            #expect(await updates.next() == .some(nil), "one nil, for the clear that removed the value")
            #expect(await updates.next() == .some(2))
        }
    }

    @Test("updates(for:) of a key this cache cannot name sends nil when another instance invalidates its string")
    func updatesOnInvalidationByString() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let key = AvatarKey(id: 1)
            try disk.set(Data("1".utf8), for: key.cacheKeyString, in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<AvatarKey, Int>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [InMemoryRemoteStore()]
            let cache = try Cache<AvatarKey, Int>(configuration: configuration)
            var updates = cache.updates(for: key).makeAsyncIterator()
            #expect(await updates.next() == .some(1), "read from the disk")
            cache.invalidate(.key(key.cacheKeyString))
            await cache.flush()
            #expect(cache[key] == nil)
            cache[key] = 2
            #expect(await updates.next() == .some(nil), "the invalidation removed the value")
            #expect(await updates.next() == .some(2))
        }
    }

    @Test("The events stream reports sets, removals, fetches, promotions, evictions and failures")
    func events() async throws {
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration(memoryLimit: 1)) { key in
            if key == "bad" { throw FetchFailed(attempt: 0) }
            return 5
        }
        var events = cache.events.makeAsyncIterator()
        cache["a"] = 1
        #expect(await events.next().map { "\($0)" } == "\(CacheEvent<String>.set("a"))")
        _ = try await cache.value(for: "b")  // fetch, evicts a
        var seen: [String] = []
        for _ in 0..<3 { if let event = await events.next() { seen.append("\(event)") } }
        #expect(seen.contains("\(CacheEvent<String>.fetched("b", found: true))"))
        #expect(seen.contains("\(CacheEvent<String>.evicted("a", reason: .countLimit))"))
    }

    @Test("A remote hit is promoted into memory and the local store")
    func remoteHit() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = InMemoryRemoteStore()
            try await remote.set(Data("shared".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)
            #expect(cache["k"] == nil, "the synchronous path never touches the network")
            #expect(try await cache.value(for: "k") == "shared")
            #expect(cache.statistics.remote.hits == 1)
            await cache.flush()  // the promotion into the disk store goes through the writer
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("shared".utf8))
            #expect(cache.statistics.local.promotions == 1)
            #expect(cache["k"] == "shared")
        }
    }

    @Test("A failing remote store is reported and the cache keeps serving its other tiers")
    func remoteDown() async throws {
        struct Down: Error {}
        let remote = InMemoryRemoteStore()
        remote.failsWith = Down()
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [remote]
        let failures = FailureLog()
        configuration.onError = { failures.append($0) }
        let cache = try Cache<String, Int>(configuration: configuration) { _ in 1 }
        #expect(try await cache.value(for: "k") == 1)
        await cache.flush()
        #expect(cache["k"] == 1)
        #expect(failures.all.contains { $0.tier == .remote(0) && $0.operation == .read })
        #expect(failures.all.contains { $0.tier == .remote(0) && $0.operation == .write })
    }

    @Test("A change through one cache drops the key from another cache's memory")
    func invalidation() async throws {
        let remote = InMemoryRemoteStore()
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [remote]
        let first = try Cache<String, Int>(configuration: configuration)
        configuration.remoteStores = [remote.anotherInstance()]
        let second = try Cache<String, Int>(configuration: configuration)
        try await first.set(1, for: "k")
        #expect(try await second.value(for: "k") == 1)
        try await first.set(2, for: "k")
        #expect(await CacheTest.eventually { second["k"] == nil })
        #expect(try await second.value(for: "k") == 2)
    }

    @Test(
        "Invalidation finds keys of every kind: rebuilt from their string (Int, UUID) or noted by the cache (a custom key), also after the notes were pruned"
    )
    func invalidationOfEveryKeyKind() async throws {
        // Int and UUID keys are rebuilt from the string another instance sends.
        let remote = InMemoryRemoteStore()
        var numbers: Cache<Int, Int>.Configuration = CacheTest.configuration("numbers")
        numbers.remoteStores = [remote]
        let writer = try Cache<Int, Int>(configuration: numbers)
        numbers.remoteStores = [remote.anotherInstance()]
        let reader = try Cache<Int, Int>(configuration: numbers)
        try await writer.set(1, for: 42)
        #expect(try await reader.value(for: 42) == 1)
        #expect(
            reader.keyStrings.withLock { $0.entries.isEmpty }, "nothing to note for a key type that rebuilds its keys")
        try await writer.set(2, for: 42)
        #expect(await CacheTest.eventually { reader[42] == nil })
        #expect(UUID(cacheKeyString: UUID().uuidString) != nil)
        #expect(Int(cacheKeyString: "05") == 5 && Int(cacheKeyString: "x") == nil)

        // A custom key is found through the cache's notes, pruned to what memory holds
        // (a memory tier of 4 keys prunes beyond 8 notes).
        // The values are put in the store through a third instance before either
        // cache listens, and the second cache takes them in by reading.
        let shared = InMemoryRemoteStore()
        for id in 0..<40 {
            try await shared.set(
                Data(String(id).utf8), for: AvatarKey(id: id).cacheKeyString, in: "avatars", storedAt: Date(),
                expiresAt: nil)
        }
        var custom: Cache<AvatarKey, Int>.Configuration = CacheTest.configuration("avatars", memoryLimit: 4)
        custom.remoteStores = [shared.anotherInstance()]
        let avatars = try Cache<AvatarKey, Int>(configuration: custom)
        custom.remoteStores = [shared.anotherInstance()]
        let others = try Cache<AvatarKey, Int>(configuration: custom)
        for id in 0..<40 { #expect(try await others.value(for: AvatarKey(id: id)) == id) }
        #expect(others.keyStrings.withLock { $0.entries.count } <= 8, "pruned to what memory holds")
        let kept = (0..<40).map { AvatarKey(id: $0) }.filter { others[$0] != nil }
        #expect(!kept.isEmpty)
        for key in kept { try await avatars.set(-1, for: key) }
        #expect(
            await CacheTest.eventually { kept.allSatisfy { others[$0] == nil } },
            "every key memory held was found and dropped")
    }

    @Test(
        "While another instance's invalidation of a key this cache cannot name waits for the local stores, reads skip them and keep nothing they hold"
    )
    func queuedInvalidationByString() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let key = AvatarKey(id: 1)
            try disk.set(Data("1".utf8), for: key.cacheKeyString, in: "test", storedAt: Date(), expiresAt: nil)
            let store = HookedStore(disk)
            let remote = InMemoryRemoteStore()
            try await remote.set(Data("2".utf8), for: key.cacheKeyString, in: "test", storedAt: Date(), expiresAt: nil)
            var configuration: Cache<AvatarKey, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([store])
            configuration.remoteStores = [remote]
            let cache = try Cache<AvatarKey, String>(configuration: configuration)

            store.writeGate.close()
            // Another instance changed the key: the remote store holds its value.
            cache.invalidate(.key(key.cacheKeyString))
            await store.writeGate.arrival()  // the removal from the disk is under way
            #expect(try await cache.value(for: key) == "2", "the invalidated value on the disk is not served")
            store.writeGate.open()
            await cache.flush()

            #expect(cache[key] == "2", "memory holds the remote store's value, not the invalidated one")
            #expect(
                try disk.entry(for: key.cacheKeyString, in: "test")?.data == Data("2".utf8),
                "promoted from the remote store")
            #expect(cache.statistics.local.hits == 0)
        }
    }
}

/// A key type that does not rebuild its keys from their strings.
private struct AvatarKey: CacheKey {
    var id: Int
    var cacheKeyString: String { "avatar/\(id)" }
}
