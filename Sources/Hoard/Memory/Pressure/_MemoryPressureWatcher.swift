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
    /// The descriptors of the wake-up pipe (read end, write end) on Linux, for tests;
    /// empty elsewhere.
    let wakeDescriptors: [Int32]
    private let stopping: @Sendable () -> Void

    private init(source: String, wakeDescriptors: [Int32] = [], stopping: @escaping @Sendable () -> Void) {
        self.source = source
        self.wakeDescriptors = wakeDescriptors
        self.stopping = stopping
    }

    /// Stops watching. On Linux `deliver` is not called once this returns (unless this
    /// is called from `deliver` itself); on Apple platforms a call already under way
    /// may finish.
    func stop() {
        stopping()
    }

    #if canImport(Darwin)
    /// Starts two dispatch memory-pressure sources, one per level. They never end
    /// by themselves, so `ended` is never called.
    static func start(
        deliver: @escaping @Sendable (MemoryPressureLevel) -> Void, ended: @escaping @Sendable (String) -> Void
    ) -> Result<_MemoryPressureWatcher, Failure> {
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
    ///
    /// - Parameter ended: Called once, on the watcher's thread, with the reason, when
    ///   the thread stops watching by itself (a trigger's file reports an error,
    ///   as when its cgroup is removed, or `poll` fails); never after ``stop()``.
    static func start(
        deliver: @escaping @Sendable (MemoryPressureLevel) -> Void, ended: @escaping @Sendable (String) -> Void
    ) -> Result<_MemoryPressureWatcher, Failure> {
        let path = pressureFile()
        let warning: Int32
        switch openTrigger(path, warningTrigger) {
        case .success(let descriptor): warning = descriptor
        case .failure(let failure): return .failure(failure)
        }
        // Critical is optional: a kernel that refuses `full` still gives warnings.
        let critical = (try? openTrigger(path, criticalTrigger).get()) ?? -1
        return start(source: path, warning: warning, critical: critical, deliver: deliver, ended: ended)
    }

    /// Starts the thread that polls `warning` and `critical` (`-1` for none), which
    /// it owns from now on (they are closed when it ends, or here on failure).
    ///
    /// The wake-up channel is a socket pair created close-on-exec (`SOCK_CLOEXEC`,
    /// atomic: `pipe2` is not in Swift's Glibc module), so no child process
    /// inherits it. Its read end stays open until both the thread has ended and
    /// ``stop()`` has written to it, and the write is sent with `MSG_NOSIGNAL`, so
    /// ``stop()`` never raises `SIGPIPE` (which would kill the process), however
    /// early the thread ended.
    static func start(
        source: String, warning: Int32, critical: Int32, deliver: @escaping @Sendable (MemoryPressureLevel) -> Void,
        ended: @escaping @Sendable (String) -> Void
    ) -> Result<_MemoryPressureWatcher, Failure> {
        var pipeEnds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pipeEnds) == 0
        else {
            let reason = String(cString: strerror(errno))
            _ = close(warning)
            if critical >= 0 { _ = close(critical) }
            return .failure(Failure(reason: "could not create the watcher's wake-up pipe: \(reason)"))
        }
        let wake = _WakePipe(read: pipeEnds[0], write: pipeEnds[1])
        let finished = DispatchSemaphore(value: 0)
        let threadID = Atomic<UInt>(0)
        let thread = Thread {
            threadID.store(_POSIX.currentThread, ordering: .releasing)
            let end = poll(warning: warning, critical: critical, wake: wake.read, deliver: deliver)
            _ = close(warning)
            if critical >= 0 { _ = close(critical) }
            if case .failed(let reason) = end, !wake.isStopping { ended(reason) }
            wake.release()
            finished.signal()
        }
        thread.name = "hoard.memory-pressure"
        thread.start()
        return .success(
            _MemoryPressureWatcher(source: source, wakeDescriptors: [wake.read, wake.write]) {
                guard wake.beginStopping() else { return }
                var byte: UInt8 = 1
                // It cannot fail for want of room or of a reader; and closing the
                // write end wakes the thread all the same.
                _ = send(wake.write, &byte, 1, Int32(MSG_NOSIGNAL))
                _ = close(wake.write)
                wake.release()
                // A handler that releases the last observation runs on the thread
                // itself, which ends when the handler returns: waiting would deadlock.
                if threadID.load(ordering: .acquiring) != _POSIX.currentThread { finished.wait() }
            })
    }

    /// Why the polling thread stopped.
    private enum End {
        /// ``stop()`` woke it.
        case stopped
        /// It cannot watch any more, for this reason.
        case failed(String)
    }

    /// Waits for the triggers until the wake-up pipe is written, or until a
    /// trigger's file reports an error (its cgroup went away) or `poll` fails.
    private static func poll(
        warning: Int32, critical: Int32, wake: Int32, deliver: @Sendable (MemoryPressureLevel) -> Void
    ) -> End {
        let broken = Int16(POLLERR | POLLNVAL | POLLHUP)
        var descriptors = [
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            pollfd(fd: warning, events: Int16(POLLPRI), revents: 0),
            pollfd(fd: critical, events: Int16(POLLPRI), revents: 0),  // ignored by poll when -1
        ]
        while true {
            let ready = Glibc.poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                let error = errno
                if error == EINTR { continue }
                return .failed("poll failed: \(String(cString: strerror(error)))")
            }
            if descriptors[0].revents != 0 { return .stopped }
            if descriptors[1].revents & broken != 0 {
                return .failed("the warning trigger's file reported an error (revents \(descriptors[1].revents))")
            }
            if descriptors[2].revents & broken != 0 {
                // Warnings may still come: stop polling the critical trigger only.
                descriptors[2].fd = -1
                continue
            }
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
    static func start(
        deliver: @escaping @Sendable (MemoryPressureLevel) -> Void, ended: @escaping @Sendable (String) -> Void
    ) -> Result<_MemoryPressureWatcher, Failure> {
        .failure(Failure(reason: "this platform offers no memory-pressure signal Hoard knows"))
    }
    #endif
}

#if os(Linux) || os(Android)
/// The wake-up channel of a Linux watcher (a socket pair used as a pipe). Its read end is closed by whichever comes
/// last of the polling thread's end and ``_MemoryPressureWatcher/stop()`` (after its
/// write), so nothing ever writes to it without a reader.
private final class _WakePipe: Sendable {
    let read: Int32
    let write: Int32
    /// How many of the thread and `stop()` have not let go of the read end yet.
    private let holders = Atomic<Int>(2)
    private let stopping = Atomic<Bool>(false)

    init(read: Int32, write: Int32) {
        self.read = read
        self.write = write
    }

    /// Marks the watcher as stopping; `false` when it already was.
    func beginStopping() -> Bool { !stopping.exchange(true, ordering: .acquiringAndReleasing) }

    /// Whether ``beginStopping()`` was called.
    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Lets go of the read end, closing it when the other holder already has.
    func release() {
        if holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { _ = close(read) }
    }
}
#endif
