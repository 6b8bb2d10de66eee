import Logging
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
    private let logger: Logger?
    /// The store's directory, as `hoard.store` names it.
    private let path: String
    private let state = Mutex(State())

    init(handler: (@Sendable (DiskStoreEvent) -> Void)?, logger: Logger? = nil, path: String = "") {
        self.handler = handler
        self.logger = logger
        self.path = path
    }

    /// Delivers `events`, in order.
    func publish(_ events: [DiskStoreEvent]) {
        guard !events.isEmpty else { return }
        let streams = state.withLock { Array($0.streams.values) }
        for event in events {
            if let logger { log(event, to: logger) }
            handler?(event)
            for continuation in streams { continuation.yield(event) }
        }
    }

    /// Logs one event at the level its kind deserves, with the store's metadata.
    private func log(_ event: DiskStoreEvent, to logger: Logger) {
        var metadata: Logger.Metadata = ["hoard.store": "\(path)", "hoard.tier": "disk"]
        func note(_ namespace: String?, _ key: String?) {
            if let namespace { metadata["hoard.namespace"] = "\(namespace)" }
            if let key { metadata["hoard.key"] = "\(key.prefix(200))" }
        }
        switch event {
        case .removedDamaged(let damage):
            note(damage.namespace, damage.key)
            metadata["hoard.operation"] = "read"
            metadata["hoard.error"] = "\(damage.reason): \(damage.detail)"
            logger.warning("damaged entry removed", metadata: metadata)
        case .undecodable(let damage):
            note(damage.namespace, damage.key)
            metadata["hoard.operation"] = "decode"
            metadata["hoard.error"] = "\(damage.detail)"
            logger.notice("entry kept: it does not decode as the type asked for", metadata: metadata)
        case .failed(let operation, let namespace, let key, let error):
            note(namespace, key)
            metadata["hoard.operation"] = "\(operation)"
            metadata["hoard.error"] = "\(error)"
            logger.warning("\(operation) failed", metadata: metadata)
        case .expired(let count):
            metadata["hoard.operation"] = "sweep"
            logger.debug("removed \(count) expired entries", metadata: metadata)
        case .evicted(let count, let bytes):
            metadata["hoard.operation"] = "trim"
            logger.debug("evicted \(count) entries (\(bytes) bytes)", metadata: metadata)
        case .collectedOrphans(let files, let bytes):
            metadata["hoard.operation"] = "open"
            logger.debug("collected \(files) orphaned value files (\(bytes) bytes)", metadata: metadata)
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
