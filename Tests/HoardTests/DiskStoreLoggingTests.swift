import Foundation
import Hoard
import HoardLoggingTestSupport
import Testing

@Suite("DiskStore logging", .timeLimit(.minutes(3)))
struct DiskStoreLoggingTests {
    @Test("Events are logged once each at their level, with the store's metadata; reads and writes are not")
    func eventsAreLogged() throws {
        try DiskTest.withTemporaryDirectory { directory in
            let handler = RecordingLogHandler()
            var configuration = DiskStore.Configuration()
            configuration.logger = handler.logger()
            let store = try DiskStore(directory: directory, configuration: configuration)
            try store.set("text", for: "k", in: "ns")
            #expect(try store.value(for: "k", as: String.self, in: "ns") == "text")
            #expect(handler.records.filter { $0.level >= .info }.isEmpty, "nothing logged for plain reads and writes")

            #expect(try store.value(for: "k", as: [Int].self, in: "ns") == nil)
            let kept = try #require(handler.records.first { $0.level == .notice })
            #expect(kept.metadata["hoard.key"] == "k")
            #expect(kept.metadata["hoard.namespace"] == "ns")
            #expect(kept.metadata["hoard.tier"] == "disk")
            #expect(kept.metadata["hoard.operation"] == "decode")
            #expect(kept.metadata["hoard.store"] == directory.standardizedFileURL.path)
            #expect(handler.records.filter { $0.level == .notice }.count == 1)

            try store.set(Data(count: 10_000), for: "big", in: "ns")
            #expect(try store.trim(toBytes: 100) > 0)
            #expect(handler.records.contains { $0.level == .debug && $0.metadata["hoard.operation"] == "trim" })
        }
    }
}
