import Foundation
import Hoard
import HoardLoggingTestSupport
import Logging
import Synchronization
import Testing

/// Every failure reaches statistics, events, the logger and `onError` once, as
/// the same `CacheFailure`.
@Suite("Cache: one report per failure, four ways", .timeLimit(.minutes(3)))
struct CacheFailureReportTests {
    struct Refused: Error {}

    /// The failures each of the four ways received.
    final class Received: Sendable {
        let events = Mutex<[CacheFailure]>([])
        let handled = Mutex<[CacheFailure]>([])
    }

    @Test("A fetch that fails for three joined readers is reported once, the same way everywhere")
    func fetchFailureReportedOnce() async throws {
        let handler = RecordingLogHandler()
        let received = Received()
        let probe = FetchProbe(open: false)
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration("fetching")
        configuration.logger = handler.logger()
        configuration.onError = { failure in received.handled.withLock { $0.append(failure) } }
        let cache = try Cache<String, Int>(configuration: configuration) { _ in
            await probe.enter()
            throw Refused()
        }
        let events = cache.events
        let listener = Task {
            for await event in events {
                if case .failed(let failure) = event { received.events.withLock { $0.append(failure) } }
            }
        }
        let reads = (0..<3).map { _ in Task { try await cache.value(for: "k") } }
        #expect(await CacheTest.eventually { probe.calls == 1 })
        // Every reader has joined the one fetch before it fails.
        #expect(await CacheTest.eventually { cache.statistics.coalescedWaits == 2 })
        probe.open()
        for read in reads {
            await #expect(throws: Refused.self) { try await read.value }
        }
        await cache.flush()

        #expect(cache.statistics.fetchFailures == 1)
        #expect(received.handled.withLock { $0.count } == 1)
        let warnings = handler.records.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["hoard.tier"] == "fetch")
        #expect(warnings.first?.metadata["hoard.key"] == "k")
        let handled = try #require(received.handled.withLock { $0.first })
        #expect(handled.tier == .fetch && handled.operation == .fetch && handled.key == "k")
        #expect(handled.error is Refused)
        // The event stream receives it too (asynchronously: wait for it).
        #expect(await CacheTest.eventually { received.events.withLock { $0.count } == 1 })
        listener.cancel()
    }

    @Test("A store's read and write failures name the caller's key, not the store's normalised form")
    func failuresNameTheCallersKey() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let gated = GatedStore(try DiskStore(directory: directory))
            let received = Received()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            configuration.onError = { failure in received.handled.withLock { $0.append(failure) } }
            let cache = try Cache<String, String>(configuration: configuration)
            // "é" written as "e" and a combining accent: the store keeps its NFC form.
            let key = "caf\u{65}\u{301}"
            gated.fail(with: HoardError(.storageFull, "disk full"))
            cache[key] = "v"
            await cache.flush()
            #expect(try await cache.value(for: "absent") == nil)
            await cache.flush()
            // The refused write, the refused removal of the older value, the read.
            let keys = received.handled.withLock { $0.map(\.key) }
            #expect(keys.count == 3)
            #expect(keys.allSatisfy { $0 == key || $0 == "absent" })
            #expect(keys.contains { $0?.unicodeScalars.elementsEqual(key.unicodeScalars) == true })
        }
    }
}
