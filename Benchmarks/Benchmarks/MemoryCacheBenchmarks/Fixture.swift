import Benchmark
import Foundation
import Synchronization

/// One benchmark's state between iterations: the filled cache, the next batch of
/// the request stream, and, for two threads, the helper that replays the second
/// half of every batch while the benchmark's own thread replays the first.
final class Fixture<C: CacheSubject> {
    let cache: C
    let workload: Workload
    private let helper: HelperThread?
    private var batch = 0

    init(cache: C, workload: Workload, threads: Int) {
        precondition(threads == 1 || threads == 2, "one or two threads")
        self.cache = cache
        self.workload = workload
        helper =
            threads == 1
            ? nil
            : HelperThread { batch in
                blackHole(workload.run(on: cache, requests: Fixture.requests(batch: batch, half: 1)))
            }
    }

    /// One benchmark iteration: the next `KeySpace.batchSize` requests, on one
    /// thread, or half each on this thread and the helper at the same time.
    func runBatch() {
        let current = batch
        batch += 1
        guard let helper else {
            blackHole(workload.run(on: cache, requests: Fixture.requests(batch: current, half: nil)))
            return
        }
        helper.start(current)
        blackHole(workload.run(on: cache, requests: Fixture.requests(batch: current, half: 0)))
        helper.wait(current)
    }

    /// Stops the helper thread, if any. Called from the benchmark's teardown.
    func stop() {
        helper?.stop()
    }

    /// The requests of batch number `batch` (wrapping around the stream): all of
    /// them, or the first (0) or second (1) half.
    static func requests(batch: Int, half: Int?) -> ArraySlice<Int> {
        let start = (batch % KeySpace.batchCount) * KeySpace.batchSize
        guard let half else { return KeySpace.requests[start..<(start + KeySpace.batchSize)] }
        let halfSize = KeySpace.batchSize / 2
        let from = start + half * halfSize
        return KeySpace.requests[from..<(from + halfSize)]
    }
}

/// A long-lived second thread that runs `job(batch)` whenever `start(batch)` is
/// called, handing off through atomics: starting a thread or waking a parked one
/// per 1,000-request batch would cost more than the batch. It spins while it waits
/// (yielding the CPU after a while) and exits on `stop()`.
final class HelperThread: Sendable {
    /// The batch the helper should run next; -1 asks it to exit.
    private let requested = Atomic<Int>(Int.min)
    /// The last batch the helper finished.
    private let finished = Atomic<Int>(Int.min)

    init(job: @escaping @Sendable (Int) -> Void) {
        let thread = Thread { [self] in
            var last = Int.min
            var idle = 0
            while true {
                let batch = requested.load(ordering: .acquiring)
                if batch == -1 { return }
                if batch == last {
                    idle += 1
                    if idle > 4_096 { sched_yield() }
                    continue
                }
                idle = 0
                job(batch)
                last = batch
                finished.store(batch, ordering: .releasing)
            }
        }
        thread.start()
    }

    /// Asks the helper to run `batch` (batches must be distinct and non-negative).
    func start(_ batch: Int) {
        requested.store(batch, ordering: .releasing)
    }

    /// Spins until the helper has finished `batch`.
    func wait(_ batch: Int) {
        while finished.load(ordering: .acquiring) != batch {}
    }

    func stop() {
        requested.store(-1, ordering: .releasing)
    }
}
