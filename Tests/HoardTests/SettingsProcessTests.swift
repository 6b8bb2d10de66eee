import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// Real processes writing one settings namespace at the same time.
    @Suite("SettingsStore across processes", .timeLimit(.minutes(5)))
    struct SettingsProcessTests {
        @Test("Two processes writing 300 keys each into one namespace at once: all 600 survive")
        func twoWritersKeepEveryWrite() async throws {
            try await SettingsTest.withDomain { domain in
                // Given two writers of one namespace, both open and waiting to start
                let outcomes = try await DiskTest.onThread {
                    let writers = try ["a", "b"].map { prefix in
                        try SettingsWriterProcess(domain: domain.name, namespace: "shared", prefix: prefix, count: 300)
                    }
                    let ready = writers.map { $0.nextLine() }
                    // When both are told to write at once
                    for writer in writers { try writer.start() }
                    return (ready, writers.map { $0.finish() })
                }
                #expect(outcomes.0 == ["ready", "ready"])
                for outcome in outcomes.1 {
                    #expect(outcome.status == 0, "\(outcome.errors)")
                    #expect(outcome.lines == ["done"], "\(outcome.errors)")
                }

                // Then the suite holds every key each of them wrote, with its value
                let expected = ["a", "b"].flatMap { prefix in (0..<300).map { "\(prefix)-\($0)" } }
                #if os(Linux)
                let file = SettingsTest.preferencesFolder.appendingPathComponent(
                    domain.suiteName(for: "shared") + ".plist")
                let onDisk = try #require(
                    try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
                        as? [String: Any])
                #expect(onDisk.count == 600)
                #endif
                let settings = try SettingsTest.store("shared", domain, codec: ValueCodec<String>.cacheValue)
                #expect(settings.count == 600)
                #expect(Set(settings.keys) == Set(expected))
                #expect(expected.allSatisfy { settings.value(for: $0) == $0 })
                #expect(_SettingsRegistry.shared(domain).namespaces().map(\.name) == ["shared"])
            }
        }

        @Test("A namespace another process creates after this one opened the domain is read, counted and removable")
        func namespaceCreatedByAnotherProcessIsSeen() async throws {
            try await SettingsTest.withDomain { domain in
                // Given this process already uses the domain (namespace "first")
                let first = try SettingsTest.store("first", domain, codec: ValueCodec<String>.cacheValue)
                try first.set("x", for: "x")

                // When another process writes key "late-0" into a new namespace "late"
                let outcome = try await DiskTest.onThread {
                    let writer = try SettingsWriterProcess(
                        domain: domain.name, namespace: "late", prefix: "late", count: 1)
                    let ready = writer.nextLine()
                    try writer.start()
                    return (ready, writer.finish())
                }
                #expect(outcome.0 == "ready")
                #expect(outcome.1.status == 0, "\(outcome.1.errors)")
                #expect(outcome.1.lines == ["done"])

                // Then a store of "late" opened afterwards reads it, counts it and removes it
                let late = try SettingsTest.store("late", domain, codec: ValueCodec<String>.cacheValue)
                #expect(late.value(for: "late-0") == "late-0")
                #expect(late.keys == ["late-0"])
                #expect(_SettingsRegistry.shared(domain).totalCount == 2)
                #expect(_SettingsRegistry.shared(domain).namespaces().map(\.name) == ["first", "late"])
                #expect(try late.removeAll() == 1)
                #expect(!FileManager.default.fileExists(atPath: SettingsTest.suiteFile("late", domain).path))
            }
        }

        @Test("A process that opened a namespace before another removed it lists it again when it writes")
        func writeAfterAnotherProcessRemovedTheNamespaceIsListed() async throws {
            try await SettingsTest.withDomain { domain in
                // Given namespaces "other" and "shared" on disk, and another process
                // that opened "shared" while both were listed
                let other = try SettingsTest.store("other", domain, codec: ValueCodec<String>.cacheValue)
                try other.set("y", for: "y")
                let shared = try SettingsTest.store("shared", domain, codec: ValueCodec<String>.cacheValue)
                try shared.set("x", for: "x")
                let outcome = try await DiskTest.onThread {
                    let writer = try SettingsWriterProcess(
                        domain: domain.name, namespace: "shared", prefix: "late", count: 1)
                    let ready = writer.nextLine()
                    // When this process removes "shared" (its file and its registry
                    // entry), and only then the other process writes "late-0" into it
                    let removed = try shared.removeAll()
                    try writer.start()
                    return (ready, removed, writer.finish())
                }
                #expect(outcome.0 == "ready")
                #expect(outcome.1 == 1)
                #expect(outcome.2.status == 0, "\(outcome.2.errors)")
                #expect(outcome.2.lines == ["done"])

                // Then the namespace is listed on disk again: what lists the domain
                // (LocalStorage) sees the write, counts it and can remove it
                let registry = _SettingsRegistry.shared(domain)
                try registry.takeInNamespacesOnDisk()
                #expect(registry.namespaces().map(\.name) == ["other", "shared"])
                #expect(shared.value(for: "late-0") == "late-0")
                #expect(try shared.removeAll() == 1)
                #expect(!FileManager.default.fileExists(atPath: SettingsTest.suiteFile("shared", domain).path))
            }
        }

        @Test("Removing everything removes a namespace another process created that this one never opened")
        func removingEverythingRemovesAnotherProcesssNamespace() async throws {
            try await SettingsTest.withDomain { domain in
                // Given this process uses namespace "first", and another process then
                // writes key "late-0" into a new namespace "late"
                let first = try SettingsTest.store("first", domain, codec: ValueCodec<String>.cacheValue)
                try first.set("x", for: "x")
                let outcome = try await DiskTest.onThread {
                    let writer = try SettingsWriterProcess(
                        domain: domain.name, namespace: "late", prefix: "late", count: 1)
                    let ready = writer.nextLine()
                    try writer.start()
                    return (ready, writer.finish())
                }
                #expect(outcome.0 == "ready")
                #expect(outcome.1.status == 0, "\(outcome.1.errors)")
                #expect(outcome.1.lines == ["done"])

                // When this process removes everything
                let removed = try _SettingsRegistry.shared(domain).removeEverything()

                // Then both namespaces went, files and registry entries alike
                #expect(removed.map(\.name) == ["first", "late"])
                #expect(removed.map(\.count) == [1, 1])
                #expect(SettingsTest.suiteFiles(domain).isEmpty, "\(SettingsTest.suiteFiles(domain))")
            }
        }
    }
}
