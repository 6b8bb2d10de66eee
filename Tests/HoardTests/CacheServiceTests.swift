#if ServiceLifecycle
import Foundation
import Hoard
import HoardLoggingTestSupport
import HoardServiceLifecycle
import Logging
import ServiceLifecycle
import Testing

@Suite("Cache as a swift-service-lifecycle Service", .timeLimit(.minutes(3)))
struct CacheServiceTests {
    @Test("In a ServiceGroup, every write acknowledged before graceful shutdown is on disk when the group returns")
    func gracefulShutdownFlushes() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let gated = GatedStore(disk)
            var configuration: Cache<Int, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            let cache = try Cache<Int, String>(configuration: configuration)
            let group = ServiceGroup(
                services: [CacheService(cache)], gracefulShutdownSignals: [],
                logger: RecordingLogHandler().logger())
            let running = Task { try await group.run() }

            // The writer holds its first batch while thousands of writes queue up
            // behind it; applying them takes the writer a while after the release,
            // so a group that returned without flushing finds most of them missing.
            gated.close()
            let filler = String(repeating: "x", count: 1_000)
            for key in 0..<5_000 { cache[key] = "value \(key) \(filler)" }
            await group.triggerGracefulShutdown()
            gated.release()
            try await running.value

            #expect(try disk.keys(in: "test").count == 5_000)
            for key in [0, 2_500, 4_999] {
                #expect(try disk.entry(for: String(key), in: "test")?.data == Data("value \(key) \(filler)".utf8))
            }
        }
    }

    @Test("Cancelled instead of shut down gracefully, the service still flushes before returning")
    func cancellationFlushes() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let cache = try Cache<Int, String>(configuration: CacheTest.configuration(disk: disk))
            let service = CacheService(cache)
            let running = Task { try await service.run() }
            for key in 0..<100 { cache[key] = "v\(key)" }
            running.cancel()
            try await running.value
            #expect(try disk.keys(in: "test").count == 100)
        }
    }
}
#endif
