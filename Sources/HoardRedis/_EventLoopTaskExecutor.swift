import NIOCore

/// A task executor that runs jobs on one SwiftNIO event loop, in the order they are
/// enqueued, so that tasks preferring it run on the thread that does the I/O of the
/// store's connections (``RedisStore/taskExecutor``).
///
/// SwiftNIO's event loops are serial executors (for actors) but not task executors;
/// this is the small adapter. A job enqueued from the loop's own thread (a
/// continuation resumed by a channel handler) joins the loop's task queue without
/// waking it; one enqueued from another thread wakes the loop as
/// `EventLoop.execute` does.
final class _EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
