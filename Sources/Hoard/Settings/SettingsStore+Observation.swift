import Foundation

extension SettingsStore {
    /// A stream of the value for `key`: the current value at once (`nil` if there is
    /// none), then every later change made in this process, through this store or
    /// any other instance of the namespace, in the order it happened: the new value
    /// on each write, `nil` on removal.
    ///
    /// ```swift
    /// for await theme in settings.updates(for: "theme") {
    ///     apply(theme ?? .system)
    /// }
    /// ```
    ///
    /// Bytes that do not decode arrive as `nil` and are reported as
    /// ``SettingsStoreEvent/failed(operation:key:error:)``. The stream buffers without bound,
    /// so a consumer should keep up. It ends when the consuming task is cancelled
    /// or the store is deallocated.
    public func updates(for key: some CacheKey) -> AsyncStream<Value?> {
        let key = _normalized(key.cacheKeyString)
        let (raw, rawContinuation) = AsyncStream<Data?>.makeStream(bufferingPolicy: .unbounded)
        let id = registry.addUpdates(observers, namespace: namespace, key: key, continuation: rawContinuation)
        rawContinuation.onTermination = { [weak observers] _ in
            observers?.removeUpdates(for: key, id)
        }
        // Decoding happens here, outside every lock: a codec is user code.
        let codec = codec
        let (stream, continuation) = AsyncStream<Value?>.makeStream(bufferingPolicy: .unbounded)
        let task = Task { [weak self] in
            for await data in raw {
                guard let data else {
                    continuation.yield(nil)
                    continue
                }
                do throws(HoardError) {
                    continuation.yield(try codec.decode(data))
                } catch {
                    continuation.yield(nil)
                    self?.report(.failed(operation: "decoding an update", key: key, error: error))
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// A stream of every event from now on: values reads cannot use, damaged suite
    /// files kept aside, failures of the store's own work.
    ///
    /// Each access returns a new, independent stream. It buffers without bound; it
    /// ends when the consuming task is cancelled or the store is deallocated.
    public var events: AsyncStream<SettingsStoreEvent> {
        let (stream, continuation) = AsyncStream<SettingsStoreEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = observers.addEvents(continuation)
        continuation.onTermination = { [weak observers] _ in
            observers?.removeEvents(id)
        }
        return stream
    }
}
