extension DiskStore {
    /// A stream of every event from now on: damaged entries removed, expirations,
    /// evictions, failures of deferred work.
    ///
    /// Each access returns a new, independent stream. It buffers without bound, so
    /// a consumer should keep up; it ends when the consuming task is cancelled or
    /// the store is deallocated.
    public var events: AsyncStream<DiskStoreEvent> {
        let (stream, continuation) = AsyncStream<DiskStoreEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = observers.add(continuation)
        continuation.onTermination = { [weak observers] _ in observers?.remove(id) }
        return stream
    }
}
