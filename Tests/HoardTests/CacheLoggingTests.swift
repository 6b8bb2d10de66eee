import Foundation
import Hoard
import HoardLoggingTestSupport
import Logging
import Synchronization
import Testing

@Suite("Cache logging", .timeLimit(.minutes(3)))
struct CacheLoggingTests {
    @Test("A background write failure is logged once, at warning, with the store, tier, operation and key")
    func writeFailureIsLogged() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let handler = RecordingLogHandler()
            let gated = GatedStore(try DiskStore(directory: directory))
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration("logged")
            configuration.localStores = .stores([gated])
            configuration.logger = handler.logger()
            let cache = try Cache<String, String>(configuration: configuration)

            cache["fine"] = "v"
            _ = cache["fine"]
            _ = try await cache.value(for: "absent")
            await cache.flush()
            #expect(handler.records.filter { $0.level >= .info }.isEmpty, "nothing at info or above on the hot path")

            // A failure of the store as a whole: no removal of the older value follows.
            gated.fail(with: HoardError(.ioFailed, "disk failed"))
            cache["k"] = "w"
            await cache.flush()
            let warnings = handler.records.filter { $0.level == .warning }
            #expect(warnings.count == 1)
            let record = try #require(warnings.first)
            #expect(record.metadata["hoard.store"] == "logged")
            #expect(record.metadata["hoard.tier"] == "local store 0")
            #expect(record.metadata["hoard.operation"] == "write")
            #expect(record.metadata["hoard.key"] == "k")
            #expect(record.metadata["hoard.error"]?.contains("disk failed") == true)
        }
    }

    @Test("A promotion dropped for a newer write is logged at debug only")
    func droppedPromotionIsDebug() async throws {
        let handler = RecordingLogHandler()
        let probe = FetchProbe(open: false)
        var configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        configuration.logger = handler.logger()
        let cache = try Cache<String, Int>(configuration: configuration) { _ in
            await probe.enter()
            return 1
        }
        let read = Task { try await cache.value(for: "k") }
        #expect(await CacheTest.eventually { probe.calls == 1 })
        cache["k"] = 2
        probe.open()
        _ = try await read.value
        let records = handler.records
        #expect(records.count == 1)
        #expect(records.first?.level == .debug)
        #expect(records.first?.metadata["hoard.key"] == "k")
    }
}
