import Synchronization

/// Where a ``DiskStore``'s events go: the configured handler and every open
/// ``DiskStore/events`` stream.
///
/// Called only after the store has released its own lock. Yielding to an
/// `AsyncStream` only enqueues; the handler is user code and runs outside every
/// lock, this one included.
final class _DiskStoreObservers: Sendable {
    private struct State {
        var nextID = 0
        var streams: [Int: AsyncStream<DiskStoreEvent>.Continuation] = [:]
    }

    private let handler: (@Sendable (DiskStoreEvent) -> Void)?
    private let state = Mutex(State())

    init(handler: (@Sendable (DiskStoreEvent) -> Void)?) {
        self.handler = handler
    }

    /// Delivers `events`, in order.
    func publish(_ events: [DiskStoreEvent]) {
        guard !events.isEmpty else { return }
        let streams = state.withLock { Array($0.streams.values) }
        for event in events {
            handler?(event)
            for continuation in streams { continuation.yield(event) }
        }
    }

    func add(_ continuation: AsyncStream<DiskStoreEvent>.Continuation) -> Int {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.streams[id] = continuation
            return id
        }
    }

    func remove(_ id: Int) {
        state.withLock { _ = $0.streams.removeValue(forKey: id) }
    }

    /// Ends every stream; called when the store goes away.
    func finishAll() {
        let streams = state.withLock { state in
            let taken = Array(state.streams.values)
            state.streams = [:]
            return taken
        }
        for continuation in streams { continuation.finish() }
    }
}
