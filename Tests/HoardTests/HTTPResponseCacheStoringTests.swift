import Foundation
import Synchronization
import Testing

@testable import Hoard

/// How an ``HTTPResponseCache`` writes what it stores: the variants of one URL,
/// `flush()`, and the default store names.
@Suite("HTTP response cache: storing", .timeLimit(.minutes(3)))
struct HTTPResponseCacheStoringTests {
    @Test("Concurrent stores of two Vary variants of one URL keep both")
    func concurrentVariantsSurvive() async throws {
        // Given a storage whose remote store holds the read of the English store,
        // after it found nothing, until the test releases it
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let remote = HoldingRemoteStore()
        let transport = VaryingTransport(clock: clock) { language in
            if language == "en" { remote.holdNextRead() }  // the next read is the English store's
        }
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-vary")
        storage.localStores = .none
        storage.remoteStores = [remote]
        let http = try HTTPResponseCache(configuration: .init(storage: storage), transport: transport, clock: clock)
        let url = try #require(URL(string: "http://origin.test/greeting"))

        // When the French response is stored while the English store is between
        // its read and its write
        let english = Task { try await http.response(for: url, headers: ["Accept-Language": "en"]) }
        await remote.gate.arrival()
        let frenchDone = Atomic<Bool>(false)
        let french = Task {
            defer { frenchDone.store(true, ordering: .sequentiallyConsistent) }
            return try await http.response(for: url, headers: ["Accept-Language": "fr"])
        }
        // (it either waits for the English store, or has stored its own list, or
        // shares the English request's read of the stored list)
        #expect(
            await CacheTest.eventually {
                frenchDone.load(ordering: .sequentiallyConsistent)
                    || http.variantUpdates.waiting(for: url.absoluteString) == 1
                    || http.storage.statistics.coalescedWaits == 1
            })
        remote.gate.open()
        #expect(try await english.value.body == Data("hello in en".utf8))
        #expect(try await french.value.body == Data("hello in fr".utf8))

        // Then both variants are stored, in memory and in the store
        await http.flush()
        let stored = try await http.storage.value(for: url.absoluteString)?.responses ?? []
        #expect(Set(stored.map(\.body)) == [Data("hello in en".utf8), Data("hello in fr".utf8)])
        let inStore = try await remote.inner.entry(for: url.absoluteString, in: "http-vary")
        let decoded = try HTTPStoredResponses(cacheData: try #require(inStore).data)
        #expect(decoded.responses.count == 2)
        for language in ["en", "fr"] {
            let again = try await http.response(for: url, headers: ["Accept-Language": language])
            #expect(again.isFromCache)
            #expect(again.body == Data("hello in \(language)".utf8))
        }
        #expect(transport.requests == 2)
    }

    @Test("In write-through mode, storing suspends until the store has the response, blocking no thread")
    func writeThroughBlocksNoThread() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            // Given a write-through storage whose disk write is held
            let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
            let disk = try DiskStore(directory: directory)
            let held = HookedStore(disk)
            var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-through")
            storage.localStores = .stores([held])
            storage.writeMode = .writeThrough
            let http = try HTTPResponseCache(
                configuration: .init(storage: storage), transport: VaryingTransport(clock: clock) { _ in },
                clock: clock)
            let url = try #require(URL(string: "http://origin.test/through"))
            let responses = HTTPStoredResponses(responses: [
                HTTPCachedResponse(
                    url: url, statusCode: 200, headers: ["Cache-Control": "max-age=60"], body: Data("kept".utf8),
                    requestTime: clock.now(), responseTime: clock.now(), isFromCache: true)
            ])
            held.writeGate.close()

            // When a task on a one-thread executor stores a response
            let executor = _BlockingExecutor(label: "test.http-one-thread", width: 1)
            let writing = Task(executorPreference: executor) {
                await http.write(responses, for: _HTTPRequest(HTTPCacheRequest(url: url)))
            }
            await held.writeGate.arrival()

