import Dispatch
import Foundation
import Hoard
import Synchronization
import Testing

/// A task executor on one serial dispatch queue: a thread outside Swift's
/// cooperative pool, for code that must run while that pool is parked.
final class QueueTaskExecutor: TaskExecutor, Sendable {
    private let queue = DispatchQueue(label: "HoardTests.QueueTaskExecutor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Parks every thread of Swift's cooperative pool on a semaphore the test
/// controls, and lets them go.
final class CooperativePoolParking: Sendable {
    private let arrived = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)
    private let timedOut = Atomic<Bool>(false)
    let width = ProcessInfo.processInfo.activeProcessorCount

    /// Starts one blocking task per cooperative thread and waits (blocking the
    /// caller's thread, which must not be a cooperative one) until all of them
    /// hold their thread.
    func park() {
        for _ in 0..<width {
            Task(executorPreference: globalConcurrentExecutor) {
                self.arrived.signal()
                // A deadlock breaker only: if the code under test needed a
                // cooperative thread, the test fails instead of hanging.
                if self.release.wait(timeout: .now() + 120) == .timedOut {
                    self.timedOut.store(true, ordering: .relaxed)
                }
            }
        }
        for _ in 0..<width { arrived.wait() }
    }

    /// Lets the parked threads go.
    func unpark() {
        for _ in 0..<width { release.signal() }
    }

    /// Whether a parked thread gave up waiting (the work needed the pool).
    var gaveUp: Bool { timedOut.load(ordering: .relaxed) }
}

@Suite("Cache: no blocking work on the cooperative pool", .serialized, .timeLimit(.minutes(5)))
struct CacheCooperativePoolTests {
    @Test("With every cooperative thread parked, async disk hits, write-behind and flush still complete")
    func worksWithThePoolParked() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            try disk.set(Data("stored".utf8), for: "k", in: "test", storedAt: Date(), expiresAt: nil)
            let cache = try Cache<String, String>(configuration: CacheTest.configuration(disk: disk))
            let parking = CooperativePoolParking()
            let executor = QueueTaskExecutor()
            let results = try await withTaskExecutorPreference(executor) {
                parking.park()
                defer { parking.unpark() }
                let hit = try await cache.value(for: "k")
                cache["w"] = "behind"
                try await cache.set("awaited", for: "s")
                await cache.flush()
                return (hit, parking.gaveUp)
            }
            #expect(results.0 == "stored", "an async disk hit")
            #expect(!results.1, "the cache waited for a cooperative thread")
            #expect(try disk.entry(for: "w", in: "test")?.data == Data("behind".utf8))
            #expect(try disk.entry(for: "s", in: "test")?.data == Data("awaited".utf8))
        }
    }
}
