import Foundation
import HoardLoggingTestSupport
import Testing

@testable import Hoard

#if os(Linux)
extension DiskStoreSuites {
    /// Damaged suite files (where corelibs Foundation keeps them): kept aside byte
    /// for byte, reported, and replaced by a new file.
    @Suite("SettingsStore damaged suite files", .timeLimit(.minutes(3)))
    struct SettingsDamageTests {
        @Test("A suite file damaged before the domain is opened is kept aside byte for byte, reported, and replaced")
        func damagedBeforeOpening() async throws {
            try await SettingsTest.withDomain { domain in
                defer { SettingsTest.removeKeptAside("prefs", domain) }
                // Given 5 values a child process wrote, and then a suite file cut in half
                let child = try await DiskTest.onThread {
                    try DiskTest.runChild(["settings-write", domain.name, "prefs", "5"])
                }
                #expect(child.lines == ["done"])
                let file = SettingsTest.suiteFile("prefs", domain)
                let whole = try Data(contentsOf: file)
                let damaged = whole.prefix(whole.count / 2)
                try damaged.write(to: file)

                // When this process opens the namespace
                let recorder = SettingsEventRecorder()
                let log = RecordingLogHandler()
                let settings = try SettingsTest.store(
                    "prefs", domain, codec: ValueCodec<String>.cacheValue,
                    configuration: .init(onEvent: recorder.handler, logger: log.logger()))

                // Then the damaged file was kept aside unchanged, and reported and logged
                let damage = try #require(recorder.keptAside.first)
                #expect(recorder.keptAside.count == 1)
                #expect(damage.namespace == "prefs")
                #expect(damage.path == file.path)
                #expect(damage.detail.contains("not a property list"))
                #expect(try Data(contentsOf: URL(fileURLWithPath: damage.keptAsidePath)) == damaged)
                #expect(settings.keptAsideFiles == [damage.keptAsidePath])
                #expect(!FileManager.default.fileExists(atPath: file.path))
                let record = await log.record { $0.message.contains("kept aside") }
                #expect(record.level == .error)
                #expect(record.metadata["hoard.keptAside"] == damage.keptAsidePath)
                #expect(settings.keys.isEmpty)

                // And writing starts a new file, which holds the new value
                try settings.set("fresh", for: "new")
                #expect(settings.value(for: "new") == "fresh")
                let onDisk = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
                #expect((onDisk as? [String: Any])?.keys.sorted() == ["new"])

                // A second damage gets a copy of its own; the first is never overwritten
                let garbage = Data("<plist>garbage, \u{0} not a property list".utf8)
                try garbage.write(to: file)
                try settings.set("again", for: "other")
                #expect(recorder.keptAside.count == 2)
                let second = try #require(recorder.keptAside.last)
                #expect(second.keptAsidePath != damage.keptAsidePath)
                #expect(try Data(contentsOf: URL(fileURLWithPath: second.keptAsidePath)) == garbage)
                #expect(try Data(contentsOf: URL(fileURLWithPath: damage.keptAsidePath)) == damaged)
                #expect(Set(settings.keptAsideFiles) == [damage.keptAsidePath, second.keptAsidePath])
            }
        }

