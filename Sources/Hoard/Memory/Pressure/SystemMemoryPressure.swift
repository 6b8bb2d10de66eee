/// The operating system's memory-pressure signal, one watcher per process shared by
/// every cache that listens.
///
/// - Apple platforms: a dispatch memory-pressure source (`.warning`, `.critical`).
/// - Linux: pressure stall information (PSI). Two triggers on the memory pressure
///   file of the process's own cgroup (cgroup v2 `memory.pressure`), or on
///   `/proc/pressure/memory` when there is none: *warning* when some tasks stalled on
///   memory for 300 ms within 2 s, *critical* when all of them did. A thread of
///   Hoard's own waits for them with `poll`, from the first observer on, and stops
///   when the last observation ends. Where PSI is missing (kernels before 4.20, or
///   built without it) Hoard says so once, at `notice`, through a swift-log `Logger`
///   labelled `hoard.memory-pressure`, and never signals.
/// - Other platforms: never signals.
public struct SystemMemoryPressure: MemoryPressureSource {
    /// Creates a handle on the process's one watcher.
    public init() {}

    /// Registers `handler` with the process's one watcher, which starts with the
    /// first observation and stops when the last one ends; the handler is called
    /// by the watcher (a thread of its own on Linux, a dispatch queue on Apple
    /// platforms).
    public func observe(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureObservation {
        let monitor = _MemoryPressureMonitor.shared
        let id = monitor.add(handler)
        return MemoryPressureObservation { monitor.remove(id) }
    }
}

extension MemoryPressureSource where Self == SystemMemoryPressure {
    /// The operating system's memory-pressure signal; see ``SystemMemoryPressure``.
    public static var system: SystemMemoryPressure { SystemMemoryPressure() }
}
