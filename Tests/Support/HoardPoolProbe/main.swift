import Dispatch
import Foundation
import Hoard
import Synchronization

// The child process of CacheCooperativePoolTests: parks every thread of Swift's
// cooperative pool (its own, in a process of its own, so no other test's tasks
// are starved), then reads a DiskStore through a Cache, writes behind, writes
// and flushes, from a thread outside the pool. Prints what it saw; exits 1 when
// a step needed a cooperative thread (the parked threads gave up after 10
// minutes) or saw a wrong value.

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
                if self.release.wait(timeout: .now() + 600) == .timedOut {
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

let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("hoard-pool-probe-\(UUID().uuidString)", isDirectory: true)
let disk = try DiskStore(directory: directory)
try disk.set(Data("stored".utf8), for: "k", in: "probe", storedAt: Date(), expiresAt: nil)
var configuration = Cache<String, String>.Configuration(name: "probe")
configuration.localStores = .stores([disk])
let cache = try Cache<String, String>(configuration: configuration)

let parking = CooperativePoolParking()
let executor = QueueTaskExecutor()
let (hit, gaveUp) = try await withTaskExecutorPreference(executor) {
    parking.park()
    defer { parking.unpark() }
    let hit = try await cache.value(for: "k")
    cache["w"] = "behind"
    try await cache.set("awaited", for: "s")
    await cache.flush()
    return (hit, parking.gaveUp)
}
let behind = try disk.entry(for: "w", in: "probe").map { String(decoding: $0.data, as: UTF8.self) }
let awaited = try disk.entry(for: "s", in: "probe").map { String(decoding: $0.data, as: UTF8.self) }
print("parked \(parking.width) cooperative threads")
print("hit \(hit ?? "nil")")
print("behind \(behind ?? "nil")")
print("awaited \(awaited ?? "nil")")
print(gaveUp ? "needed a cooperative thread" : "needed no cooperative thread")
// `exit` runs no `defer`: the store's directory is removed first.
try FileManager.default.removeItem(at: directory)
exit(!gaveUp && hit == "stored" && behind == "behind" && awaited == "awaited" ? 0 : 1)
