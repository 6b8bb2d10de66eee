import Foundation
import Logging
import Synchronization
import Testing

@testable import Hoard

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

    @Test("A read answered by a queued write puts it in memory with the write's own lifetime, not the disk's")
    func pendingWriteKeepsItsLifetime() async throws {
        let clock = ManualClock()
        try await DiskTest.withTemporaryDirectory { directory in
            let gated = GatedStore(try DiskStore(directory: directory, clock: clock))
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(memoryLimit: 1)
            configuration.localStores = .stores([gated])
            configuration.localExpiry = .seconds(10)
            let cache = try Cache<String, String>(configuration: configuration, clock: clock)

            // Given a write with a lifetime of 100 s (10 s on disk), still queued for
            // the disk and evicted from memory
            gated.close()
            cache["k", expires: .seconds(100)] = "v"
            cache["other"] = "x"

            // When a read finds it in the queue
            let entry = try #require(cache.cachedEntry(for: "k"))

            // Then the read, and memory, keep the write's own lifetime, as memory does
            // for a write it never evicted
            #expect(entry.value == "v")
            #expect(entry.expiresAt == clock.now().addingTimeInterval(100))
            clock.advance(by: 11)
            #expect(cache["k"] == "v")
            #expect(cache.statistics.memory.hits == 2, "answered by the queued write, then by memory")
            gated.release()
            await cache.flush()
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

    /// The callbacks the writer calls as it applies a batch.
    enum WriterCallback: CaseIterable, Sendable {
        /// ``Cache/Configuration/timings``, for the batch's local write.
        case timings
        /// ``Cache/Configuration/onError``, for the batch's failed local write.
        case onError
        /// The log handler of ``Cache/Configuration/logger``, for the same failure.
        case logHandler
    }

    /// The cost closure is user code. It used to run where the writer stores
    /// memory, under the writer's lock, so a closure that wrote to the cache took
    /// that lock again (the child process trapped or hung); it now runs before.
    @Test("The memory cost closure runs outside the writer's lock: it may write to the cache it sizes, in either mode")
    func costClosureWritesToTheCache() async {
        await #expect(processExitsWith: .success) {
            final class Shared: Sendable {
                let cache = Mutex<Cache<String, Int>?>(nil)
            }
            for mode in [Cache<String, Int>.WriteMode.writeBehind, .writeThrough] {
                let shared = Shared()
                let directory = FileManager.default.temporaryDirectory
                    .appendingPathComponent("hoard-cost-\(getpid())-\(mode == .writeBehind ? 0 : 1)")
                defer { try? FileManager.default.removeItem(at: directory) }
                var configuration = Cache<String, Int>.Configuration(name: "cost")
                configuration.writeMode = mode
                configuration.localStores = .stores([try DiskStore(directory: directory)])
                configuration.memory = .init(
                    costLimit: 1_000,
                    cost: { value in
                        if value == 1, let cache = shared.cache.withLock({ $0 }) { cache["side"] = 2 }
                        return 1
                    })
                let cache = try Cache<String, Int>(configuration: configuration)
                shared.cache.withLock { $0 = cache }
                cache["key"] = 1
                await cache.flush()
                precondition(cache["key"] == 1 && cache["side"] == 2)
            }
        }
    }

    /// A memory-only assignment skips the writer; when a read begins meanwhile it
    /// writes memory again through the writer, in order. That second write costs
    /// the value too, and must do so before taking the writer's lock: here the cost
    /// closure reads `queuedWriteBytes`, which takes that lock (the child process
    /// traps or hangs when the closure runs under it).
    @Test("A memory-only assignment that a read overtakes costs its value outside the writer's lock")
    func costClosureOutsideTheLockWhenAReadOvertakes() async {
        await #expect(processExitsWith: .success) {
            final class Shared: Sendable {
                let cache = Mutex<Cache<String, Int>?>(nil)
                let costCalls = Atomic<Int>(0)
                let fetchStarted = DispatchSemaphore(value: 0)
                let fetchMayEnd = DispatchSemaphore(value: 0)
            }
            let shared = Shared()
            var configuration = Cache<String, Int>.Configuration.memoryOnly(name: "overtaken")
            configuration.memory = .init(
                costLimit: 1_000,
                cost: { _ in
                    guard let cache = shared.cache.withLock({ $0 }) else { return 1 }
                    if shared.costCalls.add(1, ordering: .relaxed).newValue == 1 {
                        // The assignment's own costing: a read below memory begins
                        // before the assignment looks for one.
                        Task { _ = try? await cache.value(for: "other") }
                        shared.fetchStarted.wait()
                    } else {
                        _ = cache.queuedWriteBytes
                    }
                    return 1
                })
            let cache = try Cache<String, Int>(configuration: configuration) { _ in
                shared.fetchStarted.signal()
                shared.fetchMayEnd.wait()
                return 0
            }
            shared.cache.withLock { $0 = cache }
            // On a thread of its own: the cost closure blocks it until the read's
            // fetch, which runs on the cooperative pool, has started.
            await withCheckedContinuation { (assigned: CheckedContinuation<Void, Never>) in
                Thread {
                    cache["key"] = 1
                    assigned.resume()
                }.start()
            }
            shared.fetchMayEnd.signal()
            precondition(shared.costCalls.load(ordering: .relaxed) >= 2, "the assignment was not ordered again")
            precondition(cache["key"] == 1)
        }
    }

    @Test(
        "A timings, onError or log handler callback may write to a write-through cache: the write never waits for it",
        .timeLimit(.minutes(1)), arguments: WriterCallback.allCases)
    func callbackWritesThrough(callback: WriterCallback) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let gated = GatedStore(disk)
            let callbackWrite = CallbackWrite()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            configuration.writeMode = .writeThrough
            switch callback {
            case .timings:
                configuration.timings = { timing in
                    if timing.operation == .write { callbackWrite.run() }
                }
            case .onError:
                gated.fail(with: HoardError(.storageFull, "disk full"))
                configuration.onError = { _ in
                    gated.fail(with: nil)
                    callbackWrite.run()
                }
            case .logHandler:
                gated.fail(with: HoardError(.storageFull, "disk full"))
                configuration.logger = Logger(label: "test") { _ in
                    CallbackLogHandler {
                        gated.fail(with: nil)
                        callbackWrite.run()
                    }
                }
            }
            let cache = try Cache<String, String>(configuration: configuration)
            callbackWrite.attach(cache)
            var written = callbackWrite.written.makeAsyncIterator()

            // When a write's local store write calls the callback, which assigns a value
            // (awaited only once the callback has returned: a writer waiting for the
            // callback would hold it forever)
            let first = Task { try? await cache.set("1", for: "a") }

            // Then the callback's assignment returns, with its value on disk
            let key = try #require(await written.next(), "the callback's write-through assignment never returned")
            #expect(try disk.entry(for: key, in: "test")?.data == Data("2".utf8))
            await first.value
            #expect(cache["a"] == "1")
        }
    }

    @Test(
        "A timings callback of a read's store read may write through while the remote stores write a batch: the writer never needs the read's thread",
        .timeLimit(.minutes(1)))
    func readCallbackWritesThroughDuringRemoteWrite() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = GatedRemoteStore()
            let reads = 8
            let callbackWrite = CallbackWrite(times: reads)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            configuration.writeMode = .writeThrough
            configuration.timings = { timing in
                if timing.operation == .read, case .local = timing.tier { callbackWrite.run() }
            }
            let cache = try Cache<String, String>(configuration: configuration)
            callbackWrite.attach(cache)
            var written = callbackWrite.written.makeAsyncIterator()

            // Given a batch the remote store is still writing
            remote.writeGate.close()
            cache["a"] = "1"
            await remote.writeGate.arrival()

            // When reads, whose disk reads run on Hoard's own threads, call a timings
            // callback that assigns in write-through mode (so each waits there for the
            // writer, behind that batch) until every one of those threads waits
            // (Hoard's shared executor has four), and then the remote store answers
            let readers = (0..<reads).map { i in Task { try? await cache.value(for: "r\(i)") } }
            _ = await CacheTest.eventually { callbackWrite.calls == 4 }
            remote.writeGate.open()

            // Then the writer finishes the batch and applies every assignment
            for _ in 0..<reads {
                let key = try #require(await written.next(), "a callback's write-through assignment never returned")
                #expect(try disk.entry(for: key, in: "test")?.data == Data("2".utf8))
            }
            for reader in readers { _ = await reader.value }
            await cache.flush()
            #expect(try await remote.inner.entry(for: "a", in: "test")?.data == Data("1".utf8))
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

    /// The ways a key leaves the local stores while the remote ones are left alone.
    enum LocalStoresEmptied: CaseIterable, Sendable {
        /// `clear(memory: true, disk: true, remote: false)`.
        case clear
        /// Another instance's "everything may have changed" (`RemoteInvalidation.all`).
        case invalidationOfEverything
        /// Another instance's change of the key (`RemoteInvalidation.key`).
        case invalidationOfTheKey
    }

    @Test(
        "Emptying the local stores only (a clear, an invalidation) keeps a write still queued for the remote stores readable: the remote store's older value is neither served nor promoted",
        arguments: LocalStoresEmptied.allCases)
    func localClearKeepsQueuedRemoteWrites(_ emptied: LocalStoresEmptied) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let (disk, remote, cache) = try await CacheTest.overGatedRemote(holding: "1", in: directory)
            var events = cache.events.makeAsyncIterator()

            remote.writeGate.close()
            cache["k"] = "2"  // the disk gets it; its remote write waits at the gate
            await remote.writeGate.arrival()
            let clear: Task<Void, any Error>
            switch emptied {
            case .clear:
                clear = Task { try await cache.clear(memory: true, disk: true, remote: false) }
                await CacheTest.awaitClears(1, on: &events)
            case .invalidationOfEverything:
                cache.invalidate(.all)
                clear = Task {}
            case .invalidationOfTheKey:
                cache.invalidate(.key("k"))
                clear = Task {}
            }

            #expect(try await cache.value(for: "k") == "2", "the newer write is still on its way to the remote store")
            remote.writeGate.open()
            try await clear.value
            await cache.flush()

            #expect(try await remote.inner.entry(for: "k", in: "test")?.data == Data("2".utf8))
            #expect(cache["k"] == "2", "memory holds the newest value, not the remote store's older one")
            #expect(try disk.entry(for: "k", in: "test") == nil, "the older value was not promoted onto the disk")
            #expect(cache.statistics.remote.hits == 0)
        }
    }

    @Test("Until a clear of the remote stores only is applied, reads treat them as empty and promote nothing from them")
    func queuedRemoteClearHidesRemoteStores() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let (disk, remote, cache) = try await CacheTest.overGatedRemote(holding: "1", in: directory)

            remote.writeGate.close()
            let clear = Task { try await cache.clear(memory: true, disk: false, remote: true) }
            await remote.writeGate.arrival()  // the clear is queued and under way
            #expect(try await cache.value(for: "k") == nil, "the remote store is being cleared")
            remote.writeGate.open()
            try await clear.value
            await cache.flush()

            #expect(try await remote.inner.entry(for: "k", in: "test") == nil)
            #expect(cache["k"] == nil, "the cleared value did not come back into memory")
            #expect(try disk.entry(for: "k", in: "test") == nil, "nor onto the disk")
            #expect(cache.statistics.remote.hits == 0)
        }
    }

    @Test(
        "A clear of the local stores only, queued behind a clear of every tier, leaves the remote stores treated as empty until both are applied"
    )
    func localClearBehindFullClear() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let (disk, remote, cache) = try await CacheTest.overGatedRemote(holding: "1", in: directory)
            var events = cache.events.makeAsyncIterator()

            remote.writeGate.close()
            let everything = Task { try await cache.clear() }
            await remote.writeGate.arrival()  // its remote part waits at the gate
            let local = Task { try await cache.clear(memory: true, disk: true, remote: false) }
            await CacheTest.awaitClears(2, on: &events)
            #expect(try await cache.value(for: "k") == nil, "the first clear still empties the remote store")
            remote.writeGate.open()
            try await everything.value
            try await local.value
            await cache.flush()

            #expect(try await remote.inner.entry(for: "k", in: "test") == nil)
            #expect(cache["k"] == nil)
            #expect(try disk.entry(for: "k", in: "test") == nil)
        }
    }

    @Test(
        "A write queued before a clear of the remote stores and a later clear of the local ones is gone: reads do not serve it"
    )
    func writeClearedFromEveryTier() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let (disk, remote, cache) = try await CacheTest.overGatedRemote(holding: "0", in: directory)
            var events = cache.events.makeAsyncIterator()

            remote.writeGate.close()
            cache["k"] = "1"
            await remote.writeGate.arrival()  // its remote write waits at the gate
            let remoteCleared = Task { try await cache.clear(memory: false, disk: false, remote: true) }
            let localCleared = Task { try await cache.clear(memory: true, disk: true, remote: false) }
            await CacheTest.awaitClears(2, on: &events)
            #expect(try await cache.value(for: "k") == nil, "between them, the clears empty every tier")
            remote.writeGate.open()
            try await remoteCleared.value
            try await localCleared.value
            await cache.flush()

            #expect(try await remote.inner.entry(for: "k", in: "test") == nil)
            #expect(cache["k"] == nil)
            #expect(try disk.entry(for: "k", in: "test") == nil)
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

