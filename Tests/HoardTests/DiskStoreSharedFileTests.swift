import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// What one instance, process or damaged row may do to files that others use:
    /// a damaged row's file name never leaves `blobs/`, a second instance does not
    /// drop the first one's SQLite locks, and a store in use is not moved.
    @Suite("DiskStore: files shared with other instances and processes", .timeLimit(.minutes(3)))
    struct DiskStoreSharedFileTests {
        /// Rewrites the index through a second connection, as the damage tests do.
        static func tamper(_ url: URL, _ sql: String) throws {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            try connection.setBusyTimeout(milliseconds: 5_000)
            defer { connection.close() }
            try connection.execute(sql)
        }

        enum Operation: String, CaseIterable, Sendable {
            case removeValue, overwrite, removeAllInNamespace, removeAll, trim, batchRemove
        }

        @Test(
            "A damaged row's file name never reaches a path outside blobs/ (removals, overwrites, trims)",
            arguments: Operation.allCases)
        func damagedFileNameStaysInBlobs(operation: Operation) throws {
            try DiskTest.withTemporaryDirectory { url in
                let victim = url.deletingLastPathComponent().appendingPathComponent("victim-\(UUID().uuidString)")
                try Data("precious".utf8).write(to: victim)
                defer { try? FileManager.default.removeItem(at: victim) }
                let store = try DiskStore(directory: url)
                try store.set(DiskTest.bytes(20), for: "bad", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(20), for: "good", in: "ns", storedAt: Date(), expiresAt: nil)
                try Self.tamper(
                    url,
                    "UPDATE entries SET value = NULL, blob = '../../\(victim.lastPathComponent)' WHERE key = CAST('bad' AS BLOB)"
                )

                switch operation {
                case .removeValue: _ = try store.removeValue(for: "bad", in: "ns")
                case .overwrite:
                    try store.set(DiskTest.bytes(10), for: "bad", in: "ns", storedAt: Date(), expiresAt: nil)
                case .removeAllInNamespace: _ = try store.removeAll(in: "ns")
                case .removeAll: _ = try store.removeAll()
                case .trim: _ = try store.trim(toBytes: 0)
                case .batchRemove: try store.write([.removeValue(for: "bad", in: "ns")])
                }

                #expect(
                    FileManager.default.fileExists(atPath: victim.path),
                    "\(operation) deleted \(victim.path), a file outside the store")
                #expect(_LocalNames.isComponent("0123456789abcdef-0123456789abcdef"))
                #expect(
                    !_LocalNames.isComponent("../x") && !_LocalNames.isComponent("..") && !_LocalNames.isComponent(""))
            }
        }

        /// What a test does to the entry "copy" whose row was made to name the value
        /// file of the entry "owner".
        enum SharedFileOperation: String, CaseIterable, Sendable {
            case read, removeValue, overwriteInline, overwriteWithFile, batchRemove, removeExpired, trim
            case repairingVerify
        }

        /// A store with two spilled entries, "copy" (in `namespace`) written first, then
        /// "owner" (in "ns"), whose index is damaged so that the row of "copy" names the
        /// value file of "owner" (and, with `expiring`, has expired). Returns the file
        /// both rows name and the file "copy" named before, which no row names now.
        static func copyNamingOwnersFile(
            _ store: DiskStore, at url: URL, namespace: String = "ns", expiring: Bool = false
        ) throws -> (shared: String, former: String) {
            try store.set(DiskTest.bytes(1_000, seed: 2), for: "copy", in: namespace, storedAt: Date(), expiresAt: nil)
            try store.set(DiskTest.bytes(1_000, seed: 1), for: "owner", in: "ns", storedAt: Date(), expiresAt: nil)
            let files = try DiskStoreDamageTests.fileNames(url)
            let shared = try #require(files["owner"])
            let former = try #require(files["copy"])
            try Self.tamper(
                url,
                """
                UPDATE entries SET blob = '\(shared)'\(expiring ? ", expires_at = 1" : "")
                WHERE key = CAST('copy' AS BLOB)
                """)
            return (shared, former)
        }

        @Test(
            "Two rows naming one value file (a damaged index): reading, removing, overwriting, expiring, trimming or repairing the one it does not belong to keeps the file the other still names",
            arguments: SharedFileOperation.allCases)
        func rowsSharingAFile(operation: SharedFileOperation) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given the row of "copy" naming the value file of "owner"
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                let (shared, _) = try Self.copyNamingOwnersFile(
                    store, at: url, expiring: operation == .removeExpired)

                // When "copy" is read, removed, overwritten, expired, trimmed or repaired
                var copy: Data?
                switch operation {
                case .read:
                    #expect(try store.entry(for: "copy", in: "ns") == nil, "never the bytes of another key")
                case .removeValue: #expect(try store.removeValue(for: "copy", in: "ns"))
                case .overwriteInline, .overwriteWithFile:
                    copy = DiskTest.bytes(operation == .overwriteInline ? 10 : 500, seed: 3)
                    try store.set(copy!, for: "copy", in: "ns", storedAt: Date(), expiresAt: nil)
                case .batchRemove: try store.write([.removeValue(for: "copy", in: "ns")])
                case .removeExpired: #expect(try store.removeExpired() == 1)
                case .trim: #expect(try store.trim(toBytes: 1_000) == 1, "\"copy\" is the least recently stored")
                case .repairingVerify: #expect(try !store.verify(repairing: true).isHealthy)
                }

                // Then the file stays for "owner", which still reads its own value
                #expect(DiskTest.blobFiles(url).contains(shared), "\(operation) deleted the file \"owner\" names")
                #expect(try store.entry(for: "owner", in: "ns")?.data == DiskTest.bytes(1_000, seed: 1))
                #expect(try store.entry(for: "copy", in: "ns")?.data == copy)
            }
        }

        @Test(
            "verify() reports a row naming another entry's value file as sharedFile; repairing removes that row and keeps the file for the entry it holds",
            arguments: [true, false])
        func verifyFindsRowsSharingAFile(ownerIntact: Bool) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given the row of "copy" naming the value file of "owner", and the file
                // "copy" named before an hour old (an orphan a repair deletes)
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                let (shared, former) = try Self.copyNamingOwnersFile(store, at: url)
                let blobs = url.appendingPathComponent("blobs")
                try FileManager.default.setAttributes(
                    [.modificationDate: Date().addingTimeInterval(-3_600)],
                    ofItemAtPath: blobs.appendingPathComponent(former).path)
                if !ownerIntact {
                    // And the shared file holding neither entry's value
                    let handle = try FileHandle(forWritingTo: blobs.appendingPathComponent(shared))
                    try handle.write(contentsOf: Data(repeating: 0xEE, count: 8))
                    try handle.close()
                }

                // When it is verified, then every row the file does not belong to is
                // reported as sharing it, and nothing changes
                let report = try store.verify()
                #expect(report.entriesChecked == 2)
                let sharing = report.damage.filter { $0.reason == .sharedFile }
                let expected = ownerIntact ? ["copy"] : ["copy", "owner"]
                #expect(sharing.compactMap(\.key).sorted() == expected, "\(report)")
                for damage in sharing {
                    #expect(damage.namespace == "ns")
                    #expect(damage.detail.contains("blobs/\(shared)"), "\(damage)")
                    #expect(damage.detail.contains("2 entries"), "\(damage)")
                }
                #expect(report.damage.count == sharing.count + 1, "and the former file, an orphan: \(report)")
                #expect(DiskTest.blobFiles(url) == [former, shared].sorted())

                // When it is repaired, then those rows are gone, and the file only
                // while an intact entry still names it
                let repaired = try store.verify(repairing: true)
                #expect(repaired.unrepaired.isEmpty, "\(repaired)")
                #expect(try store.entries().map(\.key) == (ownerIntact ? ["owner"] : []))
                #expect(DiskTest.blobFiles(url) == (ownerIntact ? [shared] : []))
                let owner = try store.entry(for: "owner", in: "ns")
                #expect(owner?.data == (ownerIntact ? DiskTest.bytes(1_000, seed: 1) : nil))
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("Finding the rows that name a value file reads only the index of file names, never the entries")
        func rowsNamingAFileUseTheIndex() throws {
            try DiskTest.withTemporaryDirectory { url in
                _ = try DiskStore(directory: url)
                let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
                defer { connection.close() }
                for query in [_Query.rowsNamingFile, .sharedFiles] {
                    let plan = try connection.prepare("EXPLAIN QUERY PLAN \(query.sql)")
                    var steps: [String] = []
                    while try plan.step() { steps.append(plan.string(at: 3) ?? "") }
                    plan.reset()
                    let reads = steps.filter { $0.hasPrefix("SCAN") || $0.hasPrefix("SEARCH") }
                    #expect(reads.contains { $0.contains("entries_with_files") }, "\(query): \(steps)")
                    #expect(!reads.contains { $0.contains("entries") && !$0.contains("entries_with_files") })
                }
            }
        }

        @Test(
            "A second instance in one process keeps the first one's writes visible to other processes",
            arguments: [false, true])
        func secondInstanceKeepsSQLiteLocks(opensSecond: Bool) throws {
            try DiskTest.withTemporaryDirectory { url in
                let hoard = try DiskTest.executable(named: "hoard")
                let first = try DiskStore(directory: url)
                try first.set(Data("one".utf8), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)

                // A second instance on the same directory, in the same process
                let second = opensSecond ? try DiskStore(directory: url) : nil
                #expect(try second?.entry(for: "k", in: "ns")?.data ?? Data("one".utf8) == Data("one".utf8))

                // Another process opens the store and closes it
                let stats = try DiskTest.run(hoard, ["stats", url.path])
                #expect(stats.status == 0, "\(stats.errors)")

                // The first instance writes again; another process reads what it wrote
                try first.set(Data("two".utf8), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                let read = try DiskTest.run(hoard, ["get", url.path, "k", "-n", "ns", "--raw"])
                #expect(read.status == 0, "\(read.errors)")
                #expect(read.output == "two", "another process reads \(read.output.debugDescription)")
                withExtendedLifetime((first, second)) {}
            }
        }

        @Test("A store an earlier version left in the cache directory is not moved while an instance has it open")
        func storeInUseIsNotMoved() throws {
            try DiskTest.withTemporaryDirectory { caches in
                let legacy = caches.appendingPathComponent("legacy")
                var old: DiskStore? = try DiskStore(directory: legacy, configuration: .init(spillThreshold: 100))
                try old?.set(DiskTest.bytes(1_000), for: "big", in: "ns", storedAt: Date(), expiresAt: nil)

                // Another process opens the store by name while it is open here
                let inUse = try DiskTest.run(
                    DiskTest.childExecutable(), ["named-store", "-", "legacy"],
                    environment: ["XDG_CACHE_HOME": caches.path])
                #expect(inUse.status == 0, "\(inUse.output) \(inUse.errors)")
                #expect(inUse.output.hasPrefix("dir \(legacy.path)\n"), "it used the store where it is")

                // The open instance still reads and writes it
                #expect(try old?.entry(for: "big", in: "ns")?.data == DiskTest.bytes(1_000))
                #expect(throws: Never.self) {
                    try old?.set(DiskTest.bytes(2_000), for: "big2", in: "ns", storedAt: Date(), expiresAt: nil)
                }

                // Once nobody has it open, the next open by name moves it, values and all
                old = nil
                let moved = try DiskTest.run(
                    DiskTest.childExecutable(), ["named-store", "-", "legacy"],
                    environment: ["XDG_CACHE_HOME": caches.path])
                let movedPath = caches.appendingPathComponent("HoardCrashWriter/legacy")
                #expect(moved.output.hasPrefix("dir \(movedPath.path)\n"), "\(moved.output) \(moved.errors)")
                let store = try DiskStore(directory: movedPath)
                #expect(try store.entry(for: "big", in: "ns")?.data == DiskTest.bytes(1_000))
                #expect(try store.entry(for: "big2", in: "ns")?.data == DiskTest.bytes(2_000))
            }
        }
    }
}
