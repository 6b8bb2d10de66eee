import Foundation
import Logging
import Testing

// Testable: the settings examples run in a settings domain of the test's own.
@testable import Hoard

#if Metrics
import HoardMetrics
#endif
#if ServiceLifecycle
import HoardServiceLifecycle
import ServiceLifecycle
#endif

/// One test per README example, doing what the example does, so the README cannot rot.
@Suite("README examples", .timeLimit(.minutes(3)))
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

    struct Event: Codable, Sendable, Equatable {
        var name: String
        var at: Date
    }

    @Test("A message log")
    func messageLog() async throws {
        try await withTemporaryDirectory { logsDirectory in
            let url = logsDirectory.appendingPathComponent("events.log")
            let log = try MessageLog<Event>(fileURL: url, maximumBytes: 64 << 10, overwritesOldMessages: true)
            let launch = Event(name: "launch", at: Date(timeIntervalSince1970: 1_000))
            try log.append(launch)
            let batch = (0..<2_000).map { Event(name: "tap \($0)", at: Date(timeIntervalSince1970: Double($0))) }
            try log.append(contentsOf: batch)

            let all = try log.messages()
            #expect(all.last == batch.last)
            #expect(!all.contains(launch))  // 2,000 taps overflow 64 KiB: the oldest went
            #expect(try Data(contentsOf: url).count <= 64 << 10)
            let recent = try log.newestMessages(10)
            #expect(recent == Array(batch.suffix(10)))
            var streamed: [Event] = []
            for try await event in log.asyncMessages { streamed.append(event) }
            #expect(streamed == all)

            let refusing = try MessageLog<Data>(
                fileURL: logsDirectory.appendingPathComponent("full.log"), maximumBytes: 100,
                overwritesOldMessages: false, codec: .cacheValue)
            try refusing.append(Data(count: 20))
            #expect(throws: HoardError.self) { try refusing.append(Data(count: 20)) }  // .logFull
            #expect(throws: HoardError.self) { try refusing.append(Data(count: 100)) }  // .messageLargerThanBudget
            #expect(try log.recover().isIntact)
            let other = try MessageLog<Event>(fileURL: url, maximumBytes: 1 << 20, overwritesOldMessages: true)
            #expect(!other.isWritable)
            #expect(try other.messages() == all)
        }
    }

    @Test("A disk store")
    func diskStore() throws {
        struct User: Codable, Sendable, Equatable { var name: String }
        // `DiskStore(named:)` opens the user's cache directory; the test checks that
        // location and does the same work in a temporary directory.
        let expected = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
            .appendingPathComponent(DiskStore.programFolderName).appendingPathComponent("com.example.app")
        #expect(try DiskStore.defaultDirectory(named: "com.example.app").path == expected.path)
        try DiskTest.withTemporaryDirectory { directory in
            let store = try DiskStore(directory: directory.appendingPathComponent("com.example.app"))
            try store.set(User(name: "Ada"), for: "user:42", expires: .hours(1), in: "users")
            let user = try store.value(for: "user:42", as: User.self, in: "users")
            #expect(user == User(name: "Ada"))

            let cacheURL = directory.appendingPathComponent("images")
            let events = EventRecorder()
            let images = try DiskStore(
                directory: cacheURL,
                configuration: .init(
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

@Suite("README examples: tiered cache", .timeLimit(.minutes(3)))
struct ReadmeCacheExamplesTests {
    struct User: Codable, Sendable, Equatable {
        var id: Int
        var name: String
    }

    @Test("One cache over every tier")
    func tieredCache() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            var configuration = Cache<Int, User>.Configuration(name: "users")
            configuration.localStores = .stores([try DiskStore(directory: directory)])
            let users = try Cache<Int, User>(configuration: configuration) { id in
                User(id: id, name: "user \(id)")
            }
            let user = try await users.value(for: 42)
            #expect(user == User(id: 42, name: "user 42"))
            #expect(users[42] == user)
            users[7] = User(id: 7, name: "Ada")
            try await users.set(User(id: 8, name: "Bo"), for: 8, expires: .hours(1))
            await users.flush()
            let reopened = try Cache<Int, User>(configuration: configuration)
            #expect(reopened[7]?.name == "Ada")
            #expect(reopened[8]?.name == "Bo")
        }
    }

    @Test("The README's first example, verbatim inside an async function, fetches and prints what it says")
    func firstExampleInAFunction() async throws {
        // The body of Examples/ReadmeFirstExample/main.swift (the README's first
        // block) minus its import; scripts/test runs the same lines at top level.
        struct User: Codable, Sendable {
            var id: Int
            var name: String
        }

        /// Stands in for your network client.
        struct API: Sendable {
            func user(_ id: Int) async throws -> User { User(id: id, name: "user \(id)") }
        }
        let api = API()

        let users = try Cache<Int, User>(configuration: .init(name: "users")) { id in
            try await api.user(id)  // runs once per missing key, however many callers wait
        }
        let user = try await users.value(for: 42)  // memory → disk → remote stores → fetch
        let cached = users.cachedValue(for: 42)  // synchronous: memory, then disk; never the network
        users[7] = User(id: 7, name: "Ada")  // memory at once, disk behind (write-behind)
        try await users.set(User(id: 8, name: "Bo"), for: 8, expires: .hours(1))  // returns when stored
        await users.flush()  // waits for queued writes
        print(user?.name ?? "nil", cached?.name ?? "nil", users[7]?.name ?? "nil")  // user 42 user 42 Ada

        #expect(user?.name == "user 42")
        #expect(cached?.name == "user 42")
        #expect(users[7]?.name == "Ada")
        #expect(users[8]?.name == "Bo")
    }

    @Test("Configuring freshness, negative caching and jitter, and logging; the README's block verbatim")
    func configuredCache() async throws {
        let logger = Logger(label: "feeds")
        /// Stands in for your HTTP client: `nil` for a feed that does not exist.
        let download: @Sendable (String) async throws -> Data? = { url in url == "missing" ? nil : Data(url.utf8) }

        var configuration = Cache<String, Data>.Configuration(name: "feeds")
        configuration.memory = .init(countLimit: 500, policy: .tinyLFU)
        configuration.defaultExpiry = .minutes(5)
        configuration.staleWhileRevalidate = 60  // serve an expired value for up to 60 s while refreshing once
        configuration.negativeCaching = 30  // remember "not found" for 30 s
        configuration.expiryJitter = 0.1  // lifetimes spread ±10%
        configuration.onError = { failure in print(failure) }  // write-behind and other background failures
        configuration.logger = logger  // the same failures, logged with hoard.* metadata
        let feeds = try Cache(configuration: configuration) { url in try await download(url) }

        print(feeds.statistics)  // memory (hits 0, misses 0, promotions 0), local (hits 0, ...), ..., misses 0, ...

        try await feeds.clear()  // the default disk store outlives the test
        #expect(try await feeds.value(for: "a") == Data("a".utf8))
        #expect(try await feeds.value(for: "missing") == nil)
        #expect(try await feeds.value(for: "missing") == nil, "remembered as not found")
        #expect(feeds.statistics.fetches == 2)
        #expect(feeds.statistics.negativeHits == 1)
        #expect(feeds.statistics.errors == 0)
        try await feeds.clear()
    }

    #if Metrics
    @Test("Metrics: the README's block compiles and reports to the bootstrapped metrics system")
    func metricsExample() async throws {
        var metered = Cache<Int, String>.Configuration(name: "users")
        metered.timings = CacheMetrics.timings(cache: "users")  // fetch and store durations
        let users = try Cache<Int, String>(configuration: metered)
        let metrics = CacheMetrics(users)
        metrics.update()  // or: await metrics.run(every: .seconds(10))

        users[1] = "Ada"
        #expect(users[1] == "Ada")
        metrics.update()
        await users.flush()
        try await users.clear()
    }
    #endif

    #if ServiceLifecycle
    @Test("In a server: the README's block compiles and its group flushes the cache on graceful shutdown")
    func inAServer() async throws {
        let logger = Logger(label: "app")
        var configuration = Cache<Int, String>.Configuration(name: "profiles")
        configuration.logger = logger
        let profiles = try Cache<Int, String>(configuration: configuration)
        let group = ServiceGroup(
            services: [CacheService(profiles)], gracefulShutdownSignals: [.sigterm], logger: logger)
        // try await group.run()   // serves until SIGTERM, then flushes what the cache still queues

        let running = Task { try await group.run() }
        profiles[1] = "Ada"
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(try await profiles.entry(for: 1)?.value == "Ada")
        try await profiles.clear()
    }
    #endif

    @Test("Settings")
    func settings() async throws {
        try await SettingsTest.withDomain { domain in
            let settings = try SettingsTest.store("com.example.app", domain, codec: ValueCodec<String>.automatic())
            try settings.set("john", for: "username")
            let username = settings.value(for: "username")
            #expect(username == "john")
            for await theme in settings.updates(for: "theme") {
                #expect(theme == nil)
                break
            }

            let flags = try SettingsTest.store(
                "com.example.flags", domain, codec: ValueCodec<Bool>.automatic(),
                configuration: .init(itemLimit: 4_096, valueByteLimit: 64))
            try flags.set(true, for: "beta")
            #expect(try flags.removeAll() == 1)
            #expect(settings.value(for: "username") == "john")
        }
    }

    @Test("Housekeeping")
    func housekeeping() throws {
        try DiskTest.withTemporaryDirectory { url in
            try SettingsTest.withDomain { domain in
                let caches = url.deletingLastPathComponent()
                do {
                    let store = try DiskStore(directory: caches.appendingPathComponent("com.example.app"))
                    try store.set(Data([1]), for: "a", in: "thumbnails")
                    try store.set(Data([2]), for: "b", in: "users")
                }
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)
                for store in try storage.inventory().stores {
                    #expect(store.name == "com.example.app")
                    #expect(store.entryCount == 2)
                    #expect(store.namespaces.keys.sorted() == ["thumbnails", "users"])
                }
                #expect(try storage.clearNamespace("thumbnails", inStore: "com.example.app") == 1)
                #expect(try storage.clearDiskStores().map(\.removed) == [1])
                let report = try storage.deleteAll()
                #expect(report.deletedStores == ["com.example.app"])
                #expect(report.isComplete)
            }
        }
    }
}
