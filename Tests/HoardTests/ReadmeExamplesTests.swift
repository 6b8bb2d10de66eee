import Foundation
import Hoard
import Testing

/// One test per README example, doing what the example does, so the README cannot rot.
@Suite("README examples", .timeLimit(.minutes(1)))
struct ReadmeExamplesTests {
    @Test("A memory cache")
    func memoryCache() throws {
        let cache = try MemoryCache<String, Data>(configuration: .init(countLimit: 1_000))
        cache["avatar"] = Data([0x89, 0x50, 0x4E, 0x47])
        let avatar = cache["avatar"]
        #expect(avatar == Data([0x89, 0x50, 0x4E, 0x47]))
        cache["avatar"] = nil
        #expect(cache["avatar"] == nil)
    }

    @Test("Limits and eviction")
    func limitsAndEviction() throws {
        let images = try MemoryCache<URL, Data>(
            configuration: .init(costLimit: 64 << 20, lowWaterMark: 0.75, policy: .tinyLFU))
        let url = try #require(URL(string: "https://example.com/big.png"))
        let hugeData = Data(count: (64 << 20) + 1)
        let stored = images.set(hugeData, for: url)
        #expect(stored == false)
        for i in 0..<40 {
            images[try #require(URL(string: "https://example.com/\(i).png"))] = Data(count: 1 << 20)
        }
        #expect(images.totalCost == 40 << 20)
        images.purge(downTo: 16 << 20)
        #expect(images.totalCost <= 16 << 20)
    }

    @Test("Lifetimes and freshness")
    func lifetimesAndFreshness() throws {
        let clock = ManualClock()
        let sessions = try MemoryCache<String, String>(configuration: .init(defaultExpiry: .minutes(30)), clock: clock)
        let lastLogout = clock.now()
        clock.advance(by: 1)
        sessions["alice"] = "token-a"
        sessions.set("token-b", for: "bob", expires: .seconds(60))
        sessions.set("token-c", for: "carol", expires: .never)

        #expect(sessions["alice", maxAge: 60] == "token-a")
        #expect(sessions["alice", newerThan: lastLogout] == "token-a")
        clock.advance(by: 61)
        #expect(sessions["alice", maxAge: 60] == nil)
        #expect(sessions.removeExpired() == 1)  // bob
        clock.advance(by: 30 * 60)
        #expect(sessions["alice"] == nil)
        #expect(sessions["carol"] == "token-c")
    }

    @Test("A manual clock instead of sleeping")
    func manualClock() throws {
        let clock = ManualClock()
        let cache = try MemoryCache<String, Int>(clock: clock)
        cache.set(1, for: "k", expires: .seconds(10))
        clock.advance(by: 11)
        #expect(cache["k"] == nil)
    }

    @Test("Observing changes")
    func observingChanges() async throws {
        let users = try MemoryCache<Int, String>(configuration: .init(countLimit: 10))
        let userID = 7
        var updates = users.updates(for: userID).makeAsyncIterator()
        var events = users.events.makeAsyncIterator()
        users[userID] = "Ada"
        users[userID] = nil
        #expect(await updates.next() == .some(nil))
        #expect(await updates.next() == .some("Ada"))
        #expect(await updates.next() == .some(nil))
        #expect(await events.next() == .set(userID))
        #expect(await events.next() == .removed(userID))
        _ = users[userID]
        #expect(users.statistics.description == "hits 0, misses 1 (hit ratio 0.0%), evictions 0, expirations 0")
    }

    struct User: Codable, Sendable, Equatable {
        var name: String
        var joined: Date
    }

    @Test("Keys and values")
    func keysAndValues() throws {
        let codec = try ValueCodec<User>.automatic()
        let original = User(name: "Ada", joined: Date(timeIntervalSince1970: 1_000_000.5))
        let bytes = try codec.encode(original)
        #expect(try codec.decode(bytes) == original)
    }

    @Test("A disk store")
    func diskStore() throws {
        struct User: Codable, Sendable, Equatable { var name: String }
        // `DiskStore(named:)` opens the user's cache directory; the test checks that
        // location and does the same work in a temporary directory.
        let expected = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
            .appendingPathComponent("com.example.app")
        #expect(try DiskStore.defaultDirectory(named: "com.example.app").path == expected.path)
        try DiskTest.withTemporaryDirectory { directory in
            let store = try DiskStore(directory: directory.appendingPathComponent("com.example.app"))
            try store.set(User(name: "Ada"), for: "user:42", expires: .hours(1), in: "users")
            let user = try store.value(for: "user:42", as: User.self, in: "users")
            #expect(user == User(name: "Ada"))

            let cacheURL = directory.appendingPathComponent("images")
            let events = EventRecorder()
            let images = try DiskStore(directory: cacheURL, configuration: .init(
                byteLimit: 512 << 20,
                onEvent: events.handler))
            let pngData = Data([0x89, 0x50, 0x4E, 0x47]) + Data(count: 40_000)
            let url = try #require(URL(string: "https://example.com/a.png"))
            try images.set(pngData, for: url, in: "thumbnails")
            try images.set(Data([1]), for: url, in: "originals")
            #expect(try images.value(for: url, as: Data.self, in: "thumbnails") == pngData)
            try images.removeAll(in: "thumbnails")
            #expect(try images.value(for: url, as: Data.self, in: "thumbnails") == nil)
            #expect(try images.value(for: url, as: Data.self, in: "originals") == Data([1]))
            let report = try images.verify()
            #expect(report.isHealthy)
            #expect(events.all.isEmpty)
        }
    }

    @Test("Using more than one core")
    func shards() throws {
        let cache = try MemoryCache<Int, Int>(configuration: .init(countLimit: 8_000, shards: 8))
        for i in 0..<20_000 {
            cache[i] = i
            #expect(cache[i] == i)
        }
        // Each shard holds at most 1,000: the cache as a whole never passes 8,000, and
        // evicts as soon as one shard is full.
        #expect(cache.count <= 8_000)
        #expect(cache.count > 5_000)
    }
}
