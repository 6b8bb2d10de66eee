import Dispatch
import Synchronization

/// Where a ``Cache`` runs blocking work (SQLite, file reads and writes) that an
/// `async` method reaches: threads of Hoard's own, never Swift's cooperative pool,
/// which a server shares with its request handlers.
///
/// A few serial dispatch queues, chosen round-robin. Serial queues get a thread of
/// their own whenever they have work (libdispatch's overcommitting pool), so the
/// work runs even while every cooperative thread is busy or blocked. As a
/// `TaskExecutor`, the same queues run tasks that must not need the cooperative
/// pool. A cache's writer has one of its own, one queue wide: the threads of the
/// shared one run reads, whose callbacks may block them waiting for the writer.
@usableFromInline
final class _BlockingExecutor: TaskExecutor, Sendable {
    private let queues: [DispatchQueue]
    private let next = _RoundRobin()

    /// The executor every cache of the process shares.
    static let shared = _BlockingExecutor(label: "Hoard.io", width: 4)

    init(label: String, width: Int) {
        queues = (0..<max(1, width)).map { DispatchQueue(label: "\(label).\($0)", qos: .userInitiated) }
    }

    /// Runs `body` on one of the executor's threads and returns its result.
    @usableFromInline
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withUnsafeContinuation { continuation in
            self.async { continuation.resume(returning: body()) }
        }
    }

    /// Runs `body` on one of the executor's threads, without waiting for it.
    func async(_ body: @escaping @Sendable () -> Void) {
        queues[next.advance(modulo: queues.count)].async(execute: body)
    }

    @usableFromInline
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queue = queues[next.advance(modulo: queues.count)]
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A counter that hands out positions `0..<n` in turn, from any thread.
final class _RoundRobin: Sendable {
    private let counter = Atomic<Int>(0)

    func advance(modulo count: Int) -> Int {
        let value = counter.add(1, ordering: .relaxed).oldValue
        return (value & Int.max) % count
    }
}