/// Writes to a cache from the cache's own callbacks: each of the first `times`
/// calls of ``run()`` assigns "2" to a key of its own ("b0", "b1", …) through the
/// cache's subscript, then yields the key on ``written``.
final class CallbackWrite: Sendable {
    private let state: Mutex<(cache: Cache<String, String>?, calls: Int, times: Int)>
    let written: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init(times: Int = 1) {
        state = Mutex((nil, 0, times))
        (written, continuation) = AsyncStream.makeStream()
    }

    func attach(_ cache: Cache<String, String>) {
        state.withLock { $0.cache = cache }
    }

    /// How many calls of ``run()`` have begun their assignment.
    var calls: Int { state.withLock { min($0.calls, $0.times) } }

    /// The callback's work; calls after the first `times` do nothing. (The last
    /// releases the cache, which holds the callback.)
    func run() {
        let taken = state.withLock { state -> (Cache<String, String>, String)? in
            guard state.calls < state.times, let cache = state.cache else { return nil }
            let key = "b\(state.calls)"
            state.calls += 1
            if state.calls == state.times { state.cache = nil }
            return (cache, key)
        }
        guard let (cache, key) = taken else { return }
        cache[key] = "2"
        continuation.yield(key)
    }
}

/// A log handler that runs `onLog` for every record it is given.
struct CallbackLogHandler: LogHandler {
    let onLog: @Sendable () -> Void
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    init(onLog: @escaping @Sendable () -> Void) {
        self.onLog = onLog
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        onLog()
    }
}
