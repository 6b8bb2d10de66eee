import Synchronization

/// How short of memory the system is, as a ``MemoryPressureSource`` reports it.
public enum MemoryPressureLevel: String, Sendable, Hashable, CustomStringConvertible {
    /// Memory is getting short: give back what is cheap to rebuild.
    case warning
    /// Memory is critically short: give back everything that can be rebuilt.
    case critical

    public var description: String { rawValue }
}

/// Where memory caches hear that the system is short of memory.
///
/// Hoard's own is ``SystemMemoryPressure``, one per process, which every
/// ``MemoryCache`` (and the memory tier of every ``Cache``) listens to unless its
/// configuration says otherwise. Tests pass a ``ManualMemoryPressure`` and fire the
/// signals themselves.
public protocol MemoryPressureSource: Sendable {
    /// Calls `handler` with each signal from now until the returned observation is
    /// cancelled or released. The handler may run on any thread, and must not block.
    func observe(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureObservation
}

/// A handler registered with a ``MemoryPressureSource``: it is called until
/// ``cancel()`` or until this object is released, whichever comes first.
public final class MemoryPressureObservation: Sendable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    /// Creates an observation that runs `onCancel` once, when it ends.
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Mutex(onCancel)
    }

    /// Stops the handler; when this returns it is not called again (unless a call
    /// was already under way on another thread). Calling it again does nothing.
    public func cancel() {
        let onCancel = self.onCancel.withLock { onCancel in
            defer { onCancel = nil }
            return onCancel
        }
        onCancel?()
    }

    deinit {
        cancel()
    }
}
