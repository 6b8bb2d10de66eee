#if Redis || Postgres
import NIOCore
import Synchronization

/// A task executor that runs jobs on one SwiftNIO event loop, in the order they are
/// enqueued, so that tasks preferring it run on the thread that does the I/O of a
/// store's connections (`RedisStore.taskExecutor`, `PostgresStore.taskExecutor`).
///
/// SwiftNIO's event loops are serial executors (for actors) but not task executors;
/// this is the small adapter. Jobs wait in a queue of their own; the first job of a
/// batch schedules one event loop task that runs every job queued by the time it
/// starts, in order. So a burst of jobs (sixteen child tasks started together, or the
/// sixteen operations one read of replies resumes) costs one event loop task instead
/// of a closure and a task each. Jobs enqueued while a batch runs wait for the next
/// batch, which the event loop runs after the I/O and tasks already due, so a task
/// that keeps yielding cannot starve the connections. A job enqueued from another
/// thread wakes the loop as `EventLoop.execute` does; one enqueued from the loop's own
/// thread does not.
///
/// What it guarantees: every job enqueued runs exactly once, on ``eventLoop``, in the
/// order enqueued, while the loop runs; a loop that has shut down runs nothing, so its
/// group must outlive the tasks that prefer this executor.
package final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop every job runs on.
    package let eventLoop: any EventLoop
    private let queue = Mutex(LoopBatch<UnownedJob>())

    /// An executor for `eventLoop`.
    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `job` on ``eventLoop``, after the jobs enqueued before it.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let schedule = queue.withLock { $0.append(job) }
        if schedule {
            eventLoop.execute { self.runBatch() }
        }
    }

    /// Runs every job queued so far, in order. On the event loop.
    private func runBatch() {
        var batch = queue.withLock { $0.take() }
        let executor = asUnownedTaskExecutor()
        for job in batch { job.runSynchronously(on: executor) }
        queue.withLock { $0.recycle(&batch) }
    }
}
#endif
