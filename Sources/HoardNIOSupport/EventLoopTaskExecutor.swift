import NIOCore

/// A task executor that runs jobs on one SwiftNIO event loop, in the order they are
/// enqueued, so that tasks preferring it run on the thread that does the I/O of a
/// store's connections (`RedisStore.taskExecutor`, `PostgresStore.taskExecutor`).
///
/// SwiftNIO's event loops are serial executors (for actors) but not task executors;
/// this is the small adapter. A job enqueued from the loop's own thread (a
/// continuation resumed by a channel handler) joins the loop's task queue without
/// waking it; one enqueued from another thread wakes the loop as
/// `EventLoop.execute` does.
///
/// What it guarantees: every job enqueued runs exactly once, on ``eventLoop``, while
/// the loop runs; a loop that has shut down runs nothing, so its group must outlive
/// the tasks that prefer this executor.
package final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop every job runs on.
    package let eventLoop: any EventLoop

    /// An executor for `eventLoop`.
    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `job` on ``eventLoop``, after the jobs and loop tasks enqueued before it.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
