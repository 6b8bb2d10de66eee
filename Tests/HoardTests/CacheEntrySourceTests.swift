import Foundation
import Hoard
import Testing

@Suite("A Cache's reads say which tier answered", .timeLimit(.minutes(3)))
struct CacheEntrySourceTests {
    static func encoded(_ text: String) throws -> Data {
        try ValueCodec<String>.automatic().encode(text)
    }

    @Test("entry(for:) names the fetch, memory, each local store by position, a remote store and a pending write")
    func everyTier() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let first = try DiskStore(directory: directory.appendingPathComponent("first"))
            let second = GatedStore(try DiskStore(directory: directory.appendingPathComponent("second")))
            let remote = InMemoryRemoteStore()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(memoryLimit: 1)
            configuration.localStores = .stores([first, second])
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration) { key in "fetched \(key)" }
            let now = Date()

            // No tier holds it: the fetch answers, then memory.
            let fetched = try #require(try await cache.entry(for: "f"))
            #expect(fetched.value == "fetched f")
            #expect(fetched.source == .fetch)
            #expect(try await cache.entry(for: "f")?.source == .memory)
            #expect(cache.cachedEntry(for: "f")?.source == .memory)
            await cache.flush()

            // Only the second local store holds "l": local store 1; then memory.
            try second.set(Self.encoded("two"), for: "l", in: "test", storedAt: now, expiresAt: nil)
            let local = try #require(try await cache.entry(for: "l"))
            #expect(local.value == "two")
            #expect(local.source == .local(1))
            #expect(try await cache.entry(for: "l")?.source == .memory)
            await cache.flush()

            // Only the first local store holds "s", read synchronously: local store 0.
            try first.set(Self.encoded("one"), for: "s", in: "test", storedAt: now, expiresAt: nil)
            #expect(cache.cachedEntry(for: "s")?.source == .local(0))

            // Only the remote store holds "r": remote store 0.
            try await remote.set(Self.encoded("far"), for: "r", in: "test", storedAt: now, expiresAt: nil)
            let far = try #require(try await cache.entry(for: "r"))
            #expect(far.value == "far")
            #expect(far.source == .remote(0))
            await cache.flush()

            // A write still queued for the stores, evicted from memory: the pending write.
            second.close()
            cache["p"] = "queued"
            cache["other"] = "x"  // memory holds one entry: evicts "p"
            let pending = try #require(try await cache.entry(for: "p"))
            #expect(pending.value == "queued")
            #expect(pending.source == .pendingWrite)
            second.release()
            await cache.flush()
        }
    }

    @Test("The source is not part of an entry's equality, and an entry a caller makes has none")
    func equality() {
        let date = Date(timeIntervalSince1970: 1_000)
        let made = CacheEntry(value: "v", storedAt: date, expiresAt: nil)
        #expect(made.source == nil)
        #expect(made == CacheEntry(value: "v", storedAt: date, expiresAt: nil, source: .local(0)))
        #expect(made != CacheEntry(value: "w", storedAt: date, expiresAt: nil, source: nil))
        #expect(CacheEntrySource.remote(1).description == "remote store 1")
    }
}
