import Foundation
import Hoard
import Synchronization
import Testing

/// A store that failed as a whole on a batch (unreachable, busy, damaged) keeps the
/// older values of that batch's keys: the cache must not serve them, neither while
/// the store is down nor after it recovers, and repairs the store by removing them.
@Suite("Cache suspect keys")
struct CacheSuspectKeyTests {
    /// A local store whose batch writes fail as a whole while `failing`; its reads
    /// keep answering (a store whose writer is busy or whose disk refuses writes).
    final class WriteFailingStore: ForwardingStore {
        let inner: any CacheStore
        let failing = Mutex(false)
        /// How many batches the store was asked to write, failed or not.
        let attempts = Mutex(0)

        init(_ inner: any CacheStore) { self.inner = inner }

        func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
            attempts.withLock { $0 += 1 }
            if failing.withLock({ $0 }) { throw HoardError(.ioFailed, "writes fail") }
            try inner.write(batch)
        }
    }

    /// A remote store whose batch writes fail as a whole while `failing`; its reads
    /// keep answering.
    final class WriteFailingRemoteStore: ForwardingRemoteStore {
        let inner = InMemoryRemoteStore()
        let failing = Mutex(false)

        func write(_ batch: [CacheStoreWrite]) async throws {
            if failing.withLock({ $0 }) { throw HoardError(.ioFailed, "writes fail") }
            try await inner.write(batch)
        }
    }

    /// Clears memory only, so that the next read goes to the stores.
    static func evictMemory(_ cache: Cache<String, String>) async throws {
        try await cache.clear(memory: true, disk: false, remote: false)
    }

    /// A cache over a `DiskStore` behind a ``WriteFailingStore``.
    struct FailingDisk {
        let disk: DiskStore
        let store: WriteFailingStore
        let configuration: Cache<String, String>.Configuration
        let cache: Cache<String, String>
        /// What the cache reported, when `reportsFailures` was given.
        let failures: FailureLog

        /// ``CacheSuspectKeyTests/replaceWhileFailing(_:failing:)`` on this disk.
        func replaceWhileFailing() async {
            await CacheSuspectKeyTests.replaceWhileFailing(cache, failing: store.failing)
        }
    }

    /// Writes `k` = "1" and flushes, then makes the store fail (`failing`) and writes
    /// `k` = "3": memory holds "3", the store still holds "1".
    static func replaceWhileFailing(_ cache: Cache<String, String>, failing: borrowing Mutex<Bool>) async {
        cache["k"] = "1"
        await cache.flush()
        failing.withLock { $0 = true }
        cache["k"] = "3"
        await cache.flush()
    }

    /// Runs `body` with a ``FailingDisk`` in a temporary directory, its cache
    /// configured by ``CacheTest/configuration(_:disk:memoryLimit:)`` and then
    /// `configure`.
    static func withFailingDisk(
        reportsFailures: Bool = false, memoryLimit: Int = 1_000,
        configure: (inout Cache<String, String>.Configuration) -> Void = { _ in },
        _ body: (FailingDisk) async throws -> Void
    ) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let store = WriteFailingStore(disk)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(memoryLimit: memoryLimit)
            configuration.localStores = .stores([store])
            let failures = FailureLog()
            if reportsFailures { configuration.onError = { failures.append($0) } }
            configure(&configuration)
            let fixture = FailingDisk(
                disk: disk, store: store, configuration: configuration,
                cache: try Cache<String, String>(configuration: configuration), failures: failures)
            try await body(fixture)
        }
    }

    @Test("A disk that failed a batch as a whole is repaired by removal once it recovers")
    func diskRepairedAfterRecovery() async throws {
        try await Self.withFailingDisk { fixture in
            let cache = fixture.cache
            await fixture.replaceWhileFailing()
            fixture.store.failing.withLock { $0 = false }
            cache["other"] = "x"
            await cache.flush()

            let kept = try fixture.disk.entry(for: "k", in: "test").map { String(decoding: $0.data, as: UTF8.self) }
            #expect(kept != "1", "the disk no longer holds the replaced value")
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "k") == nil)
            #expect(try await cache.value(for: "k") == nil)
            let second = try Cache<String, String>(configuration: fixture.configuration)
            #expect(try await second.value(for: "k") == nil, "nor does another cache over the same disk")

            cache["k"] = "4"
            await cache.flush()
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "k") == "4", "a newer write is read from the disk again")
        }
    }

    @Test("While the disk is down, a read that misses memory does not take the replaced value from it")
    func diskNotReadWhileDown() async throws {
        try await Self.withFailingDisk(reportsFailures: true) { fixture in
            let cache = fixture.cache
            cache["kept"] = "a"
            await fixture.replaceWhileFailing()
            try await Self.evictMemory(cache)

            #expect(cache.cachedValue(for: "k") == nil)
            #expect(try await cache.value(for: "k") == nil)
            #expect(cache.cachedValue(for: "kept") == "a", "a key whose changes the disk applied is read from it")
            cache["other"] = "x"
            await cache.flush()
            #expect(try await cache.value(for: "k") == nil, "a repair that fails keeps the key masked")
            let reported = fixture.failures.all.filter { $0.key == "k" }
            #expect(reported.count == 1, "the failed change is reported once, its repairs are not: \(reported)")
        }
    }

    @Test("A remote store that failed a batch as a whole is not read for those keys, and is repaired")
    func remoteRepaired() async throws {
        let remote = WriteFailingRemoteStore()
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [remote]
        let cache = try Cache<String, String>(configuration: configuration)
        await Self.replaceWhileFailing(cache, failing: remote.failing)
        try await Self.evictMemory(cache)
        #expect(try await cache.value(for: "k") == nil, "while the store is down")

        remote.failing.withLock { $0 = false }
        cache["other"] = "x"
        await cache.flush()
        let kept = try await remote.inner.entry(for: "k", in: "test").map { String(decoding: $0.data, as: UTF8.self) }
        #expect(kept != "1", "the remote store no longer holds the replaced value")
        let second = try Cache<String, String>(configuration: configuration)
        #expect(try await second.value(for: "k") == nil, "nor does another cache over the same store read it")
    }

    @Test("A clear a disk failed masks the whole disk until the clear is sent again and applied")
    func failedClearMasksDisk() async throws {
        try await Self.withFailingDisk { fixture in
            let cache = fixture.cache
            cache["k"] = "1"
            await cache.flush()
            fixture.store.failing.withLock { $0 = true }
            try await #require(throws: HoardError.self) { try await cache.clear() }
            #expect(cache.cachedValue(for: "k") == nil, "the removed value is not read from the disk")

            fixture.store.failing.withLock { $0 = false }
            cache["other"] = "x"
            await cache.flush()
            #expect(try fixture.disk.keys(in: "test") == ["other"])
        }
    }

    @Test("Past the bound of suspect keys, the whole disk is masked until a clear of it is applied")
    func boundFallsBackToClear() async throws {
        try await Self.withFailingDisk(memoryLimit: 10_000) { fixture in
            let (cache, store, disk) = (fixture.cache, fixture.store, fixture.disk)
            let count = 4_097
            for index in 0..<count { cache["k\(index)"] = "old" }
            cache["kept"] = "a"
            await cache.flush()
            store.failing.withLock { $0 = true }
            for index in 0..<count { cache["k\(index)"] = "new" }
            await cache.flush()
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "k0") == nil)
            #expect(cache.cachedValue(for: "k\(count - 1)") == nil)
            #expect(cache.cachedValue(for: "kept") == nil, "no key is read from the disk")

            store.failing.withLock { $0 = false }
            cache["other"] = "x"
            await cache.flush()
            #expect(try disk.keys(in: "test") == ["other"], "the disk was cleared, then written")
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "other") == "x", "the disk is read again")
        }
    }

    @Test("A flush with no other write repairs a disk that recovered: no cache over it reads the old value")
    func flushRepairsRecoveredDisk() async throws {
        try await Self.withFailingDisk { fixture in
            let cache = fixture.cache
            await fixture.replaceWhileFailing()
            fixture.store.failing.withLock { $0 = false }
            await cache.flush()

            let kept = try fixture.disk.entry(for: "k", in: "test")
            #expect(kept == nil, "the flush removed the replaced value from the disk")
            let second = try Cache<String, String>(configuration: fixture.configuration)
            #expect(try await second.value(for: "k") == nil, "another cache over the same disk does not serve it")
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "k") == nil)
        }
    }

    @Test("A flush with no other write repairs a remote store that recovered")
    func flushRepairsRecoveredRemote() async throws {
        let remote = WriteFailingRemoteStore()
        var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [remote]
        let cache = try Cache<String, String>(configuration: configuration)
        await Self.replaceWhileFailing(cache, failing: remote.failing)
        remote.failing.withLock { $0 = false }
        await cache.flush()

        #expect(try await remote.inner.entry(for: "k", in: "test") == nil, "the flush removed the replaced value")
        let second = try Cache<String, String>(configuration: configuration)
        #expect(try await second.value(for: "k") == nil, "another cache over the same store does not serve it")
    }

    @Test("A flush with no other write clears a disk that failed a clear, once it recovered")
    func flushRepairsFailedClear() async throws {
        try await Self.withFailingDisk { fixture in
            let cache = fixture.cache
            cache["k"] = "1"
            await cache.flush()
            fixture.store.failing.withLock { $0 = true }
            try await #require(throws: HoardError.self) { try await cache.clear() }
            fixture.store.failing.withLock { $0 = false }
            await cache.flush()
            #expect(try fixture.disk.keys(in: "test").isEmpty, "the flush sent the clear again")
            try await Self.evictMemory(cache)
            cache["other"] = "x"
            await cache.flush()
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "other") == "x", "the disk is read again")
        }
    }

    @Test("A repair that fails again during a flush keeps the key suspect and is not reported again")
    func flushRepairFailsAgain() async throws {
        try await Self.withFailingDisk(reportsFailures: true) { fixture in
            let (cache, store, disk, failures) = (fixture.cache, fixture.store, fixture.disk, fixture.failures)
            await fixture.replaceWhileFailing()
            let before = store.attempts.withLock { $0 }
            await cache.flush()
            #expect(store.attempts.withLock { $0 } == before + 1, "the flush sent the repair once")
            try await Self.evictMemory(cache)
            #expect(cache.cachedValue(for: "k") == nil, "the key is still not read from the disk")
            let reported = failures.all.filter { $0.key == "k" }
            #expect(reported.count == 1, "the failed change is reported once, its repairs are not: \(reported)")
            #expect(failures.all.count == 1, "\(failures.all)")

            store.failing.withLock { $0 = false }
            await cache.flush()
            #expect(try disk.entry(for: "k", in: "test") == nil, "the next flush repairs it")
        }
    }
}
