#if Redis || Postgres
import Hoard

/// Collects what an invalidation stream yields, so tests can poll it or wait for it.
public final class InvalidationRecorder: Sendable {
    private let received = Locked<[RemoteInvalidation]>([])
    private let task: Task<Void, Never>

    /// Starts reading `stream`; it is read until ``cancel()`` or its end.
    public init(_ stream: AsyncStream<RemoteInvalidation>) {
        let received = self.received
        task = Task {
            for await invalidation in stream { received.withLock { $0.append(invalidation) } }
        }
    }

    /// Everything received so far, in order.
    public var all: [RemoteInvalidation] { received.withLock { $0 } }

    /// Waits until at least `count` invalidations arrived (or `timeout` passed);
    /// returns all received.
    public func wait(forCount count: Int, timeout: Duration = .seconds(30)) async -> [RemoteInvalidation] {
        _ = await eventually(timeout: timeout) { self.all.count >= count }
        return all
    }

    /// Stops reading the stream, which ends it.
    public func cancel() { task.cancel() }
}
#endif
