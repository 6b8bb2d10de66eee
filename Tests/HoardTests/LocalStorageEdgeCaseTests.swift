import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// LocalStorage (inventory, deleteAll, clearSettings) and `hoard storage` on
    /// stores and settings in odd places: a store named like a store's own entries,
    /// a program folder named like the logs folder, a damaged index, a namespace
    /// another process wrote, a cache directory reached through a link, file names
    /// with control characters. Every test works in temporary folders and a
    /// settings domain of its own.
    @Suite("LocalStorage: odd names, damage and other processes", .timeLimit(.minutes(3)))
    struct LocalStorageEdgeCaseTests {
        /// A fresh `caches/` folder in a temporary directory, and a test settings domain.
        static func withCaches(_ body: (_ caches: URL, _ domain: _SettingsDomain) throws -> Void) throws {
            try DiskTest.withTemporaryDirectory { url in
                let caches = url.deletingLastPathComponent().appendingPathComponent("caches", isDirectory: true)
                try FileManager.default.createDirectory(at: caches, withIntermediateDirectories: true)
                try SettingsTest.withDomain { domain in try body(caches, domain) }
            }
        }

        /// Creates the store `DiskStore(named: name)` opens for `program`, with one entry.
        static func namedStore(_ name: String, program: String, in caches: URL) throws -> URL {
            let directory = _ProgramFolder.directory(named: name, program: program, in: caches)
            let store = try DiskStore(directory: directory)
            try store.set("value", for: "key")
            return directory
        }

        @Test("A program's only store named \"blobs\" is a Hoard store: it is listed and deleted")
        func storeNamedBlobs() throws {
            try Self.withCaches { caches, domain in
                // `DiskStore(named: "blobs")` in program com.example.app.
                let directory = try Self.namedStore("blobs", program: "com.example.app", in: caches)
                #expect(directory.path == caches.appendingPathComponent("com.example.app/blobs").path)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                #expect(try storage.inventory().stores.map(\.name) == ["com.example.app/blobs"])

                let report = try storage.deleteAll()
                #expect(report.deletedStores == ["com.example.app/blobs"])
                #expect(!FileManager.default.fileExists(atPath: directory.path), "\(DiskTest.tree(caches))")
            }
        }

        @Test("Stores in a program folder named hoard-logs (an accepted program folder name) are listed")
        func programFolderNamedHoardLogs() throws {
            try Self.withCaches { caches, domain in
                // useProgramFolder(named:) accepts the name (it checks it with this rule).
                try _LocalNames.validate("hoard-logs", what: "a program folder name")
                let directory = try Self.namedStore("feeds", program: "hoard-logs", in: caches)
                #expect(directory.path == caches.appendingPathComponent("hoard-logs/feeds").path)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                #expect(try storage.inventory().stores.map(\.name) == ["hoard-logs/feeds"])

                let report = try storage.deleteAll()
                #expect(report.deletedStores == ["hoard-logs/feeds"], "\(report)")
                #expect(!FileManager.default.fileExists(atPath: directory.path))
            }
        }

        @Test("A Hoard store whose index header is damaged is listed with its problem and can be deleted")
        func damagedHeaderStore() throws {
            try Self.withCaches { caches, domain in
                let directory = try Self.namedStore("feeds", program: "com.example.app", in: caches)
                // Damage the SQLite header (the first 16 bytes) of the closed store's index.
                let index = try FileHandle(forWritingTo: directory.appendingPathComponent("index.sqlite"))
                try index.write(contentsOf: Data(count: 16))
                try index.close()
                // DiskStore says it is this Hoard store's index, damaged, and to delete the directory.
                let opening = try #require(throws: HoardError.self) { try DiskStore(directory: directory) }
                #expect(opening.code == .storeDamaged)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                let stores = try storage.inventory().stores
                #expect(stores.map(\.name) == ["com.example.app/feeds"])
                #expect(stores.first?.problem?.code == .storeDamaged)

                let report = try storage.deleteAll()
                #expect(report.deletedStores == ["com.example.app/feeds"], "\(report)")
                #expect(!FileManager.default.fileExists(atPath: directory.path))
            }
        }

        @Test("A Hoard store whose index was emptied is listed as damaged and deleted with its value files")
        func emptiedIndexStore() throws {
            try Self.withCaches { caches, domain in
                let directory = _ProgramFolder.directory(named: "feeds", program: "com.example.app", in: caches)
                do {
                    let store = try DiskStore(directory: directory, configuration: .init(spillThreshold: 100))
                    try store.set(DiskTest.bytes(1_000), for: "big", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(truncate(directory.appendingPathComponent("index.sqlite").path, 0) == 0)
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)

                let stores = try storage.inventory().stores
                #expect(stores.map(\.name) == ["com.example.app/feeds"])
                #expect(stores.first?.problem?.code == .storeDamaged)

                let report = try storage.deleteAll()
                #expect(report.deletedStores == ["com.example.app/feeds"], "\(report)")
                #expect(!FileManager.default.fileExists(atPath: directory.path), "\(DiskTest.tree(caches))")
            }
        }

        @Test("deleteAll deletes a settings namespace another process registered after this one first listed")
        func settingsRegisteredByAnotherProcess() throws {
            try Self.withCaches { caches, domain in
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)
                // This process lists its storage once (an app's "storage" screen, say).
                #expect(try storage.inventory().settings.isEmpty)
                // Then another process of the user writes settings namespace "late".
                let child = try DiskTest.runChild(["settings-write", domain.name, "late", "2"])
                #expect(child.status == 0)
                #expect(SettingsTest.suiteFiles(domain).contains(domain.suiteName(for: "late") + ".plist"))
                defer {
                    // Clean up what deleteAll left (files of this test's own domain only).
                    for name in SettingsTest.suiteFiles(domain) {
                        try? FileManager.default.removeItem(
                            at: SettingsTest.preferencesFolder.appendingPathComponent(name))
                    }
                }

                let listed = try storage.inventory().settings.map(\.namespace)
                let report = try storage.deleteAll()

                #expect(listed == ["late"])
                #expect(report.deletedSettings.map(\.namespace) == ["late"], "\(report)")
                let left = SettingsTest.suiteFiles(domain)
                #expect(left.isEmpty || !report.isComplete, "deleteAll reported \(report) but left \(left)")
            }
        }

        @Test("clearSettings clears a namespace another process registered after this one first listed")
        func clearSettingsRegisteredByAnotherProcess() throws {
            try Self.withCaches { caches, domain in
                let storage = LocalStorage(cachesDirectory: caches, settingsDomain: domain)
                #expect(try storage.inventory().settings.isEmpty)
                let child = try DiskTest.runChild(["settings-write", domain.name, "late", "2"])
                #expect(child.status == 0)
                defer {
                    for name in SettingsTest.suiteFiles(domain) {
                        try? FileManager.default.removeItem(
                            at: SettingsTest.preferencesFolder.appendingPathComponent(name))
                    }
                }

                let removed = try storage.clearSettings(namespace: "late")

                #expect(removed == 2)
                #expect(
                    !FileManager.default.fileExists(atPath: SettingsTest.suiteFile("late", domain).path),
                    "the suite's file went with its last value")
            }
        }

        @Test("A store opened by name is listed when XDG_CACHE_HOME goes through a link and '..'")
        func cacheHomeThroughLinkAndDotDot() throws {
            try DiskStoreSuites.LocalStorageCLITests.withFolders { folders in
                // XDG_CACHE_HOME=<root>/link/../cache with link -> <root>/real/sub: the
                // system resolves it to <root>/real/cache.
                let root = folders.caches.deletingLastPathComponent()
                let real = root.appendingPathComponent("real", isDirectory: true)
                try FileManager.default.createDirectory(
                    at: real.appendingPathComponent("sub"), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(
                    at: real.appendingPathComponent("cache"), withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(
                    at: root.appendingPathComponent("link"), withDestinationURL: real.appendingPathComponent("sub"))
                var changed = folders
                changed.caches = URL(fileURLWithPath: root.path + "/link/../cache", isDirectory: true)

                // A program opens its store "feeds" by name, then the user lists storage.
                let child = try DiskTest.run(
                    DiskTest.childExecutable(), ["named-store", "com.example.app", "feeds"],
                    environment: changed.environment)
                #expect(child.status == 0, "\(child.errors)")
                let list = try DiskStoreSuites.LocalStorageCLITests.hoard(changed, "storage", "list", "--json")
                #expect(list.status == 0, "\(list.errors)")
                let stores = try #require(
                    try DiskStoreSuites.DiskStoreCLITests.object(list.output)["stores"] as? [[String: Any]])

                #expect(stores.compactMap { $0["name"] as? String } == ["com.example.app/feeds"], "\(list.output)")
                let written = DiskTest.tree(root).filter { $0.hasSuffix("feeds/index.sqlite") }
                #expect(written == ["real/cache/com.example.app/feeds/index.sqlite"], "store written at \(written)")
            }
        }

        @Test("delete-all prints the names it keeps escaped: no raw control characters reach the terminal")
        func deleteAllReportEscapesNames() throws {
            try DiskStoreSuites.LocalStorageCLITests.withFolders { folders in
                let directory = folders.caches.appendingPathComponent("app")
                do {
                    let store = try DiskStore(directory: directory)
                    try store.set("value", for: "key")
                }
                // A file another program left in the store, named with a terminal escape
                // sequence (clear screen, then a forged line).
                try Data("x".utf8).write(
                    to: directory.appendingPathComponent("evil\u{1B}[2J\u{1B}[Hdeleted 0 stores\nok"))

                let deleted = try DiskStoreSuites.LocalStorageCLITests.hoard(folders, "storage", "delete-all", "--yes")

                #expect(deleted.status == 1)
                #expect(deleted.output.contains("kept "), "\(deleted.output)")
                #expect(!deleted.output.contains("\u{1B}"), "\(deleted.output.debugDescription)")
                #expect(deleted.output.split(separator: "\n").count == 2, "\(deleted.output.debugDescription)")
            }
        }
    }
}
