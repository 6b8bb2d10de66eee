import Foundation
import Hoard
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskStoreSuites {
    /// `hoard storage` with a folder in the cache directory that the user may not
    /// list: run as a user without the permission (as root, the tool runs as `nobody`
    /// with `setpriv`, since root lists any folder).
    @Suite("LocalStorage: a folder in the cache directory that cannot be listed", .timeLimit(.minutes(3)))
    struct LocalStorageUnreadableFolderTests {
        typealias CLI = DiskStoreSuites.LocalStorageCLITests

        /// The command that runs `executable` as a user the folders' permissions
        /// apply to: `nobody` when this process is root, this user otherwise.
        static func command(_ executable: String) -> [String] {
            geteuid() == 0
                ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", executable] : [executable]
        }

        static func run(_ folders: CLI.Folders, _ arguments: String...) throws
            -> (status: Int32, output: String, errors: String)
        {
            let command = Self.command(try DiskTest.executable(named: "hoard").path)
            return try DiskTest.run(
                URL(fileURLWithPath: command[0]), Array(command.dropFirst()) + arguments,
                environment: folders.environment)
        }

        /// A program folder `locked-app` with a store that cannot be listed (mode 0),
        /// a program folder `mixed-app` with a readable store and a store directory
        /// that cannot be listed, and a readable store `open-app/cache`; as root,
        /// everything is given to `nobody`. Runs `body`, then makes the folders
        /// readable again. Cancels the test, with the reason, when the user the tool
        /// runs as can list a mode-0 folder anyway.
        static func withUnreadableFolders(_ body: (CLI.Folders) throws -> Void) throws {
            try CLI.withFolders { folders in
                let stores = ["locked-app/cache", "mixed-app/open", "mixed-app/locked", "open-app/cache"]
                for name in stores {
                    let store = try DiskStore(directory: folders.caches.appendingPathComponent(name))
                    try store.set("value", for: "key")
                }
                let root = folders.caches.deletingLastPathComponent()
                if geteuid() == 0 {
                    chmod(root.path, 0o755)
                    for folder in [folders.caches, folders.config] {
                        let inside = try FileManager.default.subpathsOfDirectory(atPath: folder.path).map {
                            folder.appendingPathComponent($0).path
                        }
                        for path in [folder.path] + inside { chown(path, 65_534, 65_534) }
                    }
                }
                let locked = ["locked-app", "mixed-app/locked"].map { folders.caches.appendingPathComponent($0).path }
                for path in locked { chmod(path, 0) }
                defer { for path in locked { chmod(path, 0o700) } }
                let test = Self.command("/usr/bin/test")
                let check = try DiskTest.run(
                    URL(fileURLWithPath: test[0]), Array(test.dropFirst()) + ["-r", locked[0]])
                if check.status == 0 {
                    try Test.cancel(
                        "a mode-0 folder is readable to the user the tool runs as: permissions not enforced")
                }
                try body(folders)
            }
        }

        @Test("delete-all reports the folders it cannot list, exits 1, and deletes everything else")
        func deleteAll() throws {
            try Self.withUnreadableFolders { folders in
                let deleted = try Self.run(folders, "storage", "delete-all", "--yes")

                #expect(deleted.status == 1, "\(deleted.output) \(deleted.errors)")
                let lines = deleted.output.split(separator: "\n").map(String.init)
                #expect(lines.first == "deleted 2 stores, 0 logs, 0 settings namespaces", "\(deleted.output)")
                for name in ["locked-app", "mixed-app/locked"] {
                    let path = folders.caches.appendingPathComponent(name).path
                    #expect(
                        lines.contains { $0.hasPrefix("kept \(path): ") && $0.contains("permissionDenied") },
                        "\(deleted.output)")
                }
                for name in ["open-app", "mixed-app/open"] {
                    #expect(!FileManager.default.fileExists(atPath: folders.caches.appendingPathComponent(name).path))
                }
                for name in ["locked-app", "mixed-app/locked"] {
                    #expect(DiskTest.mode(folders.caches.appendingPathComponent(name)) == 0)
                }
            }
        }

        @Test("delete-all with a prefix no unreadable folder can match deletes it all and exits 0")
        func deleteAllUnrelatedPrefix() throws {
            try Self.withUnreadableFolders { folders in
                let deleted = try Self.run(folders, "storage", "delete-all", "--yes", "--name", "open-")

                #expect(deleted.status == 0, "\(deleted.output) \(deleted.errors)")
                #expect(deleted.output == "deleted 1 store, 0 logs, 0 settings namespaces\n")
            }
        }

        @Test("list shows the folders it cannot list; clear-disk refuses and clears nothing")
        func listAndClear() throws {
            try Self.withUnreadableFolders { folders in
                let list = try Self.run(folders, "storage", "list", "--json")
                #expect(list.status == 0, "\(list.errors)")
                let object = try JSONSerialization.jsonObject(with: Data(list.output.utf8)) as? [String: Any]
                let unreadable = object?["unreadableFolders"] as? [[String: Any]] ?? []
                #expect(unreadable.compactMap { $0["name"] as? String } == ["locked-app", "mixed-app/locked"])
                #expect(unreadable.allSatisfy { ($0["problem"] as? String)?.contains("permissionDenied") == true })

                let text = try Self.run(folders, "storage", "list")
                #expect(text.output.contains("  could not list \"locked-app\": permissionDenied"), "\(text.output)")

                let cleared = try Self.run(folders, "storage", "clear-disk", "--yes")
                #expect(cleared.status != 0)
                #expect(cleared.output.isEmpty, "\(cleared.output)")
                #expect(cleared.errors.contains("nothing was cleared"), "\(cleared.errors)")
                #expect(cleared.errors.contains("locked-app"), "\(cleared.errors)")
                let store = try DiskStore(directory: folders.caches.appendingPathComponent("open-app/cache"))
                #expect(try store.totalUsage().count == 1)
            }
        }
    }
}
