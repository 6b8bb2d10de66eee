import Foundation
import Hoard
import Testing

@Suite("Cache writes", .timeLimit(.minutes(3)))
struct CacheWriteBehindTests {
    @Test("Write-behind keeps order: the last write to a key wins on disk")
    func ordering() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let cache = try Cache<Int, Int>(configuration: CacheTest.configuration(disk: disk))
            for round in 0..<50 {
                for key in 0..<20 { cache[key] = round * 100 + key }
                if round % 7 == 0 { cache[3] = nil }
            }
            cache[5] = nil
            await cache.flush()
            for key in 0..<20 where key != 5 && key != 3 {
                let stored = try #require(try disk.entry(for: String(key), in: "test"))
                #expect(String(decoding: stored.data, as: UTF8.self) == String(4_900 + key))
            }
            #expect(try disk.entry(for: "5", in: "test") == nil)
            #expect(try disk.entry(for: "3", in: "test") == nil, "removed after its last write")
        }
    }

    @Test("While a write waits, a read never sees the older value on disk, even after memory evicted it")
    func pendingWritesShadowTheDisk() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let gated = GatedStore(disk)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(memoryLimit: 1)
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("old", for: "k")
            gated.close()
            cache["k"] = "new"
            cache["other"] = "x"  // evicts k from memory
            #expect(cache["k"] == "new")
            cache["k"] = nil
            cache["other2"] = "y"
            #expect(cache["k"] == nil)
            gated.release()
            await cache.flush()
            #expect(try disk.entry(for: "k", in: "test") == nil)
        }
    }

    @Test("set(_:for:) returns once the disk has the value, and throws the store's error")
    func awaitedSet() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let gated = GatedStore(disk)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            let failures = FailureLog()
            configuration.onError = { failures.append($0) }
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("v", for: "k")
            #expect(try disk.entry(for: "k", in: "test") != nil)

            gated.fail(with: HoardError(.storageFull, "disk full"))
            await #expect(throws: HoardError.self) { try await cache.set("w", for: "k2") }
            #expect(cache["k2"] == "w", "memory keeps the value")
            cache["k3"] = "behind"
            await cache.flush()
            #expect(failures.all.contains { $0.tier == .local(0) && $0.operation == .write })
            gated.fail(with: nil)
            try await cache.removeValue(for: "k")
            #expect(try disk.entry(for: "k", in: "test") == nil)
        }
    }

    @Test("Write-through writes the disk before the assignment returns")
    func writeThrough() throws {
        try DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.writeMode = .writeThrough
            let cache = try Cache<String, String>(configuration: configuration)
            cache["k"] = "v"
            #expect(try disk.entry(for: "k", in: "test")?.data == Data("v".utf8))
        }
    }

    @Test("clear(memory:disk:remote:) clears only the chosen tiers, and only this cache's namespace")
    func clear() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let cache = try Cache<String, Int>(configuration: CacheTest.configuration("a", disk: disk))
            let neighbour = try Cache<String, Int>(configuration: CacheTest.configuration("b", disk: disk))
            try await cache.set(1, for: "k")
            try await neighbour.set(2, for: "k")
            try await cache.clear(memory: true, disk: false)
            #expect(cache.memoryCount == 0)
            #expect(cache["k"] == 1, "still on disk, promoted again")
            try await cache.clear()
            #expect(cache["k"] == nil)
            #expect(neighbour["k"] == 2)
            #expect(try disk.entry(for: "k", in: "b") != nil)
        }
    }

    @Test("Sustained write-behind batches many writes per transaction and loses none")
    func manyWrites() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let cache = try Cache<Int, Data>(configuration: CacheTest.configuration(disk: disk, memoryLimit: 100))
            let value = Data(repeating: 7, count: 1_024)
            for key in 0..<5_000 { cache[key] = value }
            await cache.flush()
            #expect(try disk.usage(in: "test").count == 5_000)
        }
    }
}