            // Then another task runs on that thread while the write waits for the store
            let ranBeside = Atomic<Bool>(false)
            Task(executorPreference: executor) { ranBeside.store(true, ordering: .sequentiallyConsistent) }
            let ran = await CacheTest.eventually { ranBeside.load(ordering: .sequentiallyConsistent) }
            held.writeGate.open()
            await writing.value
            #expect(ran, "the store blocked the thread of the task that stored")
            let entry = try #require(try disk.entry(for: url.absoluteString, in: "http-through"))
            #expect(try HTTPStoredResponses(cacheData: entry.data).responses.first?.body == Data("kept".utf8))
        }
    }

    @Test("A response stored and flushed is in the disk store, read by a fresh instance")
    func flushReachesTheDisk() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            // Given a response whose write to the disk store is held
            let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
            let disk = try DiskStore(directory: directory)
            let held = HookedStore(disk)
            let transport = VaryingTransport(clock: clock) { _ in }
            func cache(over store: any CacheStore) throws -> HTTPResponseCache {
                var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-flush")
                storage.localStores = .stores([store])
                return try HTTPResponseCache(configuration: .init(storage: storage), transport: transport, clock: clock)
            }
            let http = try cache(over: held)
            let url = try #require(URL(string: "http://origin.test/flushed"))
            held.writeGate.close()
            _ = try await http.response(for: url, headers: ["Accept-Language": "en"])
            await held.writeGate.arrival()

            // When the program flushes
            let flushed = Atomic<Bool>(false)
            let flushing = Task {
                await http.flush()
                flushed.store(true, ordering: .sequentiallyConsistent)
            }

            // Then flush returns only once the write is done
            #expect(
                !(await CacheTest.eventually { flushed.load(ordering: .sequentiallyConsistent) }),
                "flush returned while the write was held")
            held.writeGate.open()
            await flushing.value
            let fresh = try cache(over: disk)
            let reloaded = try await fresh.response(for: url, headers: ["Accept-Language": "en"])
            #expect(reloaded.isFromCache)
            #expect(reloaded.body == Data("hello in en".utf8))
            #expect(transport.requests == 1)
        }
    }

    @Test("flush waits for a background revalidation started before it")
    func flushWaitsForBackgroundRevalidation() async throws {
        // Given a stale response whose background revalidation is held
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_700_000_000))
        let transport = HeldRefreshTransport(clock: clock)
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-background")
        storage.localStores = .none
        let http = try HTTPResponseCache(configuration: .init(storage: storage), transport: transport, clock: clock)
        let url = try #require(URL(string: "http://origin.test/refreshed"))
        _ = try await http.response(for: url)
        clock.advance(by: 5)
        #expect(try await http.response(for: url).body == Data("v0".utf8))
        #expect(await CacheTest.eventually { transport.refreshes.calls == 1 })

        // When the program flushes
        let flushed = Atomic<Bool>(false)
        let flushing = Task {
            await http.flush()
            flushed.store(true, ordering: .sequentiallyConsistent)
        }

        // Then flush returns once the revalidated response is stored
        #expect(
            !(await CacheTest.eventually { flushed.load(ordering: .sequentiallyConsistent) }),
            "flush returned while the revalidation was held")
        transport.refreshes.open()
        await flushing.value
        #expect(http.storage.cachedValue(for: url.absoluteString)?.responses.first?.body == Data("v1".utf8))
    }

    @Test("Default store names: one per program, a valid name whatever the program is called")
    func defaultStoreNames() throws {
        #expect(_HTTPStoreName.name("http", program: "com.example.Reader") == "com.example.Reader.http")
        #expect(_HTTPStoreName.name("http", program: "my tool") == "my-tool.http")
        #expect(_HTTPStoreName.name("http", program: "../../etc/passwd") == "etc-passwd.http")
        #expect(_HTTPStoreName.name("http", program: "a..b...c") == "a.b.c.http")
        #expect(_HTTPStoreName.name("http-responses", program: "café") == "caf.http-responses")
        #expect(_HTTPStoreName.name("http", program: "") == "hoard.http")
        #expect(_HTTPStoreName.name("http", program: "...") == "hoard.http")
        #expect(_HTTPStoreName.name("http", program: "日本語") == "hoard.http")
        let long = _HTTPStoreName.name("http-responses", program: String(repeating: "x", count: 300))
        #expect(long.utf8.count == _HTTPStoreName.maximumLength)
        #expect(long.hasSuffix("x.http-responses"))
        let cutAtDot = _HTTPStoreName.name("http", program: String(repeating: "a", count: 122) + ".b")
        #expect(cutAtDot == String(repeating: "a", count: 122) + ".http")
        for program in ["com.example.Reader", "my tool", "../../etc/passwd", "", "...", "-x-", "a/b\0c", "日本語"] {
            for suffix in ["http", "http-responses"] {
                #expect(throws: Never.self) {
                    try _LocalNames.validate(_HTTPStoreName.name(suffix, program: program), what: "a store name")
                }
            }
        }

        // The defaults follow the running program, and an explicit name is kept
        let program = ProcessInfo.processInfo.processName
        #if !canImport(Darwin)
        #expect(_HTTPStoreName.program == program)
        #endif
        let expected = _HTTPStoreName.name("http-responses", program: _HTTPStoreName.program)
        #expect(HTTPResponseCache.Configuration().storage.name == expected)
        #expect(expected != "http-responses")
        let named = HTTPResponseCache.Configuration(storage: .init(name: "mine"))
        #expect(named.storage.name == "mine")
    }
}

