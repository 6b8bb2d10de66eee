import Synchronization

/// A ``MemoryPressureSource`` that signals only when told to, for tests: a cache
/// configured with it reacts to ``signal(_:)`` exactly as to the system's signal.
///
/// ```swift
/// let pressure = ManualMemoryPressure()
/// var configuration = MemoryCache<String, Data>.Configuration()
/// configuration.memoryPressure = .init(source: pressure)
/// let cache = try MemoryCache<String, Data>(configuration: configuration)
/// pressure.signal(.critical)   // the cache is empty when this returns
/// ```
public final class ManualMemoryPressure: MemoryPressureSource {
    private struct State {
        var nextID = 0
        var handlers: [Int: @Sendable (MemoryPressureLevel) -> Void] = [:]
    }

    private let state = Mutex(State())

    /// Creates a source with no observers.
    public init() {}

    /// How many handlers are registered now.
    public var observerCount: Int { state.withLock { $0.handlers.count } }

    /// Registers `handler`, called on the thread of every later ``signal(_:)``
    /// until the returned observation ends.
    public func observe(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureObservation {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        return MemoryPressureObservation { [weak self] in
            _ = self?.state.withLock { $0.handlers.removeValue(forKey: id) }
        }
    }

    /// Calls every registered handler with `level`, in the order they registered,
    /// on the calling thread; returns when all have returned.
    public func signal(_ level: MemoryPressureLevel) {
        let handlers = state.withLock { state in state.handlers.sorted { $0.key < $1.key }.map(\.value) }
        for handler in handlers { handler(level) }
    }
}
