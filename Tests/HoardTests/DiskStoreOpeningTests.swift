import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    @Suite("DiskStore opening: foreign paths are refused untouched")
    struct DiskStoreOpeningTests {
        /// Every file under `url` with its bytes, to prove nothing changed.
        static func snapshot(_ url: URL) -> [String: Data] {
            var result: [String: Data] = [:]
            for name in DiskTest.tree(url) {
                let path = url.appendingPathComponent(name)
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: path.path, isDirectory: &isDirectory)
                result[name] = isDirectory.boolValue ? Data("<dir>".utf8) : (try? Data(contentsOf: path)) ?? Data()
            }
            return result
        }

        static func expectRefused(
            _ url: URL, code: HoardError.Code = .notAStore, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let error = #expect(throws: HoardError.self, sourceLocation: sourceLocation) {
                try DiskStore(directory: url)
            }
            #expect(error?.code == code, sourceLocation: sourceLocation)
            #expect(error?.path != nil, sourceLocation: sourceLocation)
            #expect(error?.description.isEmpty == false, sourceLocation: sourceLocation)
        }

        @Test("A regular file is refused and left as it was")
        func regularFile() throws {
            try DiskTest.withTemporaryDirectory { url in
                try Data("not a directory".utf8).write(to: url)
                Self.expectRefused(url)
                #expect(try Data(contentsOf: url) == Data("not a directory".utf8))
            }
        }

        @Test("A store directory that is a symbolic link is followed: the store lives where it points")
        func symlinkedStoreDirectory() throws {
            try DiskTest.withTemporaryDirectory { url in
                let target = url.deletingLastPathComponent().appendingPathComponent("elsewhere", isDirectory: true)
                try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(at: url, withDestinationURL: target)
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                    try store.set(DiskTest.bytes(100), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("index.sqlite").path))
                #expect(DiskTest.blobFiles(target).count == 1)
                #expect(try DiskStore(directory: url).entry(for: "k", in: "ns")?.data == DiskTest.bytes(100))
            }
        }

        @Test(
            "A blobs entry that is a symbolic link or a file, or a lock that is a link, is refused before anything is created",
            arguments: ["blobs-link", "blobs-file", "lock-link"])
        func linksInsideAreRefused(kind: String) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given an otherwise empty directory, and a directory outside it
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                let outside = url.deletingLastPathComponent().appendingPathComponent("outside", isDirectory: true)
                try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
                try Data("victim".utf8).write(to: outside.appendingPathComponent("victim"))
                switch kind {
                case "blobs-link":
                    try FileManager.default.createSymbolicLink(
                        at: url.appendingPathComponent("blobs"), withDestinationURL: outside)
                case "blobs-file":
                    try Data().write(to: url.appendingPathComponent("blobs"))
                default:
                    try FileManager.default.createSymbolicLink(
                        at: url.appendingPathComponent("lock"),
                        withDestinationURL: outside.appendingPathComponent("victim"))
                }
                let before = Self.snapshot(url)
                let outsideBefore = Self.snapshot(outside)

                // Then opening is refused, and nothing is created here or there
                Self.expectRefused(url)
                #expect(Self.snapshot(url) == before)
                #expect(Self.snapshot(outside) == outsideBefore)
                #expect(!FileManager.default.fileExists(atPath: url.appendingPathComponent("index.sqlite").path))
            }
        }

        @Test("An existing empty directory with mode 0777 becomes a 0700 store")
        func widePermissionsAreNarrowed() throws {
            try DiskTest.withTemporaryDirectory { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                #expect(chmod(url.path, 0o777) == 0)
                _ = try DiskStore(directory: url)
                #expect(DiskTest.mode(url) == 0o700)
                #expect(DiskTest.mode(url.appendingPathComponent("index.sqlite")) == 0o600)
                #expect(DiskTest.mode(url.appendingPathComponent("blobs")) == 0o700)
                #expect(DiskTest.mode(url.appendingPathComponent("lock")) == 0o600)
            }
        }

        @Test("A directory holding other files is refused and nothing in it changes")
        func foreignDirectory() throws {
            try DiskTest.withTemporaryDirectory { url in
                try FileManager.default.createDirectory(
                    at: url.appendingPathComponent("photos"), withIntermediateDirectories: true)
                try Data([1, 2, 3]).write(to: url.appendingPathComponent("photos/cat.jpg"))
                try Data("hello".utf8).write(to: url.appendingPathComponent("notes.txt"))
                let before = Self.snapshot(url)
                Self.expectRefused(url)
                #expect(Self.snapshot(url) == before)
            }
        }

        @Test("Another application's SQLite database is refused byte for byte untouched", arguments: [0, 42])
        func foreignDatabase(applicationID: Int) throws {
            try DiskTest.withTemporaryDirectory { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                let path = url.appendingPathComponent("index.sqlite").path
                do {
                    let connection = try _SQLiteConnection(path: path, create: true)
                    try connection.execute(
                        """
                        PRAGMA application_id = \(applicationID);
                        CREATE TABLE entries (id INTEGER PRIMARY KEY, data TEXT);
                        INSERT INTO entries (data) VALUES ('someone else''s');
                        """)
                    connection.close()
                }
                let before = Self.snapshot(url)
                Self.expectRefused(url)
                #expect(Self.snapshot(url) == before, "no -wal, -shm, lock or blobs created; the database unchanged")
            }
        }

        @Test("A file named index.sqlite that is not a database is refused")
        func garbageIndex() throws {
            try DiskTest.withTemporaryDirectory { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                try Data(repeating: 0x41, count: 5_000).write(to: url.appendingPathComponent("index.sqlite"))
                let before = Self.snapshot(url)
                Self.expectRefused(url)
                #expect(Self.snapshot(url) == before)
            }
        }

        @Test("A database with Hoard's id but no format record is refused")
        func hoardIDWithoutMeta() throws {
            try DiskTest.withTemporaryDirectory { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                do {
                    let connection = try _SQLiteConnection(
                        path: url.appendingPathComponent("index.sqlite").path, create: true)
                    try connection.execute(
                        "PRAGMA application_id = \(Int32(bitPattern: _DiskIndex.applicationID)); CREATE TABLE t (x);")
                    connection.close()
                }
                let before = Self.snapshot(url)
                Self.expectRefused(url)
                #expect(Self.snapshot(url) == before)
            }
        }

        @Test(
            "An index emptied, cut below SQLite's header or zeroed beside the store's blobs/ and lock is storeDamaged, says what to do and is left as it was; without them it is no store",
            arguments: ["emptied", "cut", "zeroed"])
        func lostIndex(damage: String) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a closed store with a value in a file
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                    try store.set(DiskTest.bytes(1_000), for: "big", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(DiskTest.blobFiles(url).count == 1)

                // When its index is emptied, cut to 50 bytes, or replaced by 4 KiB of zeros
                let index = url.appendingPathComponent("index.sqlite")
                switch damage {
                case "emptied": #expect(truncate(index.path, 0) == 0)
                case "cut": #expect(truncate(index.path, 50) == 0)
                default: try Data(count: 4_096).write(to: index)
                }
                let before = Self.snapshot(url)

                // Then opening, creating or not, says the store is damaged and to delete
                // it, and changes nothing: the value file is neither orphaned nor deleted
                for configuration in [DiskStore.Configuration(), .init(createsStore: false)] {
                    let error = try #require(throws: HoardError.self) {
                        try DiskStore(directory: url, configuration: configuration)
                    }
                    #expect(error.code == .storeDamaged, "\(error)")
                    #expect(error.path == index.path)
                    #expect(error.message.contains("delete the store's directory (\(url.path))"), "\(error)")
                }
                #expect(Self.snapshot(url) == before)

                // And the same file in a directory without the store's blobs/ and lock is no store
                try FileManager.default.removeItem(at: url.appendingPathComponent("blobs"))
                try FileManager.default.removeItem(at: url.appendingPathComponent("lock"))
                let foreign = Self.snapshot(url)
                Self.expectRefused(url)
                #expect(Self.snapshot(url) == foreign)
            }
        }

        @Test("A store of a newer format is refused with unsupportedFormat and left as it was")
        func newerFormat() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url)
                    try store.set(Data([1]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                do {
                    let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
                    try connection.execute("UPDATE meta SET value = '99' WHERE name = 'version'")
                    connection.close()
                }
                let before = Self.snapshot(url)
                Self.expectRefused(url, code: .unsupportedFormat)
                #expect(Self.snapshot(url) == before)
            }
        }

        @Test("With createsStore off, a missing path or an empty directory is an error and stays as it was")
        func noCreation() throws {
            try DiskTest.withTemporaryDirectory { url in
                let configuration = DiskStore.Configuration(createsStore: false)
                let missing = #expect(throws: HoardError.self) {
                    try DiskStore(directory: url, configuration: configuration)
                }
                #expect(missing?.code == .notAStore)
                #expect(!FileManager.default.fileExists(atPath: url.path))
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                #expect(throws: HoardError.self) { try DiskStore(directory: url, configuration: configuration) }
                #expect(DiskTest.tree(url).isEmpty)
                // An existing store opens
                _ = try DiskStore(directory: url)
                _ = try DiskStore(directory: url, configuration: configuration)
            }
        }

        @Test("An empty directory, missing parents, and the leftovers of an interrupted creation all open")
        func creation() throws {
            try DiskTest.withTemporaryDirectory { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                let empty = try DiskStore(directory: url)
                try empty.set(Data([1]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)

                let nested = url.deletingLastPathComponent().appendingPathComponent("a/b/c/store")
                _ = try DiskStore(directory: nested)
                #expect(FileManager.default.fileExists(atPath: nested.appendingPathComponent("index.sqlite").path))

                let interrupted = url.deletingLastPathComponent().appendingPathComponent("interrupted")
                try FileManager.default.createDirectory(
                    at: interrupted.appendingPathComponent("blobs"), withIntermediateDirectories: true)
                try Data().write(to: interrupted.appendingPathComponent("lock"))
                try Data(repeating: 7, count: 300).write(
                    to: interrupted.appendingPathComponent("index.sqlite.creating"))
                try Data(repeating: 7, count: 30).write(
                    to: interrupted.appendingPathComponent("index.sqlite.creating-journal"))
                let recovered = try DiskStore(directory: interrupted)
                try recovered.set(Data([2]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try recovered.entry(for: "k", in: "ns")?.data == Data([2]))
                #expect(DiskTest.tree(interrupted).filter { $0.contains("creating") }.isEmpty)
            }
        }

        @Test("Many instances opening one new directory at once create one store")
        func concurrentCreation() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let results = await withTaskGroup(of: String.self) { group in
                    for i in 0..<8 {
                        group.addTask {
                            do {
                                let store = try DiskStore(directory: url)
                                try store.set(
                                    Data([UInt8(i)]), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                                return "ok"
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                #expect(results == Array(repeating: "ok", count: 8))
                let store = try DiskStore(directory: url)
                #expect(try store.keys(in: "ns").count == 8)
            }
        }

        @Test("An open store holds its lock shared; a downgrade from exclusive that fails throws instead")
        func lockDowngrade() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store opened alone (exclusive while opening, then shared)
                let store = try DiskStore(directory: url)
                let other = open(url.appendingPathComponent("lock").path, O_RDWR | O_CLOEXEC)
                #expect(other >= 0)
                defer { close(other) }
                // Then another open file description can share the lock, not take it exclusively
                #expect(flock(other, LOCK_EX | LOCK_NB) != 0)
                #expect(flock(other, LOCK_SH | LOCK_NB) == 0)
                withExtendedLifetime(store) {}

                // And when the downgrade itself fails (here: no descriptor to lock), it throws
                var lock = _StoreDirectory.Lock(descriptor: -1, exclusive: true)
                let error = #expect(throws: HoardError.self) { try lock.share(path: url.path) }
                #expect(error?.code == .ioFailed)
                #expect(error?.message.contains("shared") == true, "\(String(describing: error))")
            }
        }
    }
}
