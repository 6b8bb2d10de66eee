import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    /// `hoard storage` and `hoard settings`, run as the built executable with the
    /// cache, config and home folders pointing into a temporary directory.
    @Suite("LocalStorage through the hoard command-line tool", .timeLimit(.minutes(3)))
    struct LocalStorageCLITests {
        struct Folders {
            var caches: URL
            var config: URL
            var outside: URL
            var environment: [String: String] {
                ["XDG_CACHE_HOME": caches.path, "XDG_CONFIG_HOME": config.path, "HOME": config.path]
            }
        }

        static func withFolders(_ body: (Folders) throws -> Void) throws {
            try DiskTest.withTemporaryDirectory { url in
                let root = url.deletingLastPathComponent()
                let folders = Folders(
                    caches: root.appendingPathComponent("caches", isDirectory: true),
                    config: root.appendingPathComponent("config", isDirectory: true),
                    outside: root.appendingPathComponent("outside", isDirectory: true))
                for folder in [folders.caches, folders.config, folders.outside] {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                }
                try body(folders)
            }
        }

        static func hoard(_ folders: Folders, _ arguments: String..., input: String? = nil) throws
            -> (status: Int32, output: String, errors: String)
        {
            try DiskTest.run(
                DiskTest.executable(named: "hoard"), arguments, environment: folders.environment,
                input: input.map { Data($0.utf8) })
        }

        /// A store, a log in the default location and a settings namespace, the last
        /// two written by child processes in the default locations; and a folder of
        /// another program's.
        static func populate(_ folders: Folders) throws {
            do {
                let store = try DiskStore(directory: folders.caches.appendingPathComponent("app"))
                try store.set("hello", for: "a", in: "texts")
                try store.set("world", for: "b", in: "texts")
                try store.set("other", for: "c")
            }
            let child = try DiskTest.childExecutable()
            let log = try DiskTest.run(child, ["log-default", "events", "3"], environment: folders.environment)
            #expect(log.output == "done \(folders.caches.path)/hoard-logs/events.log\n", "\(log.errors)")
            let settings = try DiskTest.run(
                child, ["settings-write", "hoard.settings", "com.example.prefs", "2"], environment: folders.environment)
            #expect(settings.output == "done\n", "\(settings.errors)")
            try FileManager.default.createDirectory(
                at: folders.caches.appendingPathComponent("another-app"), withIntermediateDirectories: true)
            try Data("theirs".utf8).write(to: folders.caches.appendingPathComponent("another-app/data"))
        }

        @Test("storage list and settings keys/get show what the default locations hold")
        func listing() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)

                let list = try Self.hoard(folders, "storage", "list")
                #expect(list.status == 0, "\(list.errors)")
                #expect(list.output.contains("stores in \(folders.caches.path): 1"))
                #expect(list.output.contains("  \"app\"  3 entries, "))
                #expect(list.output.contains("    namespace \"texts\"  2 entries, 10 B"))
                #expect(list.output.contains("logs in \(folders.caches.path)/hoard-logs: 1"))
                #expect(list.output.contains("  \"events.log\"  3 messages, "))
                #expect(list.output.contains("settings namespaces: 1, 2 items"))
                #expect(list.output.contains("  \"com.example.prefs\"  2 items, 14 B"))

                let keys = try Self.hoard(folders, "settings", "keys", "com.example.prefs")
                #expect(keys.output == "\"key-0\"  7 B\n\"key-1\"  7 B\n")
                let value = try Self.hoard(folders, "settings", "get", "com.example.prefs", "key-1")
                #expect(value.output == "value-1\n")
                let missing = try Self.hoard(folders, "settings", "get", "com.example.prefs", "nope")
                #expect(missing.status != 0)
                let crafted = try Self.hoard(folders, "settings", "get", "../../etc", "x")
                #expect(crafted.status != 0)
                #expect(crafted.errors.contains("invalidName"))
            }
        }

        @Test("delete-all and clear-disk do nothing unless the answer is yes")
        func confirmation() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)
                let before = DiskTest.tree(folders.caches)

                for input in ["n\n", "", "maybe\n", "nope yes\n"] {
                    let declined = try Self.hoard(folders, "storage", "delete-all", input: input)
                    #expect(declined.status != 0)
                    #expect(declined.errors.contains("[y/N]"))
                    #expect(declined.errors.contains("not confirmed; nothing was changed"))
                    let notCleared = try Self.hoard(folders, "storage", "clear-disk", input: input)
                    #expect(notCleared.status != 0)
                }
                #expect(DiskTest.tree(folders.caches) == before)
                #expect(try Self.hoard(folders, "settings", "get", "com.example.prefs", "key-0").output == "value-0\n")

                let cleared = try Self.hoard(folders, "storage", "clear-disk", input: "y\n")
                #expect(cleared.status == 0, "\(cleared.errors)")
                #expect(cleared.output == "cleared \"app\": 3 entries removed\n")
                let store = try DiskStore(directory: folders.caches.appendingPathComponent("app"))
                #expect(try store.totalUsage().count == 0)
            }
        }

        @Test("clear-namespace clears one namespace; crafted names are refused")
        func clearNamespace() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)

                let cleared = try Self.hoard(folders, "storage", "clear-namespace", "texts", "--store", "app")
                #expect(cleared.status == 0, "\(cleared.errors)")
                #expect(cleared.output == "removed 2 entries from namespace \"texts\" of store \"app\"\n")
                let settings = try Self.hoard(folders, "storage", "clear-namespace", "com.example.prefs", "--settings")
                #expect(settings.output == "removed 2 values from settings namespace \"com.example.prefs\"\n")

                for store in ["..", "../outside", "another-app", "/"] {
                    let refused = try Self.hoard(folders, "storage", "clear-namespace", "texts", "--store", store)
                    #expect(refused.status != 0, "\(store)")
                    #expect(refused.errors.contains("nothing was cleared"), "\(store): \(refused.errors)")
                }
                let crafted = try Self.hoard(folders, "storage", "clear-namespace", "../hoard.settings", "--settings")
                #expect(crafted.errors.contains("invalidName"))
                let neither = try Self.hoard(folders, "storage", "clear-namespace", "texts")
                #expect(neither.status != 0)
                let store = try DiskStore(directory: folders.caches.appendingPathComponent("app"))
                #expect(try store.keys(in: DiskStore.defaultNamespace) == ["c"])
            }
        }

        @Test("delete-all --yes deletes stores, logs and settings suites, and nothing else")
        func deleteAll() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)
                try Data("mine".utf8).write(to: folders.config.appendingPathComponent("unrelated.plist"))

                let deleted = try Self.hoard(folders, "storage", "delete-all", "--yes")

                #expect(deleted.status == 0, "\(deleted.output) \(deleted.errors)")
                #expect(deleted.output == "deleted 1 store, 1 log, 1 settings namespace\n")
                #expect(DiskTest.tree(folders.caches) == ["another-app", "another-app/data"])
                #expect(try FileManager.default.contentsOfDirectory(atPath: folders.config.path) == ["unrelated.plist"])
                let list = try Self.hoard(folders, "storage", "list")
                #expect(list.output.contains("stores in \(folders.caches.path): 0"))
                #expect(list.output.contains("settings namespaces: 0, 0 items"))
            }
        }

        @Test("storage list --json and settings keys --json print the documented objects")
        func json() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)

                let list = try Self.hoard(folders, "storage", "list", "--json")
                #expect(list.status == 0, "\(list.errors)")
                #expect(list.output.split(separator: "\n").count == 1)
                let inventory = try DiskStoreSuites.DiskStoreCLITests.object(list.output)
                #expect(inventory["cachesDirectory"] as? String == folders.caches.path)
                let stores = try #require(inventory["stores"] as? [[String: Any]])
                #expect(stores.map { $0["name"] as? String } == ["app"])
                #expect(stores.first?["entries"] as? Int == 3)
                #expect(stores.first?["problem"] is NSNull)
                let namespaces = try #require(stores.first?["namespaces"] as? [[String: Any]])
                #expect(namespaces.map { $0["name"] as? String } == ["default", "texts"])
                #expect(namespaces.map { $0["entries"] as? Int } == [1, 2])
                let logs = try #require(inventory["logs"] as? [[String: Any]])
                #expect(logs.map { $0["name"] as? String } == ["events.log"])
                #expect(logs.first?["messages"] as? Int == 3)
                let settings = try #require(inventory["settings"] as? [[String: Any]])
                #expect(settings.map { $0["namespace"] as? String } == ["com.example.prefs"])
                #expect(settings.first?["items"] as? Int == 2)
                #expect(settings.first?["bytes"] as? Int == 14)

                let keys = try Self.hoard(folders, "settings", "keys", "com.example.prefs", "--json")
                #expect(keys.status == 0, "\(keys.errors)")
                let lines = try keys.output.split(separator: "\n").map(DiskStoreSuites.DiskStoreCLITests.object)
                #expect(lines.map { $0["key"] as? String } == ["key-0", "key-1"])
                #expect(lines.map { $0["size"] as? Int } == [7, 7])
            }
        }

        @Test("storage list groups the stores by program, those directly in the cache directory first")
        func listByProgram() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)
                for (path, key) in [("reader/reader.feeds", "a"), ("reader/reader.http", "b"), ("zeta/cache", "c")] {
                    try DiskStore(directory: folders.caches.appendingPathComponent(path)).set("v", for: key)
                }
                let list = try Self.hoard(folders, "storage", "list")
                #expect(list.status == 0, "\(list.errors)")
                let lines = list.output.split(separator: "\n").map(String.init)
                let stores = lines.prefix { !$0.hasPrefix("logs in") }.filter { !$0.contains("namespace ") }
                #expect(stores.count == 7, "\(list.output)")
                #expect(stores.first == "stores in \(folders.caches.path): 4")
                #expect(stores.dropFirst().first?.hasPrefix("  \"app\"  3 entries, ") == true)
                #expect(stores.dropFirst(2).first == "  program \"reader\": 2 stores")
                #expect(stores.dropFirst(3).first?.hasPrefix("    \"reader/reader.feeds\"  1 entry, ") == true)
                #expect(stores.dropFirst(4).first?.hasPrefix("    \"reader/reader.http\"  1 entry, ") == true)
                #expect(stores.dropFirst(5).first == "  program \"zeta\": 1 store")
                #expect(lines.contains("      namespace \"default\"  1 entry, 1 B"))

                let json = try Self.hoard(folders, "storage", "list", "--json", "--name", "reader/")
                let listed = try #require(
                    try DiskStoreSuites.DiskStoreCLITests.object(json.output)["stores"] as? [[String: Any]])
                #expect(listed.map { $0["name"] as? String } == ["reader/reader.feeds", "reader/reader.http"])
                #expect(listed.map { $0["program"] as? String } == ["reader", "reader"])

                let cleared = try Self.hoard(
                    folders, "storage", "clear-namespace", "default", "--store", "reader/reader.http")
                #expect(cleared.status == 0, "\(cleared.errors)")
                #expect(
                    try DiskStore(directory: folders.caches.appendingPathComponent("reader/reader.http")).totalUsage()
                        .count == 0)
            }
        }

        @Test("storage list --name lists only the stores, logs and settings namespaces of that prefix")
        func listByName() throws {
            try Self.withFolders { folders in
                try Self.populate(folders)
                do {
                    let store = try DiskStore(directory: folders.caches.appendingPathComponent("com.example.catalog"))
                    try store.set("x", for: "one")
                }

                let list = try Self.hoard(folders, "storage", "list", "--name", "com.example.")
                #expect(list.status == 0, "\(list.errors)")
                #expect(list.output.contains("stores in \(folders.caches.path): 1"))
                #expect(list.output.contains("  \"com.example.catalog\"  1 entry, "))
                #expect(!list.output.contains("\"app\""))
                #expect(list.output.contains("logs in \(folders.caches.path)/hoard-logs: 0"))
                #expect(list.output.contains("  \"com.example.prefs\"  2 items, 14 B"))

                let json = try Self.hoard(folders, "storage", "list", "--name", "app", "--json")
                #expect(json.status == 0, "\(json.errors)")
                let inventory = try DiskStoreSuites.DiskStoreCLITests.object(json.output)
                let stores = try #require(inventory["stores"] as? [[String: Any]])
                #expect(stores.map { $0["name"] as? String } == ["app"])
                #expect((inventory["settings"] as? [Any])?.isEmpty == true)
            }
        }

        @Test("storage list, its --json and hoard stats report one store's size on disk alike")
        func sizesAgree() throws {
            try Self.withFolders { folders in
                let directory = folders.caches.appendingPathComponent("app")
                do {
                    let store = try DiskStore(directory: directory)
                    for index in 0..<50 { try store.set(String(repeating: "v", count: 100 * index), for: "k\(index)") }
                    try store.set(Data(count: 200_000), for: "large")
                }
                let listed = try Self.hoard(folders, "storage", "list", "--json")
                let stores = try #require(
                    try DiskStoreSuites.DiskStoreCLITests.object(listed.output)["stores"] as? [[String: Any]])
                let listedBytes = try #require(stores.first?["bytesOnDisk"] as? Int)
                let stats = try Self.hoard(folders, "stats", directory.path, "--json")
                let statsBytes = try #require(
                    try DiskStoreSuites.DiskStoreCLITests.object(stats.output)["bytesOnDisk"] as? Int)
                #expect(listedBytes == statsBytes)
                #expect(listedBytes > 200_000)

                let text = try Self.hoard(folders, "storage", "list")
                let statsText = try Self.hoard(folders, "stats", directory.path)
                let size = StoreSize.text(listedBytes)
                #expect(text.output.contains("51 entries, \(size) on disk"), "\(text.output)")
                #expect(statsText.output.contains("on disk    \(size) ("), "\(statsText.output)")
            }
        }

        /// The CLI's way of writing a size: 1024-based, one decimal.
        enum StoreSize {
            static func text(_ count: Int) -> String {
                let units = ["B", "KiB", "MiB", "GiB"]
                var value = Double(count)
                var unit = 0
                while value >= 1024, unit < units.count - 1 {
                    value /= 1024
                    unit += 1
                }
                return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
            }
        }

        @Test("clear-disk --name and delete-all --name touch only the stores, logs and settings of that prefix")
        func byName() throws {
            try Self.withFolders { folders in
                // Given the usual population and a second store, com.example.catalog
                try Self.populate(folders)
                do {
                    let store = try DiskStore(directory: folders.caches.appendingPathComponent("com.example.catalog"))
                    try store.set("x", for: "one")
                    try store.set("y", for: "two")
                }

                // When only com.example.* is cleared
                let cleared = try Self.hoard(folders, "storage", "clear-disk", "--name", "com.example.", "--yes")

                // Then that store is empty and "app" keeps its three entries
                #expect(cleared.status == 0, "\(cleared.errors)")
                #expect(cleared.output == "cleared \"com.example.catalog\": 2 entries removed\n")
                #expect(try DiskStore(directory: folders.caches.appendingPathComponent("app")).totalUsage().count == 3)

                // When com.example.* is deleted
                let deleted = try Self.hoard(folders, "storage", "delete-all", "--name", "com.example.", "--yes")

                // Then the store and the com.example.prefs settings are gone; "app" and the log stay
                #expect(deleted.status == 0, "\(deleted.output) \(deleted.errors)")
                #expect(deleted.output == "deleted 1 store, 0 logs, 1 settings namespace\n")
                #expect(
                    !FileManager.default.fileExists(
                        atPath: folders.caches.appendingPathComponent("com.example.catalog").path))
                let list = try Self.hoard(folders, "storage", "list")
                #expect(list.output.contains("  \"app\"  3 entries, "))
                #expect(list.output.contains("  \"events.log\"  3 messages, "))
                #expect(list.output.contains("settings namespaces: 0, 0 items"))
            }
        }
    }
}
