#if Redis && ServiceLifecycle
import ServiceLifecycle

extension RedisStore: Service {
    /// Serves until the `ServiceGroup`'s graceful shutdown (or the task's
    /// cancellation), then closes every connection (shutdown()): operations
    /// after that fail with a clear error.
    ///
    /// The store opens its connections on first use, not in `run()`. List the store
    /// *before* the caches that use it (as `CacheService`): a group shuts its
    /// services down from the last, so the caches flush their queued writes while
    /// the store is still open.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
#endif
