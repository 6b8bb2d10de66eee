import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The platform's memory-pressure signal, running until ``stop()``; see
/// ``SystemMemoryPressure`` for what it watches where.
final class _MemoryPressureWatcher: Sendable {
    /// Why there is no signal.
    struct Failure: Error {
        var reason: String
    }

    /// What is watched: a file path, or `dispatch`.
    let source: String
    private let stopping: @Sendable () -> Void

    private init(source: String, stopping: @escaping @Sendable () -> Void) {
        self.source = source
        self.stopping = stopping
    }

    /// Stops watching. On Linux `deliver` is not called once this returns (unless this
    /// is called from `deliver` itself); on Apple platforms a call already under way
    /// may finish.
    func stop() {
        stopping()
    }

    #if canImport(Darwin)
    /// Starts two dispatch memory-pressure sources, one per level.
    static func start(deliver: @escaping @Sendable (MemoryPressureLevel) -> Void) -> Result<
        _MemoryPressureWatcher, Failure
    > {
        let queue = DispatchQueue(label: "hoard.memory-pressure")
        let warning = DispatchSource.makeMemoryPressureSource(eventMask: .warning, queue: queue)
        let critical = DispatchSource.makeMemoryPressureSource(eventMask: .critical, queue: queue)
        warning.setEventHandler { deliver(.warning) }
        critical.setEventHandler { deliver(.critical) }
        warning.activate()
        critical.activate()
        // Behind a lock: the sources are not Sendable, and stop() may run anywhere.
        let sources = Mutex<[any DispatchSourceMemoryPressure]>([warning, critical])
        return .success(
            _MemoryPressureWatcher(source: "dispatch") {
                // Cancelled sources start no handler; one already running finishes.
                sources.withLock { sources in
                    for source in sources { source.cancel() }
                    sources = []
                }
            })
    }
    #elseif os(Linux) || os(Android)
    /// The trigger that signals a warning: some tasks stalled on memory for 300 ms
    /// within a 2-second window. (Unprivileged triggers need a window that is a
    /// multiple of 2 s; the string ends with its NUL, as the kernel expects.)
    static let warningTrigger = "some 300000 2000000"
    /// The trigger that signals critical pressure: every task stalled that long.
    static let criticalTrigger = "full 300000 2000000"

    /// Registers the PSI triggers and starts the thread that polls them.
    static func start(deliver: @escaping @Sendable (MemoryPressureLevel) -> Void) -> Result<
        _MemoryPressureWatcher, Failure
    > {
        let path = pressureFile()
        let warning: Int32
        switch openTrigger(path, warningTrigger) {
        case .success(let descriptor): warning = descriptor
        case .failure(let failure): return .failure(failure)
        }
        // Critical is optional: a kernel that refuses `full` still gives warnings.
        let critical = (try? openTrigger(path, criticalTrigger).get()) ?? -1
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = close(warning)
            if critical >= 0 { _ = close(critical) }
            return .failure(Failure(reason: "could not create the watcher's wake-up pipe: \(reason)"))
        }
        let (wakeRead, wakeWrite) = (pipeEnds[0], pipeEnds[1])
        let finished = DispatchSemaphore(value: 0)
        let threadID = Atomic<UInt>(0)
        let thread = Thread {
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            poll(warning: warning, critical: critical, wake: wakeRead, deliver: deliver)
            _ = close(warning)
            if critical >= 0 { _ = close(critical) }
            _ = close(wakeRead)
            finished.signal()
        }
        thread.name = "hoard.memory-pressure"
        thread.start()
        let stopped = Atomic<Bool>(false)
        return .success(
            _MemoryPressureWatcher(source: path) {
                guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
                var byte: UInt8 = 1
                _ = write(wakeWrite, &byte, 1)
                _ = close(wakeWrite)
                // A handler that releases the last observation runs on the thread
                // itself, which ends when the handler returns: waiting would deadlock.
                if threadID.load(ordering: .acquiring) != UInt(pthread_self()) { finished.wait() }
            })
    }

    /// Waits for the triggers until the wake-up pipe is written or a trigger's file
    /// reports an error (its cgroup went away).
    private static func poll(
        warning: Int32, critical: Int32, wake: Int32, deliver: @Sendable (MemoryPressureLevel) -> Void
    ) {
        var descriptors = [
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            pollfd(fd: warning, events: Int16(POLLPRI), revents: 0),
            pollfd(fd: critical, events: Int16(POLLPRI), revents: 0),  // ignored by poll when -1
        ]
        while true {
            let ready = Glibc.poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[0].revents != 0 { return }
            if descriptors[1].revents & Int16(POLLERR | POLLNVAL) != 0 { return }
            if descriptors[2].revents & Int16(POLLPRI) != 0 {
                deliver(.critical)
            } else if descriptors[1].revents & Int16(POLLPRI) != 0 {
                deliver(.warning)
            }
        }
    }

    /// Opens `path` and registers `trigger` on it.
    private static func openTrigger(_ path: String, _ trigger: String) -> Result<Int32, Failure> {
        let descriptor = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(Failure(reason: "cannot open \(path) (\(String(cString: strerror(errno)))): no PSI"))
        }
        let bytes = Array(trigger.utf8) + [0]
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            let reason = String(cString: strerror(errno))
            _ = close(descriptor)
            return .failure(Failure(reason: "the kernel refused the PSI trigger '\(trigger)' on \(path): \(reason)"))
        }
        return .success(descriptor)
    }

    /// The memory pressure file of the process's own cgroup (v2), or the system's.
    static func pressureFile() -> String {
        if let group = _ProcessCgroup.unifiedPath() {
            let path = "/sys/fs/cgroup" + (group == "/" ? "" : group) + "/memory.pressure"
            if access(path, R_OK | W_OK) == 0 { return path }
        }
        return "/proc/pressure/memory"
    }
    #else
    static func start(deliver: @escaping @Sendable (MemoryPressureLevel) -> Void) -> Result<
        _MemoryPressureWatcher, Failure
    > {
        .failure(Failure(reason: "this platform offers no memory-pressure signal Hoard knows"))
    }
    #endif
}
