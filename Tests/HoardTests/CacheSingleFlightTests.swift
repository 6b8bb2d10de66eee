import Foundation
import Synchronization
import Testing

@testable import Hoard

@Suite("Cache single-flight", .timeLimit(.minutes(3)))
struct CacheSingleFlightTests {
    @Test("1,000 concurrent tasks on one missing key cause one fetch, and all get its value")
    func stampede() async throws {
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            await probe.enter()
            return 42
        }
        let results = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<1_000 {
                group.addTask { try await cache.value(for: "answer") }
            }
            #expect(await CacheTest.eventually { cache.statistics.coalescedWaits == 999 })
            probe.open()
            return try await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        #expect(results.count == 1_000)
        #expect(results.allSatisfy { $0 == 42 })
        #expect(probe.calls == 1)
        #expect(cache.statistics.fetches == 1)
        #expect(cache["answer"] == 42)
    }

    @Test("A throwing fetch reaches every waiter, leaves nothing behind, and the next call fetches again")
    func failureReachesEveryone() async throws {
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            await probe.enter()
            if probe.calls == 1 { throw FetchFailed(attempt: 1) }
            return 7
        }
        let outcomes = await withTaskGroup(of: Result<Int?, FetchFailed>.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do { return .success(try await cache.value(for: "k")) } catch let error as FetchFailed {
                        return .failure(error)
                    } catch { return .failure(FetchFailed(attempt: -1)) }
                }
            }
            _ = await CacheTest.eventually { cache.statistics.coalescedWaits == 19 }
            probe.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 20)
        #expect(outcomes.allSatisfy { $0 == .failure(FetchFailed(attempt: 1)) })
        #expect(cache["k"] == nil)
        #expect(try await cache.value(for: "k") == 7)
        #expect(probe.calls == 2)
    }

    @Test(
        "A fetch that itself throws CancellationError reaches every waiter once: waiters that are not cancelled do not fetch again in turn"
    )
    func fetchThrowingCancellation() async throws {
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration()) { _ in
            await probe.enter()
            // As a fetch's own timeout or an inner task may: no caller was cancelled.
            throw CancellationError()
        }
        let readers = 5
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<readers {
                group.addTask {
                    do {
                        _ = try await cache.value(for: "k")
                        return false
                    } catch {
                        return error is CancellationError
                    }
                }
            }
            #expect(await CacheTest.eventually { cache.statistics.coalescedWaits == readers - 1 })
            probe.open()
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes == Array(repeating: true, count: readers), "every waiter receives the fetch's error")
        #expect(probe.calls == 1, "one fetch for every waiter, as for any other error")
        #expect(cache.statistics.fetchFailures == 1)
    }

    @Test("Cancelling one waiter does not cancel the fetch for the others")
    func cancellingOneWaiter() async throws {
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, String>(configuration: CacheTest.configuration()) { key in
            await probe.enter()
            return key.uppercased()
        }
        let first = Task { try await cache.value(for: "k") }
        let second = Task { try await cache.value(for: "k") }
        #expect(await CacheTest.eventually { probe.calls == 1 && cache.statistics.coalescedWaits == 1 })
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        probe.open()
        #expect(try await second.value == "K")
        #expect(probe.calls == 1)
        #expect(cache["k"] == "K")
    }

    @Test(
        "A read cancelled while a remote store waits ends with CancellationError: no store failure is reported, nothing is fetched for it"
    )
    func cancelledDuringRemoteRead() async throws {
        let probe = FetchProbe()
        let handled = Mutex<[CacheFailure]>([])
        let remote = GatedRemoteStore()
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.remoteStores = [remote]
        configuration.onError = { failure in handled.withLock { $0.append(failure) } }
        let cache = try Cache<String, Int>(configuration: configuration) { _ in
            await probe.enter()
            return 1
        }

        remote.readGate.close()
        let read = Task { try await cache.value(for: "k") }
        await remote.readGate.arrival()
        read.cancel()
        remote.readGate.open()
        await #expect(throws: CancellationError.self) { try await read.value }
        // A fetch, had one started, holds a read ticket until it has written.
        #expect(await CacheTest.eventually { cache.writer.isQuiet })
        await cache.flush()

        #expect(cache.statistics.readFailures == 0, "the caller left; the store did not fail")
        #expect(handled.withLock { $0.isEmpty })
        #expect(probe.calls == 0, "nobody waits for a fetch")
        #expect(cache.cachedValue(for: "k") == nil)
    }

    @Test("Stale reads of a key share one background refresh, whose failure is reported once")
    func staleReadsShareOneRefresh() async throws {
        // Given keys whose values are stale, and a fetch that is held, then fails
        let clock = ManualClock()
        let probe = FetchProbe(open: false)
        let failures = FailureLog()
        var configuration: Cache<Int, Int>.Configuration = CacheTest.configuration()
        configuration.defaultExpiry = .seconds(10)
        configuration.staleWhileRevalidate = 60
        configuration.onError = { failures.append($0) }
        let cache = try Cache<Int, Int>(configuration: configuration, clock: clock) { key in
            await probe.enter()
            throw FetchFailed(attempt: key)
        }
        let keys = 0..<20
        for key in keys { cache[key] = key }
        clock.advance(by: 11)
        var events = cache.events.makeAsyncIterator()

        // When each key is read twice, back to back, while its refresh is held
        for key in keys {
            #expect(cache[key] == key)
            #expect(cache[key] == key)
        }
        #expect(await CacheTest.eventually { probe.calls == keys.count })
        probe.open()
        // (Each refresh holds a read ticket until it has reported its outcome.)
        #expect(await CacheTest.eventually { cache.writer.isQuiet })

        // Then each key was refreshed once, and its failure reported once: to onError,
        // the event stream and the statistics
        #expect(probe.calls == keys.count)
        #expect(failures.all.compactMap(\.key).sorted() == keys.map(String.init).sorted())
        #expect(failures.all.allSatisfy { $0.operation == .fetch && $0.tier == .fetch })
        let statistics = cache.statistics
        #expect(statistics.staleHits == 2 * keys.count)
        #expect(statistics.fetches == keys.count)
        #expect(statistics.fetchFailures == keys.count)
        #expect(statistics.coalescedWaits == 0)
        cache[-1] = -1  // an event after every failure
        var failed: [String] = []
        while let event = await events.next() {
            if case .failed(let failure) = event { failed.append(failure.key ?? "") }
            if case .set(-1) = event { break }
        }
        #expect(failed.sorted() == keys.map(String.init).sorted())
    }

    @Test("A per-call fetch closure and a cache without one")
    func perCallFetch() async throws {
        let cache = try Cache<Int, String>(configuration: CacheTest.configuration())
        #expect(try await cache.value(for: 1) == nil)
        #expect(try await cache.value(for: 1, fetch: { "one-\($0)" }) == "one-1")
        #expect(try await cache[async: 1] == "one-1")
    }

    @Test("Negative caching remembers a nil fetch for the configured time")
    func negativeCaching() async throws {
        let clock = ManualClock()
        let probe = FetchProbe()
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.negativeCaching = 30
        let cache = try Cache<String, Int>(configuration: configuration, clock: clock) { _ in
            await probe.enter()
            return probe.calls >= 3 ? 3 : nil
        }
        #expect(try await cache.value(for: "k") == nil)
        #expect(try await cache.value(for: "k") == nil)
        #expect(probe.calls == 1)
        clock.advance(by: 31)
        #expect(try await cache.value(for: "k") == nil)
        #expect(probe.calls == 2)
        cache["k"] = 9  // a write replaces the remembered miss
        #expect(try await cache.value(for: "k") == 9)
    }
}
