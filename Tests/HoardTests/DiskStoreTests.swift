import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    @Suite("DiskStore basics")
    struct DiskStoreTests {
        let stored = Date(timeIntervalSince1970: 1_700_000_000.5)

        @Test("Bytes round-trip with their dates, inline and in a file, and survive reopening")
        func roundTrip() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with a small spill threshold
                let small = DiskTest.bytes(100, seed: 1)
                let large = DiskTest.bytes(5_000, seed: 2)
                let expires = stored.addingTimeInterval(3_600)
                let clock = ManualClock(start: stored)
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000), clock: clock)
                    // When small and large values are stored
                    try store.set(small, for: "small", in: "ns", storedAt: stored, expiresAt: nil)
                    try store.set(large, for: "large", in: "ns", storedAt: stored, expiresAt: expires)
                    // Then they read back with their dates; the large one is a file
                    #expect(
                        try store.entry(for: "small", in: "ns")
                            == StoredEntry(data: small, storedAt: stored, expiresAt: nil))
                    #expect(
                        try store.entry(for: "large", in: "ns")
                            == StoredEntry(data: large, storedAt: stored, expiresAt: expires))
                    #expect(try store.entry(for: "missing", in: "ns") == nil)
                    #expect(DiskTest.blobFiles(url).count == 1)
                }
                // And a new instance on the directory finds both
                let reopened = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000), clock: clock)
                #expect(try reopened.entry(for: "small", in: "ns")?.data == small)
                #expect(try reopened.entry(for: "large", in: "ns")?.data == large)
                #expect(try reopened.totalUsage() == StoreUsage(count: 2, bytes: 5_100))
            }
        }

        @Test("The spill threshold is inclusive: a value of exactly that size stays inline")
        func spillThreshold() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 64))
                try store.set(DiskTest.bytes(64), for: "at", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(DiskTest.blobFiles(url).isEmpty)
                try store.set(DiskTest.bytes(65), for: "over", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(DiskTest.blobFiles(url).count == 1)
                try store.set(Data(), for: "empty", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(try store.entry(for: "empty", in: "ns")?.data == Data())
                let infos = try store.entries(in: "ns")
                #expect(infos.map(\.key) == ["at", "empty", "over"])
                #expect(infos.map(\.isInFile) == [false, false, true])
            }
        }

        @Test(
            "A value too large for a row of the index goes to a file whatever the spill threshold, and reads back intact"
        )
        func valueOverIndexLengthLimitSpills() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store that keeps values up to 1 GiB inline, on a connection whose
                // length limit (SQLite's own is 1,000,000,000) is 10,000 bytes
                let events = EventRecorder()
                var configuration = DiskStore.Configuration(spillThreshold: 1 << 30, onEvent: events.handler)
                configuration.indexLengthLimit = 10_000
                let store = try DiskStore(directory: url, configuration: configuration)
                let longKey = String(repeating: "k", count: 5_000)

                // When values over the limit are stored, alone and in a batch, and one
                // that fits only without its long key
                try store.set(DiskTest.bytes(20_000, seed: 1), for: "alone", in: "ns", storedAt: stored, expiresAt: nil)
                try store.write([
                    .set(DiskTest.bytes(10_001, seed: 2), for: "batched", in: "ns", storedAt: stored, expiresAt: nil)
                ])
                try store.set(DiskTest.bytes(6_000, seed: 3), for: longKey, in: "ns", storedAt: stored, expiresAt: nil)
                try store.set(DiskTest.bytes(8_000, seed: 4), for: "fits", in: "ns", storedAt: stored, expiresAt: nil)

                // Then the three are files, the value that fits stays inline, and all read back intact
                #expect(DiskTest.blobFiles(url).count == 3)
                let infos = try store.entries(in: "ns")
                #expect(infos.map(\.key) == ["alone", "batched", "fits", longKey])
                #expect(infos.map(\.isInFile) == [true, true, false, true])
                #expect(try store.entry(for: "alone", in: "ns")?.data == DiskTest.bytes(20_000, seed: 1))
                #expect(try store.entry(for: "batched", in: "ns")?.data == DiskTest.bytes(10_001, seed: 2))
                #expect(try store.entry(for: longKey, in: "ns")?.data == DiskTest.bytes(6_000, seed: 3))
                #expect(try store.entry(for: "fits", in: "ns")?.data == DiskTest.bytes(8_000, seed: 4))
                #expect(try store.usage(in: "ns") == StoreUsage(count: 4, bytes: 44_001))
                #expect(try store.verify().isHealthy)
                #expect(events.all.isEmpty, "\(events.all)")
            }
        }

        @Test("A value the index refuses to bind throws valueTooLarge and changes nothing: the previous value stays")
        func refusedBindChangesNothing() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a stored value, and a connection whose length limit drops below
                // what the store was opened with (so the store keeps 5,000 bytes inline)
                var configuration = DiskStore.Configuration(spillThreshold: 1 << 30)
                configuration.indexLengthLimit = 10_000
                let store = try DiskStore(directory: url, configuration: configuration)
                try store.set(DiskTest.bytes(100, seed: 1), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                store.state.withLock { $0.index?.connection.lengthLimit = 1_000 }

                // When a value over the connection's limit replaces it
                let error = #expect(throws: HoardError.self) {
                    try store.set(DiskTest.bytes(5_000, seed: 2), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                }
                // Then the write throws, naming the key, and the old value is intact
                #expect(error?.code == .valueTooLarge)
                #expect(error?.key == "k")
                #expect(error?.message.contains("too big") == true, "\(String(describing: error))")
                #expect(try store.entry(for: "k", in: "ns")?.data == DiskTest.bytes(100, seed: 1))
                // A batch with such a value is refused whole
                let batchError = #expect(throws: HoardError.self) {
                    try store.write([
                        .set(DiskTest.bytes(10, seed: 3), for: "j", in: "ns", storedAt: stored, expiresAt: nil),
                        .set(DiskTest.bytes(5_000, seed: 4), for: "k", in: "ns", storedAt: stored, expiresAt: nil),
                    ])
                }
                #expect(batchError?.code == .valueTooLarge)
                #expect(try store.keys(in: "ns") == ["k"])
                #expect(try store.entry(for: "k", in: "ns")?.data == DiskTest.bytes(100, seed: 1))
                #expect(try store.usage(in: "ns") == StoreUsage(count: 1, bytes: 100))
                #expect(DiskTest.blobFiles(url).isEmpty)
                #expect(try store.verify().isHealthy)
                // And the store goes on working
                try store.set(DiskTest.bytes(500, seed: 5), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(try store.entry(for: "k", in: "ns")?.data == DiskTest.bytes(500, seed: 5))
            }
        }

        @Test("The default spill threshold is 32 KiB")
        func defaultSpillThreshold() throws {
            #expect(DiskStore.Configuration().spillThreshold == 32_768)
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                try store.set(DiskTest.bytes(32_768), for: "a", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(DiskTest.blobFiles(url).isEmpty)
                try store.set(DiskTest.bytes(32_769), for: "b", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(DiskTest.blobFiles(url).count == 1)
            }
        }

        @Test("Overwriting moves a value between inline and file and deletes the old file")
        func overwrite() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                try store.set(DiskTest.bytes(10, seed: 1), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                try store.set(DiskTest.bytes(500, seed: 2), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                let first = DiskTest.blobFiles(url)
                #expect(first.count == 1)
                #expect(try store.entry(for: "k", in: "ns")?.data == DiskTest.bytes(500, seed: 2))
                try store.set(DiskTest.bytes(600, seed: 3), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                let second = DiskTest.blobFiles(url)
                #expect(second.count == 1)
                #expect(second != first, "a new write goes to a new file")
                #expect(try store.entry(for: "k", in: "ns")?.data == DiskTest.bytes(600, seed: 3))
                try store.set(DiskTest.bytes(20, seed: 4), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                #expect(DiskTest.blobFiles(url).isEmpty)
                #expect(try store.entry(for: "k", in: "ns")?.data == DiskTest.bytes(20, seed: 4))
                #expect(try store.usage(in: "ns") == StoreUsage(count: 1, bytes: 20))
            }
        }

        @Test("Remove, contains, keys, and usage per namespace and in total")
        func removeContainsKeysUsage() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                for (i, key) in ["b", "a", "c"].enumerated() {
                    try store.set(DiskTest.bytes(50 * (i + 1)), for: key, in: "one", storedAt: stored, expiresAt: nil)
                }
                try store.set(DiskTest.bytes(7), for: "a", in: "two", storedAt: stored, expiresAt: nil)
                #expect(try store.keys(in: "one") == ["a", "b", "c"])
                #expect(try store.keys(in: "two") == ["a"])
                #expect(try store.keys(in: "none") == [])
                #expect(try store.contains("a", in: "one"))
                #expect(try !store.contains("d", in: "one"))
                #expect(try store.usage(in: "one") == StoreUsage(count: 3, bytes: 300))
                #expect(try store.usage(in: "two") == StoreUsage(count: 1, bytes: 7))
                #expect(try store.totalUsage() == StoreUsage(count: 4, bytes: 307))
                #expect(
                    try store.namespaces() == [
                        "one": StoreUsage(count: 3, bytes: 300), "two": StoreUsage(count: 1, bytes: 7),
                    ])

                #expect(try store.removeValue(for: "c", in: "one"))  // the one in a file
                #expect(try !store.removeValue(for: "c", in: "one"))
                #expect(DiskTest.blobFiles(url).isEmpty)
                #expect(try store.entry(for: "c", in: "one") == nil)
                #expect(try store.usage(in: "one") == StoreUsage(count: 2, bytes: 150))
            }
        }

        @Test("Clearing one namespace leaves the others untouched")
        func namespacesIsolate() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                for namespace in ["users", "images", "users2", "user"] {
                    try store.set(DiskTest.bytes(10), for: "k", in: namespace, storedAt: stored, expiresAt: nil)
                    try store.set(DiskTest.bytes(200), for: "big", in: namespace, storedAt: stored, expiresAt: nil)
                }
                #expect(try store.removeAll(in: "users") == 2)
                #expect(try store.entry(for: "k", in: "users") == nil)
                #expect(try store.entry(for: "big", in: "users") == nil)
                for namespace in ["images", "users2", "user"] {
                    #expect(try store.entry(for: "k", in: namespace)?.data == DiskTest.bytes(10))
                    #expect(try store.entry(for: "big", in: namespace)?.data == DiskTest.bytes(200))
                }
                #expect(DiskTest.blobFiles(url).count == 3)
                #expect(try store.usage(in: "users") == StoreUsage())
                #expect(try store.removeAll() == 6)
                #expect(try store.totalUsage() == StoreUsage())
                #expect(DiskTest.blobFiles(url).isEmpty)
            }
        }

        @Test("A batch applies in order in one transaction; a refused batch changes nothing")
        func batches() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(byteLimit: 10_000, spillThreshold: 100))
                try store.set(DiskTest.bytes(10), for: "gone", in: "ns", storedAt: stored, expiresAt: nil)
                try store.set(DiskTest.bytes(10), for: "x", in: "other", storedAt: stored, expiresAt: nil)
                try store.write([
                    .set(DiskTest.bytes(20, seed: 1), for: "a", in: "ns", storedAt: stored, expiresAt: nil),
                    .set(DiskTest.bytes(300, seed: 2), for: "b", in: "ns", storedAt: stored, expiresAt: nil),
                    .set(DiskTest.bytes(400, seed: 3), for: "b", in: "ns", storedAt: stored, expiresAt: nil),
                    .removeValue(for: "gone", in: "ns"),
                    .removeAll(in: "other"),
                    .set(DiskTest.bytes(5, seed: 4), for: "y", in: "other", storedAt: stored, expiresAt: nil),
                ])
                #expect(try store.keys(in: "ns") == ["a", "b"])
                #expect(try store.entry(for: "b", in: "ns")?.data == DiskTest.bytes(400, seed: 3))
                #expect(try store.keys(in: "other") == ["y"])
                #expect(DiskTest.blobFiles(url).count == 1, "the first file for b is deleted")

                // When a batch holds a value over the byte limit, nothing of it is applied
                #expect(throws: HoardError.self) {
                    try store.write([
                        .set(DiskTest.bytes(10, seed: 9), for: "a", in: "ns", storedAt: stored, expiresAt: nil),
                        .set(DiskTest.bytes(500), for: "c", in: "ns", storedAt: stored, expiresAt: nil),
                        .set(DiskTest.bytes(10_001), for: "huge", in: "ns", storedAt: stored, expiresAt: nil),
                    ])
                }
                #expect(try store.entry(for: "a", in: "ns")?.data == DiskTest.bytes(20, seed: 1))
                #expect(try store.entry(for: "c", in: "ns") == nil)
                #expect(DiskTest.blobFiles(url).count == 1, "files written for the refused batch are deleted")
            }
        }

        struct User: Codable, Sendable, Equatable {
            var name: String
            var joined: Date
        }

        @Test("The typed face: Codable, String and Data values, CacheKey keys, the default namespace")
        func typedFace() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: stored)
                let store = try DiskStore(directory: url, clock: clock)
                let user = User(name: "Ada", joined: Date(timeIntervalSince1970: 1_000_000.25))
                let id = UUID()
                try store.set(user, for: id, in: "users")
                try store.set("hello", for: 42)
                try store.set(Data([1, 2, 3]), for: "bytes", expires: .seconds(60))

                #expect(try store.value(for: id, as: User.self, in: "users") == user)
                let name: String? = try store.value(for: 42)
                #expect(name == "hello")
                #expect(try store.entry(for: "42", in: DiskStore.defaultNamespace)?.data == Data("hello".utf8))
                let entry = try #require(try store.entry(for: "bytes", as: Data.self))
                #expect(entry.value == Data([1, 2, 3]))
                #expect(entry.storedAt == stored)
                #expect(entry.expiresAt == stored.addingTimeInterval(60))
                #expect(try store.contains(id, in: "users"))
                #expect(try store.keys(in: "users") == [id.uuidString])
                #expect(try store.removeValue(for: id, in: "users"))
                #expect(try store.value(for: id, as: User.self, in: "users") == nil)
            }
        }

        @Test("A store is a directory of owner-only files: 0700 directories, 0600 files")
        func layoutAndPermissions() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                try store.set(DiskTest.bytes(100), for: "k", in: "ns", storedAt: stored, expiresAt: nil)
                let tree = DiskTest.tree(url)
                #expect(tree.contains("index.sqlite"))
                #expect(tree.contains("index.sqlite-wal"))
                #expect(tree.contains("blobs"))
                #expect(tree.contains("lock"))
                #expect(DiskTest.mode(url) == 0o700)
                #expect(DiskTest.mode(url.appendingPathComponent("blobs")) == 0o700)
                for name in tree where name != "blobs" {
                    #expect(DiskTest.mode(url.appendingPathComponent(name)) == 0o600, "\(name)")
                }
                let header = try Data(contentsOf: url.appendingPathComponent("index.sqlite")).prefix(100)
                #expect(header.prefix(16) == Data("SQLite format 3\0".utf8))
                #expect(Array(header[68..<72]) == Array("HORD".utf8), "the application id marks it as Hoard's")
            }
        }

        @Test("The default location is the program's folder in the user's cache directory, named after the store")
        func defaultLocation() throws {
            #expect(DiskStore.programFolderName == "HoardPackageTests.xctest")
            let expected = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
                .appendingPathComponent("HoardPackageTests.xctest").appendingPathComponent("com.example.hoard-tests")
            #expect(
                try DiskStore.defaultDirectory(named: "com.example.hoard-tests").standardizedFileURL.path
                    == expected.standardizedFileURL.path)
            if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                #expect(expected.path.hasPrefix(xdg))
            } else {
                #expect(
                    expected.path.hasSuffix("/.cache/HoardPackageTests.xctest/com.example.hoard-tests")
                        || expected.path.contains("/Library/Caches/"))
            }
            for bad in ["", ".", "..", "a/b", "nul\0", String(repeating: "x", count: 256)] {
                let error = try #require(throws: HoardError.self) { try DiskStore.defaultDirectory(named: bad) }
                #expect(error.code == .invalidName, "\(error)")
                #expect(throws: HoardError.self) { try DiskStore(named: bad) }
            }
        }

        @Test("Out-of-range settings are refused")
        func invalidConfiguration() throws {
            let bad: [DiskStore.Configuration] = [
                .init(byteLimit: 0), .init(countLimit: -1), .init(lowWaterMark: 0), .init(lowWaterMark: 1.5),
                .init(spillThreshold: -1), .init(busyTimeout: -1), .init(accessFlushCount: 0),
            ]
            try DiskTest.withTemporaryDirectory { url in
                for configuration in bad {
                    let error = #expect(throws: HoardError.self) {
                        try DiskStore(directory: url, configuration: configuration)
                    }
                    #expect(error?.code == .invalidConfiguration)
                }
                #expect(
                    !FileManager.default.fileExists(atPath: url.path), "nothing is created for a refused configuration")
            }
        }

        @Test("A finite busy timeout beyond what SQLite takes (1e17 seconds) opens a working store")
        func largestBusyTimeout() async {
            await #expect(processExitsWith: .success) {
                try DiskTest.withTemporaryDirectory { url in
                    let store = try DiskStore(directory: url, configuration: .init(busyTimeout: 1e17))
                    try store.set(Data([1]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                    try #require(try store.entry(for: "k", in: "ns")?.data == Data([1]))
                }
            }
        }
    }
}
