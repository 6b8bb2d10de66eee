import Foundation
import Testing

@testable import Hoard

@Suite("Queued writes are flushed when the process exits normally", .timeLimit(.minutes(3)))
struct CacheExitFlushTests {
    /// A transport that never reaches an origin: what a cache answers, it answered
    /// from its storage.
    struct Unreachable: HTTPCacheTransport {
        struct Offline: Error {}
        func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
            throw Offline()
        }
    }

    @Test(
        "A child that writes behind through a Cache and calls exit(0) without flush() loses nothing",
        arguments: ["main", "task"])
    func cache(from thread: String) throws {
        try DiskTest.withTemporaryDirectory { directory in
            let child = try DiskTest.run(
                DiskTest.childExecutable(), ["exit-without-flush", directory.path, "cache", thread])
            #expect(child.status == 0, "\(child.errors)")
            #expect(child.output == "queued\n", "\(child.errors)")
            let store = try DiskStore(directory: directory)
            #expect(try store.usage(in: "exit").count == 100)
            var configuration = Cache<String, String>.Configuration(name: "exit")
            configuration.localStores = .stores([store])
            let cache = try Cache<String, String>(configuration: configuration)
            for index in [0, 57, 99] {
                #expect(cache.cachedValue(for: "key-\(index)") == "value-\(index)")
            }
        }
    }

    @Test(
        "A child that stores a response through an HTTPResponseCache and calls exit(0) without flush() loses nothing",
        arguments: ["main", "task"])
    func httpResponseCache(from thread: String) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let child = try DiskTest.run(
                DiskTest.childExecutable(), ["exit-without-flush", directory.path, "http", thread])
            #expect(child.status == 0, "\(child.errors)")
            #expect(child.output == "queued\n", "\(child.errors)")
            var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "exit-http")
            storage.localStores = .stores([try DiskStore(directory: directory)])
            let http = try HTTPResponseCache(configuration: .init(storage: storage), transport: Unreachable())
            let response = try await http.response(for: #require(URL(string: "https://example.com/feed")))
            #expect(response.body == Data("feed".utf8))
            #expect(response.isFromCache)
        }
    }

    @Test("The registry flushes live writers, keeps none alive, and returns once they are done")
    func registry() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let registry = _ExitFlush()
            let gated = GatedStore(try DiskStore(directory: directory))
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            var cache: Cache<String, String>? = try Cache(configuration: configuration)
            registry.register(try #require(cache).writer)
            do {
                let gone = try Cache<String, String>(configuration: CacheTest.configuration())
                registry.register(gone.writer)
            }
            #expect(registry.liveCount == 1, "a writer with nothing queued and no cache is not kept alive")

            gated.close()
            cache?["k"] = "v"
            cache = nil  // the queued write still holds its writer
            #expect(registry.liveCount == 1)
            let flushed = Task.detached { registry.flushAll(timeout: .seconds(60)) }
            gated.release()
            #expect(await flushed.value)
            #expect(try DiskStore(directory: directory).entry(for: "k", in: "test") != nil)
        }
    }

    @Test("The exit flush also repairs a store that recovered from a failed batch, with no other write")
    func exitFlushRepairs() async throws {
        try await CacheSuspectKeyTests.withFailingDisk { fixture async throws in
            let registry = _ExitFlush()
            registry.register(fixture.cache.writer)
            await fixture.replaceWhileFailing()
            fixture.store.failing.withLock { $0 = false }

            let flushed = Task.detached { registry.flushAll(timeout: .seconds(60)) }
            #expect(await flushed.value)
            #expect(try fixture.disk.entry(for: "k", in: "test") == nil, "the disk no longer holds the replaced value")
        }
    }
}