/// A remote store over an ``InMemoryRemoteStore`` whose next read, once
/// ``holdNextRead()`` armed it, stops at ``gate`` after fetching its entry.
final class HoldingRemoteStore: ForwardingRemoteStore {
    let inner = InMemoryRemoteStore()
    let gate = StoreGate()
    private let armed = Atomic<Bool>(false)

    func holdNextRead() {
        gate.close()
        armed.store(true, ordering: .sequentiallyConsistent)
    }

    func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        let found = try await inner.entry(for: key, in: namespace)
        if armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged {
            await gate.pass()
        }
        return found
    }
}

/// An origin, without a network, that answers every request with a response fresh
/// for a minute that varies by `Accept-Language`, and calls `onRequest` with the
/// language before answering.
final class VaryingTransport: HTTPCacheTransport {
    private let clock: ManualClock
    private let onRequest: @Sendable (String?) -> Void
    private let count = Atomic<Int>(0)

    init(clock: ManualClock, onRequest: @escaping @Sendable (String?) -> Void) {
        self.clock = clock
        self.onRequest = onRequest
    }

    /// How many requests reached the origin.
    var requests: Int { count.load(ordering: .sequentiallyConsistent) }

    func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        count.add(1, ordering: .sequentiallyConsistent)
        let language = request.headers["accept-language"]
        onRequest(language)
        return HTTPTransportResponse(
            statusCode: 200,
            headers: [
                "Cache-Control": "max-age=60", "Vary": "Accept-Language", "Date": _HTTPDate.format(clock.now()),
            ],
            body: Data("hello in \(language ?? "none")".utf8))
    }
}

/// An origin that answers the first request with "v0", fresh for a second and then
/// servable stale for a minute, and holds every later one at ``refreshes`` until
/// it is opened, then answers "v1", fresh for a minute.
final class HeldRefreshTransport: HTTPCacheTransport {
    let refreshes = FetchProbe(open: false)
    private let clock: ManualClock
    private let answered = Atomic<Bool>(false)

    init(clock: ManualClock) { self.clock = clock }

    func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        let date = _HTTPDate.format(clock.now())
        guard answered.exchange(true, ordering: .sequentiallyConsistent) else {
            return HTTPTransportResponse(
                statusCode: 200, headers: ["Cache-Control": "max-age=1, stale-while-revalidate=60", "Date": date],
                body: Data("v0".utf8))
        }
        await refreshes.enter()
        return HTTPTransportResponse(
            statusCode: 200, headers: ["Cache-Control": "max-age=60", "Date": date], body: Data("v1".utf8))
    }
}