        @Test("A damaged registry file loses no namespace: the suites on disk are listed again")
        func damagedRegistryKeepsNamespaces() throws {
            try SettingsTest.withDomain { domain in
                let keptPrefix = domain.name + ".plist.damaged-"
                defer {
                    for name in SettingsTest.suiteFiles(domain) where name.hasPrefix(keptPrefix) {
                        try? FileManager.default.removeItem(
                            at: SettingsTest.preferencesFolder.appendingPathComponent(name))
                    }
                }
                // Given a namespace another program wrote, and then a damaged registry file
                try SettingsTest.plant(Data("one".utf8), key: "one", namespace: "other", domain)
                let registryFile = SettingsTest.preferencesFolder.appendingPathComponent(domain.name + ".plist")
                try Data("not a property list".utf8).write(to: registryFile)

                // When this process opens the domain and writes a namespace of its own
                let mine = try SettingsTest.store("mine", domain, codec: ValueCodec<String>.cacheValue)
                try mine.set("x", for: "x")

                // Then the other program's namespace is still listed, on disk too, and readable
                let other = try SettingsTest.store("other", domain, codec: ValueCodec<String>.cacheValue)
                #expect(other.value(for: "one") == "one")
                #expect(_SettingsRegistry.shared(domain).namespaces().map(\.name) == ["mine", "other"])
                let listed = try #require(
                    try PropertyListSerialization.propertyList(from: Data(contentsOf: registryFile), format: nil)
                        as? [String: Any])
                #expect(Set(listed.keys) == ["mine", "other"])
                #expect(
                    SettingsTest.suiteFiles(domain).contains { $0.hasPrefix(keptPrefix) }, "the damaged file is kept")
            }
        }

        @Test(
            "A FIFO at a suite file's path is refused without waiting for a writer: opening reports it, a write fails",
            .timeLimit(.minutes(1)))
        func fifoSuiteFile() throws {
            try SettingsTest.withDomain { domain in
                // Given a namespace listed in the registry whose suite file is a FIFO
                let registry = try #require(UserDefaults(suiteName: domain.name))
                registry.set(true, forKey: "piped")
                #expect(registry.synchronize())
                let file = SettingsTest.suiteFile("piped", domain).path
                #expect(mkfifo(file, 0o600) == 0)
                defer { unlink(file) }

                // When the namespace is opened, read and written
                let recorder = SettingsEventRecorder()
                let settings = try SettingsTest.store(
                    "piped", domain, codec: ValueCodec<String>.cacheValue,
                    configuration: .init(onEvent: recorder.handler))
                let value = settings.value(for: "k")
                let error = try #require(throws: HoardError.self) { try settings.set("v", for: "k") }

                // Then nothing was read, opening reported the FIFO, and the write
                // failed naming it; the FIFO is still there
                #expect(value == nil)
                let failures = recorder.all.compactMap { event -> HoardError? in
                    if case .failed(_, _, let error) = event { error } else { nil }
                }
                #expect(failures.contains { $0.message.contains("a FIFO (named pipe), not a regular file") })
                #expect(error.code == .ioFailed)
                #expect(error.message.contains("a FIFO (named pipe), not a regular file"), "\(error)")
                #expect(error.path == file)
                #expect(_LogFile.nonRegularKind(atPath: file) == "a FIFO (named pipe)")
            }
        }

        @Test("Opening and reading a namespace changes no file: no lock file is created, nothing is moved")
        func readingCreatesNoFile() throws {
            try SettingsTest.withDomain { domain in
                // Given a namespace another program wrote
                try SettingsTest.plant(Data("v".utf8), key: "k", namespace: "read", domain)
                let before = SettingsTest.suiteFiles(domain)

                // When it is opened and read
                let settings = try SettingsTest.store("read", domain, codec: ValueCodec<String>.cacheValue)
                #expect(settings.value(for: "k") == "v")
                #expect(settings.keys == ["k"])

                // Then the folder holds the same files
                #expect(SettingsTest.suiteFiles(domain) == before)
            }
        }

        @Test(
            "A suite file damaged while the namespace is open is kept aside; the next write keeps this process's values"
        )
        func damagedWhileOpen() async throws {
            try await SettingsTest.withDomain { domain in
                defer { SettingsTest.removeKeptAside("open", domain) }
                // Given a namespace with two values, whose suite file is then overwritten with garbage
                let recorder = SettingsEventRecorder()
                let settings = try SettingsTest.store(
                    "open", domain, codec: ValueCodec<String>.cacheValue,
                    configuration: .init(onEvent: recorder.handler))
                let events = settings.events
                try settings.set("one", for: "a")
                try settings.set("two", for: "b")
                let file = SettingsTest.suiteFile("open", domain)
                let garbage = Data("bplist00 truncated".utf8)
                try garbage.write(to: file)

                // When a value is set
                try settings.set("three", for: "c")

                // Then the damaged file was kept aside unchanged and reported (handler and stream)
                let damage = try #require(recorder.keptAside.first)
                #expect(try Data(contentsOf: URL(fileURLWithPath: damage.keptAsidePath)) == garbage)
                var iterator = events.makeAsyncIterator()
                guard case .suiteKeptAside(let streamed) = await iterator.next() else {
                    Issue.record("no kept-aside event on the stream")
                    return
                }
                #expect(streamed == damage)

                // And the new file holds every value this process holds, the new one included
                let onDisk = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
                #expect((onDisk as? [String: Any])?.keys.sorted() == ["a", "b", "c"])
                #expect(settings.value(for: "a") == "one")
                #expect(settings.value(for: "c") == "three")
            }
        }
    }
}
#endif
