#if ServiceLifecycle
import Hoard
import ServiceLifecycle

/// A `Cache`'s writer as a swift-service-lifecycle `Service`: hand it to a
/// `ServiceGroup` and every write the cache acknowledged before a graceful
/// shutdown is in its stores when `run()` returns.
///
/// ```swift
/// let users = try Cache<Int, User>(configuration: .init(name: "users"))
/// let group = ServiceGroup(
///     services: [redisStore, CacheService(users), server],   // shut down from the last
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// `run()` waits for the group's graceful shutdown, then flushes the cache's
/// queued writes (write-behind, promotions) and returns. When its task is
/// cancelled instead (a forced shutdown), it still flushes before returning:
/// the writes are already queued and applying them is bounded by the stores.
/// A `ServiceGroup` shuts its services down in reverse order, so list the
/// cache's remote stores *before* the cache: they then stay open while it
/// flushes.
public struct CacheService<Key: CacheKey, Value: Sendable>: Service {
    /// The cache this service flushes on shutdown.
    public let cache: Cache<Key, Value>

    /// Creates the service of `cache`.
    public init(_ cache: Cache<Key, Value>) {
        self.cache = cache
    }

    /// Waits for graceful shutdown (or cancellation), then flushes the cache.
    public func run() async throws {
        // Throws CancellationError when the task is cancelled: the flush follows
        // either way.
        try? await gracefulShutdown()
        await cache.flush()
    }
}
#endif
