import Foundation
import Hoard
import Logging
import Synchronization
import Testing

/// A log handler that keeps every record, for tests.
final class RecordingLogHandler: LogHandler, Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let stored = Mutex<[Record]>([])
    private let settings = Mutex<(level: Logger.Level, metadata: Logger.Metadata)>((.trace, [:]))

    var records: [Record] { stored.withLock { $0 } }

    var logLevel: Logger.Level {
        get { settings.withLock { $0.level } }
        set { settings.withLock { $0.level = newValue } }
    }
    var metadata: Logger.Metadata {
        get { settings.withLock { $0.metadata } }
        set { settings.withLock { $0.metadata = newValue } }
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        stored.withLock {
            $0.append(Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }

    /// A logger that writes to this handler.
    func logger() -> Logger {
        Logger(label: "test") { _ in self }
    }
}

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

            gated.fail(with: HoardError(.storageFull, "disk full"))
            cache["k"] = "w"
            await cache.flush()
            let warnings = handler.records.filter { $0.level == .warning }
            #expect(warnings.count == 1)
            let record = try #require(warnings.first)
            #expect(record.metadata["hoard.store"] == "logged")
            #expect(record.metadata["hoard.tier"] == "local store 0")
            #expect(record.metadata["hoard.operation"] == "write")
            #expect(record.metadata["hoard.key"] == "k")
            #expect(record.metadata["hoard.error"]?.contains("disk full") == true)
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
