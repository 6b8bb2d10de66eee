import Foundation
import Hoard
import Testing

/// Reads while changes wait in the writer's queue answer what the stores will
/// hold once the queue is applied.
@Suite("Cache: reads see the queued changes of every tier", .timeLimit(.minutes(3)))
struct CacheQueuedChangesTests {
    @Test("A value undone in each tier its own way (a clear of the remote stores, an invalidation) reads as gone")
    func valueUndoneTierByTier() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = HookedStore(try DiskStore(directory: directory))
            let server = InMemoryRemoteStore()
            var configuration = Cache<String, String>.Configuration(name: "test")
            configuration.localStores = .stores([disk])
            configuration.remoteStores = [server]
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("old", for: "k")
            var events = cache.events.makeAsyncIterator()

            // The writer stops at the disk store with the new value.
            disk.writeGate.close()
            cache["k"] = "new"
            await disk.writeGate.arrival()
            // Queued behind it: a clear of the remote stores, then another
            // instance's removal of the key (which empties memory and, once
            // applied, the local stores).
            let clear = Task { try await cache.clear(memory: false, disk: false, remote: true) }
            await CacheTest.awaitClears(1, on: &events)
            try await server.anotherInstance().removeValue(for: "k", in: "test")
            while let event = await events.next() {
                if case .invalidated("k") = event { break }
            }

            // Neither tier will hold "new", nor "old": the read answers nothing.
            #expect(try await cache.value(for: "k") == nil)
            #expect(cache.cachedValue(for: "k") == nil)

            disk.writeGate.open()
            try await clear.value
            await cache.flush()
            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await server.entry(for: "k", in: "test") == nil)
            #expect(try await cache.value(for: "k") == nil)
        }
    }
}
