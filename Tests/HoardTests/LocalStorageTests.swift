import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// ``LocalStorage`` on a temporary cache directory, with a settings domain of
    /// the test's own, next to files that are not Hoard's and must survive.
    @Suite("LocalStorage", .timeLimit(.minutes(3)))
    struct LocalStorageTests {
        /// A temporary folder holding `caches/` (the injected default location) and
        /// `outside/` (files that are not under it), removed afterwards.
        static func withLayout(_ body: (_ caches: URL, _ outside: URL, _ domain: _SettingsDomain) throws -> Void) throws
        {
            try DiskTest.withTemporaryDirectory { url in
                let root = url.deletingLastPathComponent()
                let caches = root.appendingPathComponent("caches", isDirectory: true)
                let outside = root.appendingPathComponent("outside", isDirectory: true)
                try FileManager.default.createDirectory(at: caches, withIntermediateDirectories: true)
                try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
                try SettingsTest.withDomain { domain in try body(caches, outside, domain) }
            }
        }

        /// Two stores, a log, a settings namespace, and things that are not Hoard's:
        /// a folder and a file in the cache directory, a non-log file in hoard-logs,
        /// and a link to a store outside.
        static func populate(_ caches: URL, _ outside: URL, _ domain: _SettingsDomain) throws {
            do {
                let app = try DiskStore(
                    directory: caches.appendingPathComponent("com.example.app"),
                    configuration: .init(spillThreshold: 100))
                try app.set("hello", for: "a", in: "texts")
                try app.set("world", for: "b", in: "texts")
                try app.set(DiskTest.bytes(5_000), for: "big", in: "images")
                let other = try DiskStore(directory: caches.appendingPathComponent("other store"))
                try other.set(Data([1, 2, 3]), for: "x")
                let elsewhere = try DiskStore(directory: outside.appendingPathComponent("linked-store"))
                try elsewhere.set("outside", for: "keep")
            }
            let logs = caches.appendingPathComponent("hoard-logs", isDirectory: true)
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            let log = try MessageLog<String>(
                fileURL: logs.appendingPathComponent("events.log"), maximumBytes: 4_096, overwritesOldMessages: true,
                codec: .cacheValue)
            try log.append(contentsOf: ["one", "two", "three"])
            try Data("notes".utf8).write(to: logs.appendingPathComponent("notes.txt"))
            try FileManager.default.createDirectory(
                at: caches.appendingPathComponent("some-other-app/data"), withIntermediateDirectories: true)
            try Data("theirs".utf8).write(to: caches.appendingPathComponent("some-other-app/data/file"))
            try Data("theirs".utf8).write(to: caches.appendingPathComponent("loose-file"))
            try FileManager.default.createSymbolicLink(
                at: caches.appendingPathComponent("linked-store"),
                withDestinationURL: outside.appendingPathComponent("linked-store"))
            let settings = try SettingsTest.store("com.example.prefs", domain, codec: ValueCodec<String>.cacheValue)
            try settings.set("john", for: "username")
            try settings.set("dark", for: "theme")
        }

        @Test("inventory lists stores with namespaces, logs and settings, with counts and sizes; nothing else")
        func inventory() throws {
            try Self.withLayout { caches, outside, domain in
                try Self.populate(caches, outside, domain)
                let before = DiskTest.tree(caches)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                let inventory = try storage.inventory()

                #expect(inventory.stores.map(\.name) == ["com.example.app", "other store"])
                let app = try #require(inventory.stores.first)
                #expect(app.entryCount == 3)
                #expect(app.namespaces["texts"]?.count == 2)
                #expect(app.namespaces["texts"]?.bytes == 10)
                #expect(app.namespaces["images"]?.bytes == 5_000)
                #expect(app.bytesOnDisk > 5_000)
                #expect(app.problem == nil)
                #expect(inventory.logs.map(\.name) == ["events.log"])
                #expect(inventory.logs.first?.messageCount == 3)
                #expect(inventory.logs.first?.bytesOnDisk ?? 0 > 64)
                #expect(inventory.settings.map(\.namespace) == ["com.example.prefs"])
                #expect(inventory.settings.first?.itemCount == 2)
                #expect(inventory.settings.first?.bytes == 8)
                #expect(DiskTest.tree(caches) == before)
            }
        }

        @Test("clearNamespace clears one namespace of one store; crafted or foreign names are refused")
        func clearNamespace() throws {
            try Self.withLayout { caches, outside, domain in
                try Self.populate(caches, outside, domain)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                #expect(try storage.clearNamespace("texts", inStore: "com.example.app") == 2)

                let app = try DiskStore(directory: caches.appendingPathComponent("com.example.app"))
                #expect(try app.keys(in: "texts").isEmpty)
                #expect(try app.keys(in: "images") == ["big"])
                for crafted in ["", ".", "..", "../outside/linked-store", "a/b/c", "a/..", "a/", "nul\u{0}", "/tmp"] {
                    let error = try #require(throws: HoardError.self) {
                        try storage.clearNamespace("keep", inStore: crafted)
                    }
                    #expect(error.code == .invalidName, "\(crafted)")
                }
                // `a/b` is a store `b` in program `a`'s folder: there is none.
                for foreign in ["some-other-app", "loose-file", "linked-store", "missing", "hoard-logs", "a/b"] {
                    let error = try #require(throws: HoardError.self) {
                        try storage.clearNamespace("keep", inStore: foreign)
                    }
                    #expect(error.code == .notAStore, "\(foreign)")
                }
                let elsewhere = try DiskStore(directory: outside.appendingPathComponent("linked-store"))
                #expect(try elsewhere.keys(in: DiskStore.defaultNamespace) == ["keep"])
                #expect(!FileManager.default.fileExists(atPath: caches.appendingPathComponent("missing").path))

                #expect(try storage.clearSettings(namespace: "com.example.prefs") == 2)
                #expect(try storage.inventory().settings.isEmpty)
            }
        }

        @Test("clearDiskStores empties every store and touches nothing else")
        func clearDiskStores() throws {
            try Self.withLayout { caches, outside, domain in
                try Self.populate(caches, outside, domain)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                let cleared = try storage.clearDiskStores()

                #expect(cleared.map(\.store) == ["com.example.app", "other store"])
                #expect(cleared.map(\.removed) == [3, 1])
                let inventory = try storage.inventory()
                #expect(inventory.stores.map(\.entryCount) == [0, 0])
                #expect(inventory.logs.first?.messageCount == 3)
                #expect(inventory.settings.first?.itemCount == 2)
                let elsewhere = try DiskStore(directory: outside.appendingPathComponent("linked-store"))
                #expect(try elsewhere.keys(in: DiskStore.defaultNamespace) == ["keep"])
            }
        }

        @Test("clearDiskStores and deleteAll with a name prefix touch only the stores, logs and settings it names")
        func byNamePrefix() throws {
            try Self.withLayout { caches, outside, domain in
                // Given two stores, a log and the com.example.prefs settings
                try Self.populate(caches, outside, domain)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                // When only com.example.* is cleared, then deleted
                let cleared = try storage.clearDiskStores(namePrefix: "com.example.")
                let afterClear = try storage.inventory()
                let report = try storage.deleteAll(namePrefix: "com.example.")

                // Then the other store, the log and the logs folder were never touched
                #expect(cleared.map(\.store) == ["com.example.app"])
                #expect(cleared.map(\.removed) == [3])
                #expect(afterClear.stores.map(\.entryCount) == [0, 1])
                #expect(report.deletedStores == ["com.example.app"])
                #expect(report.deletedLogs.isEmpty)
                #expect(report.deletedSettings.map(\.namespace) == ["com.example.prefs"])
                let inventory = try storage.inventory()
                #expect(inventory.stores.map(\.name) == ["other store"])
                #expect(inventory.stores.first?.entryCount == 1)
                #expect(inventory.logs.map(\.name) == ["events.log"])
                #expect(inventory.settings.isEmpty)
                #expect(
                    FileManager.default.fileExists(atPath: caches.appendingPathComponent("hoard-logs/notes.txt").path))
            }
        }

        @Test("deleteAll deletes Hoard's files only: foreign files, links and their targets survive")
        func deleteAll() throws {
            try Self.withLayout { caches, outside, domain in
                // Given the layout, plus links planted inside a store pointing outside,
                // a foreign file inside another store, and a store held open
                try Self.populate(caches, outside, domain)
                let target = outside.appendingPathComponent("precious")
                try Data("precious".utf8).write(to: target)
                let app = caches.appendingPathComponent("com.example.app")
                try FileManager.default.createSymbolicLink(
                    at: app.appendingPathComponent("blobs/0123456789abcdef-0123456789abcdef"),
                    withDestinationURL: target)
                try FileManager.default.createSymbolicLink(
                    at: app.appendingPathComponent("index.sqlite-journal"), withDestinationURL: target)
                try FileManager.default.createSymbolicLink(
                    at: app.appendingPathComponent("up"), withDestinationURL: outside)
                try Data("mine".utf8).write(to: caches.appendingPathComponent("other store/README"))
                let held = try DiskStore(directory: caches.appendingPathComponent("held"))
                try held.set("busy", for: "k")
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                // When everything is deleted
                let report = try storage.deleteAll()

                // Then the held store and foreign files are kept and reported
                #expect(report.deletedStores == [])
                #expect(report.deletedLogs == ["events.log"])
                #expect(report.deletedSettings.map(\.namespace) == ["com.example.prefs"])
                #expect(
                    report.kept.map { URL(fileURLWithPath: $0.path).lastPathComponent }.sorted()
                        == ["com.example.app", "held", "hoard-logs", "other store"])
                #expect(try FileManager.default.contentsOfDirectory(atPath: app.path) == ["up"])
                #expect(DiskTest.tree(caches.appendingPathComponent("other store")) == ["README"])
                #expect(try held.value(for: "k", as: String.self) == "busy")
                #expect(DiskTest.tree(caches.appendingPathComponent("hoard-logs")) == ["notes.txt"])
                #expect(DiskTest.tree(caches.appendingPathComponent("some-other-app")) == ["data", "data/file"])
                #expect(FileManager.default.fileExists(atPath: caches.appendingPathComponent("loose-file").path))
                #expect(try Data(contentsOf: target) == Data("precious".utf8))
                let elsewhere = try DiskStore(directory: outside.appendingPathComponent("linked-store"))
                #expect(try elsewhere.keys(in: DiskStore.defaultNamespace) == ["keep"])
                #expect(try storage.inventory().settings.isEmpty)
                #expect(SettingsTest.suiteFiles(domain).isEmpty)
            }
        }

        @Test("deleteAll removes a whole store directory when it holds only Hoard's files")
        func deleteAllComplete() throws {
            try Self.withLayout { caches, _, domain in
                do {
                    let store = try DiskStore(
                        directory: caches.appendingPathComponent("plain"), configuration: .init(spillThreshold: 10))
                    try store.set(DiskTest.bytes(100), for: "file")
                    try store.set("inline", for: "inline")
                }
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)
                let report = try storage.deleteAll()
                #expect(report.isComplete)
                #expect(report.deletedStores == ["plain"])
                #expect(DiskTest.tree(caches).isEmpty)
            }
        }

        @Test("Log names for the default location are checked")
        func logNames() throws {
            for crafted in ["", "..", "../x", "a/b", ".hidden", "x\u{0}"] {
                let error = try #require(throws: HoardError.self) {
                    try MessageLog<String>.defaultFileURL(named: crafted)
                }
                #expect(error.code == .invalidName)
            }
        }
    }
}
