import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// Where stores opened by name live: each program's in a folder of its own.
    @Suite("A program's stores in a folder of its own", .timeLimit(.minutes(3)))
    struct ProgramFolderTests {
        static func child(_ caches: URL, _ arguments: String...) throws -> [String] {
            let run = try DiskTest.run(
                DiskTest.childExecutable(), ["named-store"] + arguments, environment: ["XDG_CACHE_HOME": caches.path])
            #expect(run.status == 0, "\(run.output) \(run.errors)")
            return run.output.split(separator: "\n").map(String.init)
        }

        @Test("By default a store opened by name is in the executable's folder; another folder can be chosen")
        func defaultAndOverride() throws {
            try DiskTest.withTemporaryDirectory { caches in
                let inDefault = try Self.child(caches, "-", "feeds")
                #expect(inDefault == ["dir \(caches.path)/HoardCrashWriter/feeds", "old miss"])
                let inChosen = try Self.child(caches, "com.example.reader", "feeds")
                #expect(
                    inChosen == [
                        "dir \(caches.path)/com.example.reader/feeds", "old miss",
                    ])
                // Two programs' stores of one name are two stores.
                #expect(
                    try DiskStore(directory: caches.appendingPathComponent("HoardCrashWriter/feeds")).value(
                        for: "new", as: String.self) == "written")
                #expect(
                    try DiskStore(directory: caches.appendingPathComponent("com.example.reader/feeds")).value(
                        for: "new", as: String.self) == "written")
                #expect(!FileManager.default.fileExists(atPath: caches.appendingPathComponent("feeds").path))
            }
        }

        @Test("A store an earlier version kept directly in the cache directory is moved into the program's folder")
        func migration() throws {
            try DiskTest.withTemporaryDirectory { caches in
                do {
                    let old = try DiskStore(directory: caches.appendingPathComponent("legacy"))
                    try old.set("kept", for: "old")
                }
                let moved = try Self.child(caches, "-", "legacy")
                #expect(moved == ["dir \(caches.path)/HoardCrashWriter/legacy", "old kept"])
                #expect(!FileManager.default.fileExists(atPath: caches.appendingPathComponent("legacy").path))
                // Found there again on the next open.
                let reopened = try Self.child(caches, "-", "legacy")
                #expect(reopened == ["dir \(caches.path)/HoardCrashWriter/legacy", "old kept"])

                // A folder of that name that is not a store is not moved.
                let foreign = caches.appendingPathComponent("photos")
                try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
                try Data("theirs".utf8).write(to: foreign.appendingPathComponent("data"))
                let beside = try Self.child(caches, "-", "photos")
                #expect(beside.first == "dir \(caches.path)/HoardCrashWriter/photos")
                #expect(FileManager.default.fileExists(atPath: foreign.appendingPathComponent("data").path))
            }
        }

        @Test("An old store named like the program becomes the program's folder's store of that name")
        func oldStoreNamedLikeTheProgram() throws {
            try DiskTest.withTemporaryDirectory { caches in
                do {
                    let old = try DiskStore(directory: caches.appendingPathComponent("app"))
                    try old.set("kept", for: "old")
                }
                // Another store of the program cannot go into a store: it stays at the top.
                #expect(
                    _ProgramFolder.directory(named: "other", program: "app", in: caches).path
                        == caches.appendingPathComponent("other").path)
                let moved = _ProgramFolder.directory(named: "app", program: "app", in: caches)
                #expect(moved.path == caches.appendingPathComponent("app/app").path)
                #expect(try DiskStore(directory: moved).value(for: "old", as: String.self) == "kept")
                #expect(
                    _ProgramFolder.directory(named: "other", program: "app", in: caches).path
                        == caches.appendingPathComponent("app/other").path)
            }
        }

        @Test("The default folder name is the program's, made a safe name; a bad override is refused")
        func names() throws {
            #expect(_ProgramFolder.defaultName(for: "feed reader") == "feed-reader")
            #expect(_ProgramFolder.defaultName(for: "..x..y/z.") == "x.y-z")
            #expect(_ProgramFolder.defaultName(for: "…") == "hoard")
            #expect(_ProgramFolder.defaultName(for: String(repeating: "a", count: 300)).utf8.count == 128)
            let before = DiskStore.programFolderName
            for bad in ["", "a/b", "..", ".hidden", "sp ace"] {
                #expect(throws: HoardError.self) { try DiskStore.useProgramFolder(named: bad) }
            }
            #expect(DiskStore.programFolderName == before)
        }

        @Test("LocalStorage lists, clears and deletes stores in program folders by their PROGRAM/STORE names")
        func localStorage() throws {
            try DiskTest.withTemporaryDirectory { caches in
                for (path, key) in [("feeds/feeds.items", "a"), ("feeds/feeds.http", "b"), ("app", "c")] {
                    try DiskStore(directory: caches.appendingPathComponent(path)).set("v", for: key)
                }
                let storage = LocalStorage(cachesDirectory: caches)
                let stores = try storage.inventory().stores
                #expect(stores.map(\.name) == ["app", "feeds/feeds.http", "feeds/feeds.items"])
                #expect(stores.map(\.program) == [nil, "feeds", "feeds"])
                #expect(stores.map(\.storeName) == ["app", "feeds.http", "feeds.items"])
                #expect(try storage.clearNamespace("default", inStore: "feeds/feeds.items") == 1)
                #expect(throws: HoardError.self) { try storage.clearNamespace("default", inStore: "feeds/../app") }
                #expect(throws: HoardError.self) { try storage.clearNamespace("default", inStore: "a/b/c") }
                let report = try storage.deleteAll(namePrefix: "feeds/")
                #expect(report.deletedStores == ["feeds/feeds.http", "feeds/feeds.items"])
                #expect(!FileManager.default.fileExists(atPath: caches.appendingPathComponent("feeds").path))
                #expect(try storage.inventory().stores.map(\.name) == ["app"])
            }
        }
    }
}
