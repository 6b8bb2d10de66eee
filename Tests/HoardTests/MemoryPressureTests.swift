import Foundation
import HoardLoggingTestSupport
import Testing

@testable import Hoard

@Suite("Memory pressure", .timeLimit(.minutes(2)))
struct MemoryPressureTests {
    /// A cache of ten 10-byte values under a manual pressure source, used in the order
    /// 0…9 and then 0, 1, 2 again, so LRU order (oldest first) is 3…9, 0, 1, 2.
    static func filledCache(
        _ pressure: ManualMemoryPressure, response: MemoryPressureResponse? = nil, policy: EvictionPolicy = .lru
    ) throws -> MemoryCache<Int, Data> {
        var configuration = MemoryCache<Int, Data>.Configuration(policy: policy)
        configuration.memoryPressure = response ?? .init(source: pressure)
        let cache = try MemoryCache<Int, Data>(configuration: configuration)
        for key in 0..<10 { cache[key] = Data(repeating: UInt8(key), count: 10) }
        for key in 0..<3 { _ = cache[key] }
        return cache
    }

    @Test("A warning evicts down to half the cost, least recently used first, each reported as memoryPressure")
    func warningHalves() async throws {
        let pressure = ManualMemoryPressure()
        let cache = try Self.filledCache(pressure)
        let events = cache.events
        pressure.signal(.warning)

        #expect(cache.totalCost == 50)
        #expect(cache.count == 5)
        for key in [8, 9, 0, 1, 2] { #expect(cache.contains(key), "key \(key)") }
        var evicted: [Int] = []
        for await event in events {
            guard case .evicted(let key, let reason) = event else { continue }
            #expect(reason == .memoryPressure)
            evicted.append(key)
            if evicted.count == 5 { break }
        }
        #expect(evicted == [3, 4, 5, 6, 7])
        let statistics = cache.statistics
        #expect(statistics.evictions == 5)
        #expect(statistics.memoryPressureEvictions == 5)
        #expect(statistics.description.contains("5 for memory pressure"))
    }

    @Test("resetStatistics sets the memory-pressure evictions back to zero with the evictions")
    func resetStatisticsResetsPressureEvictions() throws {
        let pressure = ManualMemoryPressure()
        let cache = try Self.filledCache(pressure)
        pressure.signal(.warning)
        #expect(cache.statistics.memoryPressureEvictions == 5)
        cache.resetStatistics()
        #expect(cache.statistics.memoryPressureEvictions == 0)
        #expect(cache.statistics == MemoryCacheStatistics())
    }

    @Test("Critical pressure empties the cache by default; configured fractions are kept")
    func criticalAndFractions() throws {
        let pressure = ManualMemoryPressure()
        let emptied = try Self.filledCache(pressure)
        pressure.signal(.critical)
        #expect(emptied.count == 0)
        #expect(emptied.totalCost == 0)

        let gentle = ManualMemoryPressure()
        let kept = try Self.filledCache(
            gentle, response: .init(warningFraction: 0.8, criticalFraction: 0.3, source: gentle))
        gentle.signal(.warning)
        #expect(kept.totalCost == 80)
        gentle.signal(.critical)
        #expect(kept.totalCost == 20, "30% of the 80 left is 24: whole 10-byte entries go until at most 24 remain")
        #expect(kept[2] != nil && kept[1] != nil, "the most recently used stay")
    }

    @Test("Critical pressure at the default fraction also evicts the entries that cost nothing")
    func criticalEvictsZeroCostEntries() throws {
        let pressure = ManualMemoryPressure()
        var configuration = MemoryCache<Int, Data>.Configuration()
        configuration.memoryPressure = .init(source: pressure)
        let cache = try MemoryCache<Int, Data>(configuration: configuration)
        for key in 0..<5 { cache[key] = Data(repeating: 1, count: 10) }
        // Empty values cost nothing, and they are the most recently used: evicting
        // by cost alone would stop before them.
        for key in 5..<8 { cache[key] = Data() }
        pressure.signal(.critical)
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
    }

    @Test("W-TinyLFU gives back in its own order too, and values that cost nothing are counted")
    func tinyLFUAndCountOnly() throws {
        let pressure = ManualMemoryPressure()
        let cache = try Self.filledCache(pressure, policy: .tinyLFU)
        pressure.signal(.warning)
        #expect(cache.totalCost == 50)

        var configuration = MemoryCache<Int, Int>.Configuration()
        configuration.memoryPressure = .init(source: pressure)
        let counted = try MemoryCache<Int, Int>(configuration: configuration)
        for key in 0..<9 { counted[key] = key }
        pressure.signal(.warning)
        #expect(counted.count == 4, "no cost: half of 9 entries, rounded down")
    }

    @Test("A cache configured without a response does not listen; a cache that goes away stops listening")
    func registration() throws {
        let pressure = ManualMemoryPressure()
        var configuration = MemoryCache<Int, Data>.Configuration()
        configuration.memoryPressure = nil
        let deaf = try MemoryCache<Int, Data>(configuration: configuration)
        deaf[1] = Data(count: 4)
        #expect(pressure.observerCount == 0)

        do {
            let cache = try Self.filledCache(pressure)
            #expect(pressure.observerCount == 1)
            _ = cache.count
        }
        #expect(pressure.observerCount == 0)
        pressure.signal(.critical)  // nobody left to call
        #expect(deaf.count == 1)
    }

    @Test("A fraction outside 0…1 is an invalid configuration", arguments: [-0.1, 1.5, Double.nan])
    func invalidFraction(_ fraction: Double) {
        var configuration = MemoryCache<Int, Int>.Configuration()
        configuration.memoryPressure = .init(warningFraction: fraction)
        let error = #expect(throws: HoardError.self) { try MemoryCache<Int, Int>(configuration: configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("warningFraction") == true)
    }

    @Test("A tiered cache gives back its memory tier only: the disk store still answers")
    func tieredKeepsDisk() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let pressure = ManualMemoryPressure()
            let store = try DiskStore(directory: directory.appendingPathComponent("store"))
            var configuration = Cache<String, String>.Configuration(name: "pressure")
            configuration.localStores = .stores([store])
            configuration.memory.memoryPressure = .init(source: pressure)
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("kept on disk", for: "k")
            #expect(cache.statistics.memory.hits == 0)
            pressure.signal(.critical)
            #expect(cache.cachedValue(for: "k") == "kept on disk")
            let statistics = cache.statistics
            #expect(statistics.memory.misses == 1)
            #expect(statistics.local.hits == 1)
        }
    }

    #if os(Linux)
    @Test("On Linux a real PSI trigger is registered, and the watching thread stops when the last observer goes")
    func linuxPSI() throws {
        let monitor = _MemoryPressureMonitor()
        #expect(monitor.status == .idle)
        let first = monitor.add { _ in }
        let second = monitor.add { _ in }
        guard case .watching(let source) = monitor.status else {
            Issue.record("no PSI watcher: \(monitor.status)")
            return
        }
        #expect(source.hasSuffix("memory.pressure") || source == "/proc/pressure/memory")
        monitor.remove(first)
        #expect(monitor.status == .watching(source: source))
        monitor.remove(second)  // returns once the thread has ended
        #expect(monitor.status == .idle)
        // And it starts again for a new observer
        let third = monitor.add { _ in }
        #expect(monitor.status == .watching(source: source))
        monitor.remove(third)
        #expect(monitor.status == .idle)
    }

    @Test(
        "A watcher whose trigger file fails ends: status and logger say so; stopping it raises no SIGPIPE")
    func watcherEndsByItself() async throws {
        let recorder = RecordingLogHandler()
        // The write end of a pipe whose read end is closed reports POLLERR, as a
        // trigger's file does once its cgroup is removed.
        var trigger: [Int32] = [-1, -1]
        try #require(pipe(&trigger) == 0)
        let (triggerRead, triggerWrite) = (trigger[0], trigger[1])
        let monitor = _MemoryPressureMonitor(logger: recorder.logger()) { deliver, ended in
            _MemoryPressureWatcher.start(
                source: "test trigger", warning: triggerWrite, critical: -1, deliver: deliver, ended: ended)
        }
        let observation = monitor.add { _ in }
        #expect(monitor.status == .watching(source: "test trigger"))
        close(triggerRead)

        let record = await recorder.record { $0.level == .warning }
        #expect(record.metadata["hoard.source"] == "test trigger")
        #expect(record.metadata["hoard.error"]?.contains("warning trigger") == true)
        if case .ended(let source, let reason) = monitor.status {
            #expect(source == "test trigger")
            #expect(reason.contains("warning trigger"))
        } else {
            Issue.record("the status is \(monitor.status), not ended")
        }
        // The thread has ended; stop() wakes it all the same, and must raise no
        // SIGPIPE (which kills a process that does not ignore it).
        #expect(!Self.raisesSIGPIPE { monitor.remove(observation) })
        #expect(monitor.status == .idle)
    }

    /// Runs `body` with SIGPIPE blocked on this thread, and returns whether it raised
    /// one (a write to a pipe or socket without a reader); such a signal stays
    /// pending while blocked, even when the process ignores SIGPIPE, and is consumed
    /// here.
    static func raisesSIGPIPE(_ body: () -> Void) -> Bool {
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
        body()
        var pending = sigset_t()
        sigpending(&pending)
        let raised = sigismember(&pending, SIGPIPE) == 1
        if raised {
            var now = timespec(tv_sec: 0, tv_nsec: 0)
            _ = sigtimedwait(&pipeOnly, nil, &now)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        return raised
    }

    @Test("The wake-up channel of a watcher is close-on-exec, both ends")
    func wakePipeCloseOnExec() throws {
        var trigger: [Int32] = [-1, -1]
        try #require(pipe(&trigger) == 0)
        defer { close(trigger[0]) }
        let watcher = try _MemoryPressureWatcher.start(
            source: "test trigger", warning: trigger[1], critical: -1, deliver: { _ in }, ended: { _ in }
        ).get()
        defer { watcher.stop() }
        #expect(watcher.wakeDescriptors.count == 2)
        for descriptor in watcher.wakeDescriptors {
            #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0, "descriptor \(descriptor)")
        }
    }
    #endif

    @Test("A limit as a fraction of the memory the process may use")
    func fractionOfAvailableMemory() throws {
        let available = ProcessMemory.availableBytes
        #expect(available > 0)
        #expect(available <= Int(clamping: ProcessInfo.processInfo.physicalMemory))
        let configuration = MemoryCache<String, Data>.Configuration(costLimit: ProcessMemory.fraction(0.1))
        let limit = try #require(configuration.costLimit)
        #expect(abs(limit - available / 10) <= 1)
        #expect(ProcessMemory.fraction(2) == available, "fractions are clamped to 0…1")
        #expect(ProcessMemory.fraction(0) == 1)
    }

    @Test(
        "A fraction of the available memory that is NaN, infinite or negative is clamped, not a trap",
        arguments: [(Double.nan, 0), (-Double.infinity, 0), (-1, 0), (Double.infinity, 1), (1, 1)])
    func unusualFractions(_ fraction: Double, _ clamped: Double) {
        let expected = clamped == 0 ? 1 : ProcessMemory.availableBytes
        #expect(ProcessMemory.fraction(fraction) == expected)
    }
}
