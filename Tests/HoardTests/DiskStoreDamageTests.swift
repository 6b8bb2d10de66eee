import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// Damage is made by hand: files deleted or cut short, rows rewritten with SQL
    /// through a second connection (the internal `_SQLiteConnection`).
    @Suite("DiskStore with damaged data")
    struct DiskStoreDamageTests {
        static func tamper(_ url: URL, _ sql: String) throws {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            try connection.setBusyTimeout(milliseconds: 5_000)
            defer { connection.close() }
            try connection.execute(sql)
        }

        static func blobPath(_ url: URL) throws -> URL {
            let name = try #require(DiskTest.blobFiles(url).first)
            return url.appendingPathComponent("blobs").appendingPathComponent(name)
        }

        @Test(
            "An index cut short while the store is open: reads return intact values or throw, never crash",
            arguments: [0, 64 << 10])
        func indexTruncatedWhileOpen(size: Int) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given 2,000 entries, checkpointed into the index file, some of them read
                let store = try DiskStore(directory: url)
                for i in 0..<2_000 {
                    try store.set(
                        DiskTest.bytes(500, seed: i), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                try Self.tamper(url, "PRAGMA wal_checkpoint(TRUNCATE)")
                for i in stride(from: 0, to: 2_000, by: 37) { _ = try store.entry(for: "k\(i)", in: "ns") }

                // When another program cuts the index short (a memory-mapped index
                // would make the next read of a page past the end a SIGBUS)
                let path = url.appendingPathComponent("index.sqlite").path
                #expect(truncate(path, off_t(size)) == 0)

                // Then each read returns the value stored, misses, or throws
                var thrown = 0
                for i in stride(from: 0, to: 2_000, by: 7) {
                    do {
                        if let entry = try store.entry(for: "k\(i)", in: "ns") {
                            #expect(entry.data == DiskTest.bytes(500, seed: i))
                        }
                    } catch {
                        thrown += 1
                    }
                }
                #expect(thrown > 0, "the damage is seen")
            }
        }

        @Test("A missing value file is a miss; the entry is removed and reported with namespace, key and reason")
        func missingFile() throws {
            try DiskTest.withTemporaryDirectory { url in
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))
                try store.set(DiskTest.bytes(1_000), for: "photo", in: "images", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(10), for: "other", in: "images", storedAt: Date(), expiresAt: nil)
                try FileManager.default.removeItem(at: Self.blobPath(url))

                #expect(try store.entry(for: "photo", in: "images") == nil)
                #expect(events.damage.count == 1)
                let damage = try #require(events.damage.first)
                #expect(damage.namespace == "images")
                #expect(damage.key == "photo")
                #expect(damage.reason == .missingFile)
                #expect(try !store.contains("photo", in: "images"))
                #expect(try store.usage(in: "images") == StoreUsage(count: 1, bytes: 10))
                #expect(try store.entry(for: "photo", in: "images") == nil)
                #expect(events.damage.count == 1, "reported once")
                #expect(try store.entry(for: "other", in: "images")?.data == DiskTest.bytes(10))
            }
        }

        @Test(
            "A value file replaced by a symbolic link is never followed: verify() reports it, a read is a miss that removes the link only"
        )
        func symlinkedValueFile() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a spilled value whose file is replaced by a link to a file outside
                // the store with the very same bytes
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))
                try store.set(DiskTest.bytes(1_000), for: "photo", in: "images", storedAt: Date(), expiresAt: nil)
                let path = try Self.blobPath(url)
                let outside = url.deletingLastPathComponent().appendingPathComponent("outside")
                try FileManager.default.moveItem(at: path, to: outside)
                try FileManager.default.createSymbolicLink(at: path, withDestinationURL: outside)

                // Then verify() names it, and a read neither follows nor returns it
                let report = try store.verify()
                #expect(report.damage.map(\.key) == ["photo"])
                #expect(report.damage.first?.detail.contains("not a regular file") == true)
                #expect(try store.entry(for: "photo", in: "images") == nil)
                #expect(events.damage.map(\.reason) == [.missingFile])
                #expect(try !store.contains("photo", in: "images"))
                #expect(DiskTest.blobFiles(url).isEmpty, "the link is removed")
                #expect(try Data(contentsOf: outside) == DiskTest.bytes(1_000), "what it pointed to is untouched")
            }
        }

        @Test("A value file cut short or grown is a miss, removed and reported", arguments: [500, 1_001, 0])
        func wrongSizeFile(newSize: Int) throws {
            try DiskTest.withTemporaryDirectory { url in
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))
                try store.set(DiskTest.bytes(1_000), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                let path = try Self.blobPath(url)
                #expect(truncate(path.path, off_t(newSize)) == 0)

                #expect(try store.entry(for: "k", in: "ns") == nil)
                #expect(events.damage.map(\.reason) == [.fileSizeMismatch])
                #expect(events.damage.first?.key == "k")
                #expect(DiskTest.blobFiles(url).isEmpty, "the damaged file is deleted with its entry")
                #expect(try store.totalUsage() == StoreUsage())
            }
        }

        static let malformations = [
            "UPDATE entries SET size = 'many' WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET size = size + 5 WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET stored_at = 'yesterday' WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET expires_at = x'00' WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET value = NULL WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET blob = '0123456789abcdef-0123456789abcdef' WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET value = 'text, not bytes' WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET value = NULL, blob = '../../victim' WHERE key = CAST('bad' AS BLOB)",
            "UPDATE entries SET value = NULL, blob = '/etc/passwd' WHERE key = CAST('bad' AS BLOB)",
        ]

        @Test(
            "A malformed row is a miss, removed and reported; no row can point outside the store",
            arguments: malformations)
        func malformedRow(sql: String) throws {
            try DiskTest.withTemporaryDirectory { url in
                let victim = url.deletingLastPathComponent().appendingPathComponent("victim")
                try Data("precious".utf8).write(to: victim)
                let events = EventRecorder()
                let store = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))
                try store.set(DiskTest.bytes(20), for: "bad", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(30), for: "good", in: "ns", storedAt: Date(), expiresAt: nil)
                try Self.tamper(url, sql)

                // Then the read is a miss, nothing crashes, and the report names the key
                #expect(try store.entry(for: "bad", in: "ns") == nil)
                #expect(events.damage.map(\.reason) == [.malformedRow])
                #expect(events.damage.first?.key == "bad")
                #expect(events.damage.first?.namespace == "ns")
                #expect(try store.keys(in: "ns") == ["good"])
                #expect(try store.entry(for: "good", in: "ns")?.data == DiskTest.bytes(30))
                // And nothing outside the store was touched
                #expect(try Data(contentsOf: victim) == Data("precious".utf8))
            }
        }

        struct User: Codable, Sendable, Equatable {
            var name: String
        }

        @Test("Intact bytes that do not decode are a miss and a report, never thrown, and the entry stays")
        func undecodable() throws {
            try DiskTest.withTemporaryDirectory { url in
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))
                try store.set(
                    Data("{\"nom\": 1}".utf8), for: "old-format", in: "users", storedAt: Date(), expiresAt: nil)
                try store.set(Data([0xFF, 0xFE]), for: "not-utf8", in: "text", storedAt: Date(), expiresAt: nil)
                try store.set(
                    Data(repeating: 0xC3, count: 500), for: "big", in: "users", storedAt: Date(), expiresAt: nil)
                try store.set(User(name: "Ada"), for: "fine", in: "users")
                try store.set("a string", for: "typed", in: "users")

                #expect(try store.value(for: "old-format", as: User.self, in: "users") == nil)
                #expect(try store.value(for: "not-utf8", as: String.self, in: "text") == nil)
                #expect(try store.value(for: "big", as: User.self, in: "users") == nil)
                #expect(try store.value(for: "fine", as: User.self, in: "users") == User(name: "Ada"))
                #expect(try store.value(for: "typed", as: Int.self, in: "users") == nil)

                // Reported, not removed
                #expect(events.undecodable.map(\.reason) == Array(repeating: .undecodableValue, count: 4))
                #expect(events.undecodable.map(\.key) == ["old-format", "not-utf8", "big", "typed"])
                #expect(events.undecodable.map(\.namespace) == ["users", "text", "users", "users"])
                #expect(events.damage.isEmpty)
                #expect(try store.keys(in: "users") == ["big", "fine", "old-format", "typed"])
                #expect(try store.keys(in: "text") == ["not-utf8"])
                #expect(DiskTest.blobFiles(url).count == 1)

                // And each still reads back as what it is
                #expect(try store.entry(for: "old-format", in: "users")?.data == Data("{\"nom\": 1}".utf8))
                #expect(try store.entry(for: "not-utf8", in: "text")?.data == Data([0xFF, 0xFE]))
                #expect(try store.entry(for: "big", in: "users")?.data == Data(repeating: 0xC3, count: 500))
                #expect(try store.value(for: "typed", as: String.self, in: "users") == "a string")
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("verify() reports every damaged entry and orphan without changing anything; repairing removes them")
        func verifyAndRepair() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with one of each kind of damage
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                for key in ["missing", "short", "fine-file"] {
                    try store.set(DiskTest.bytes(1_000), for: key, in: "files", storedAt: Date(), expiresAt: nil)
                }
                try store.set(DiskTest.bytes(10), for: "malformed", in: "rows", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(10), for: "fine", in: "rows", storedAt: Date(), expiresAt: nil)
                let names = try store.entries(in: "files")
                #expect(names.count == 3)
                try Self.tamper(url, "UPDATE entries SET size = -1 WHERE key = CAST('malformed' AS BLOB)")
                try Self.tamper(
                    url, Self.foldTotals + "UPDATE namespaces SET count = 99 WHERE namespace = CAST('rows' AS BLOB)")
                let files = try Self.fileNames(url)
                try FileManager.default.removeItem(at: url.appendingPathComponent("blobs/\(files["missing"]!)"))
                #expect(truncate(url.appendingPathComponent("blobs/\(files["short"]!)").path, 10) == 0)
                let blobs = url.appendingPathComponent("blobs")
                let oldOrphan = blobs.appendingPathComponent("00000000000000aa-00000000000000bb")
                let newOrphan = blobs.appendingPathComponent("00000000000000cc-00000000000000dd.tmp")
                try Data([1, 2, 3]).write(to: oldOrphan)
                try Data([4]).write(to: newOrphan)
                try FileManager.default.setAttributes(
                    [.modificationDate: Date().addingTimeInterval(-3_600)], ofItemAtPath: oldOrphan.path)

                // When it is verified
                var progress: [DiskStore.Progress] = []
                let report = try store.verify(repairing: false, progress: { progress.append($0) })

                // Then every problem is listed with its reason and key
                #expect(report.entriesChecked == 5)
                #expect(!report.isHealthy)
                let found = Set(report.damage.map { "\($0.reason) \($0.key ?? "-")" })
                #expect(
                    found == [
                        "missingFile missing", "fileSizeMismatch short", "malformedRow malformed", "wrongTotals -",
                        "orphanedFile -", "temporaryFile -",
                    ])
                #expect(report.damage.filter { $0.reason == .orphanedFile }.count == 1)
                #expect(report.unrepaired == report.damage, "nothing is repaired by a check alone")
                #expect(progress.last?.completed == 5)
                // And nothing was changed
                #expect(try store.entries().count == 5)
                #expect(FileManager.default.fileExists(atPath: oldOrphan.path))

                // When it is repaired
                let repaired = try store.verify(repairing: true)
                #expect(repaired.damage.count == report.damage.count)
                // Every problem is repaired; the young temporary file, which is no damage, is kept
                #expect(repaired.unrepaired.map(\.reason) == [.temporaryFile])
                #expect(repaired.unrepaired.first?.detail.contains("00000000000000cc-00000000000000dd.tmp") == true)
                #expect(
                    repaired.description.hasSuffix(
                        "5 problems (repaired); 1 temporary file of interrupted writes (0 deleted, 1 kept)"),
                    "\(repaired)")
                #expect(try store.entries().map(\.key).sorted() == ["fine", "fine-file"])
                #expect(!FileManager.default.fileExists(atPath: oldOrphan.path))
                #expect(FileManager.default.fileExists(atPath: newOrphan.path), "a young file may be a write in flight")
                #expect(try store.usage(in: "rows") == StoreUsage(count: 1, bytes: 10))

                // Then only the young temporary file is left to report
                let after = try store.verify()
                #expect(after.damage.map(\.reason) == [.temporaryFile])
                #expect(after.isHealthy)
                try FileManager.default.removeItem(at: newOrphan)
                #expect(try store.verify().isHealthy)
                #expect(try store.entry(for: "fine-file", in: "files")?.data == DiskTest.bytes(1_000))
            }
        }

        @Test("An SQLite library older than 3.24.0 is refused with a message naming both versions")
        func sqliteVersion() throws {
            let refused = #expect(throws: HoardError.self) {
                try _SQLiteConnection.checkVersion(3_022_000, path: "/tmp/index.sqlite")
            }
            #expect(refused?.code == .invalidConfiguration)
            #expect(
                refused?.message.contains("version 3.22.0; Hoard's disk store needs SQLite 3.24.0 or later") == true,
                "\(String(describing: refused))")
            try _SQLiteConnection.checkVersion(3_024_000, path: "/tmp/index.sqlite")
            try _SQLiteConnection.checkVersion(3_031_001, path: "/tmp/index.sqlite")
        }

        @Test(
            "No statement of the store needs an SQLite newer than 3.24: no FULL OUTER or RIGHT JOIN (3.39), no RETURNING or DROP COLUMN (3.35)"
        )
        func noStatementNewerThanMinimum() {
            let statements = _Query.allCases.map { ("\($0)", $0.sql) } + [("migration", _DiskIndex.moveAccessTimesSQL)]
            for (query, sql) in statements {
                let sql = sql.uppercased()
                for feature in ["FULL OUTER JOIN", "RIGHT JOIN", "RETURNING", "DROP COLUMN"] {
                    #expect(!sql.contains(feature), "\(query) uses \(feature)")
                }
            }
        }

        @Test("verify finds wrong totals both ways: a namespace without a totals row, a totals row without entries")
        func wrongTotalsBothWays() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                try store.set(DiskTest.bytes(10), for: "k", in: "kept", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(20), for: "k", in: "untotalled", storedAt: Date(), expiresAt: nil)
                try Self.tamper(
                    url,
                    """
                    \(Self.foldTotals)
                    DELETE FROM namespaces WHERE namespace = CAST('untotalled' AS BLOB);
                    INSERT INTO namespaces (namespace, count, bytes) VALUES (CAST('ghost' AS BLOB), 3, 30);
                    """)
                let report = try store.verify(repairing: true)
                let wrong = report.damage.filter { $0.reason == .wrongTotals }.compactMap(\.namespace).sorted()
                #expect(wrong == ["ghost", "untotalled"], "\(report.damage)")
                #expect(try store.verify().isHealthy)
                #expect(try store.usage(in: "untotalled") == StoreUsage(count: 1, bytes: 20))
                #expect(try store.namespaces().keys.sorted() == ["kept", "untotalled"])
            }
        }

        @Test("verify finds a totals watermark above the last row; repairing brings it down and new entries count")
        func watermarkAboveTheLastRow() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store whose watermark was moved above its last row
                let store = try DiskStore(directory: url)
                try store.set(DiskTest.bytes(10), for: "a", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(20), for: "b", in: "ns", storedAt: Date(), expiresAt: nil)
                try Self.tamper(url, "\(Self.foldTotals)UPDATE totals_watermark SET id = 1000;")

                // When it is verified, then the watermark is reported, and not repaired
                let report = try store.verify()
                let wrong = report.damage.filter { $0.reason == .wrongTotals }
                #expect(wrong.count == 1, "\(report.damage)")
                #expect(wrong.first?.namespace == nil)
                #expect(wrong.first?.detail.contains("1000") == true)
                #expect(wrong.first?.isRepaired == false)
                #expect(try DiskStoreTotalsTests.watermark(url) == 1000)

                // And a repairing verify brings it down to the last row
                #expect(try store.verify(repairing: true).damage.map(\.isRepaired) == [true])
                #expect(try DiskStoreTotalsTests.watermark(url) == 2)
                #expect(try store.verify().isHealthy)
                // So that the next entry is counted
                try store.set(DiskTest.bytes(5), for: "c", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try store.usage(in: "ns") == StoreUsage(count: 3, bytes: 35))
                #expect(try store.verify().isHealthy)
            }
        }

        @Test(
            "verify finds a totals watermark table without its one row; repairing makes it anew and new entries count",
            arguments: ["DELETE FROM totals_watermark;", "INSERT INTO totals_watermark (id) VALUES (0);"])
        func watermarkRowMissingOrDoubled(damage: String) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store whose totals count every entry, and whose watermark row is
                // gone, or has a second row beside it
                let store = try DiskStore(directory: url)
                try store.set(DiskTest.bytes(10), for: "a", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(20), for: "b", in: "ns", storedAt: Date(), expiresAt: nil)
                try Self.tamper(url, "\(Self.foldTotals)\(damage)")

                // When it is verified, then the watermark is reported, and not repaired
                let report = try store.verify()
                let wrong = report.damage.filter { $0.reason == .wrongTotals }
                #expect(wrong.count == 1, "\(report.damage)")
                #expect(wrong.first?.namespace == nil)
                #expect(wrong.first?.isRepaired == false)

                // And a repairing verify makes one row anew, at the last row
                #expect(try store.verify(repairing: true).damage.map(\.isRepaired) == [true])
                let tables = try Self.watermarkRows(url)
                #expect(tables == [2])
                #expect(try store.verify().isHealthy)
                // So that the next entry is counted, and the removal of a counted one
                try store.set(DiskTest.bytes(5), for: "c", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try store.removeValue(for: "a", in: "ns"))
                #expect(try store.usage(in: "ns") == StoreUsage(count: 2, bytes: 25))
                #expect(try store.verify().isHealthy)
            }
        }

        /// Every row of `totals_watermark`, read through a connection of its own.
        static func watermarkRows(_ url: URL) throws -> [Int64] {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            defer { connection.close() }
            let statement = try connection.prepare("SELECT id FROM totals_watermark")
            defer { statement.reset() }
            var rows: [Int64] = []
            while try statement.step() { rows.append(statement.int64(at: 0)) }
            return rows
        }

        /// Folds the entries above the watermark into the `namespaces` table, as the
        /// store does every ``_DiskIndex/foldInterval`` writes, so that a test can
        /// then change the table's rows.
        static let foldTotals = "\(_Query.foldTotals.sql);\n\(_Query.moveWatermark.sql);\n"

        /// Key → file name of every entry in a file.
        static func fileNames(_ url: URL) throws -> [String: String] {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            defer { connection.close() }
            let statement = try connection.prepare("SELECT CAST(key AS TEXT), blob FROM entries WHERE blob IS NOT NULL")
            var result: [String: String] = [:]
            while try statement.step() {
                result[statement.string(at: 0) ?? "?"] = statement.string(at: 1)
            }
            statement.reset()
            return result
        }

        @Test("Opening collects temporary files and unreferenced value files, only when no one else has the store open")
        func orphansCollectedAtOpen() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                    try store.set(DiskTest.bytes(100), for: "kept", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                let blobs = url.appendingPathComponent("blobs")
                let kept = DiskTest.blobFiles(url)
                let events = EventRecorder()
                do {
                    // While another instance has it open, nothing is collected
                    let holder = try DiskStore(directory: url)
                    try Data(count: 100).write(to: blobs.appendingPathComponent("1111111111111111-2222222222222222"))
                    try Data(count: 50).write(to: blobs.appendingPathComponent("3333333333333333-4444444444444444.tmp"))
                    try Data("mine".utf8).write(to: blobs.appendingPathComponent("notes.txt"))
                    let second = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))
                    #expect(DiskTest.blobFiles(url).count == 4)
                    #expect(events.all.isEmpty)
                    #expect(
                        Set(try second.verify().damage.map(\.reason)) == [.orphanedFile, .temporaryFile])
                    _ = holder
                }

                // Alone, it collects the two orphans and leaves files it did not write
                let alone = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))
                #expect(DiskTest.blobFiles(url) == (kept + ["notes.txt"]).sorted())
                let collected = events.all.compactMap {
                    if case .collectedOrphans(let files, let bytes) = $0 { [files, bytes] } else { nil }
                }
                #expect(collected == [[2, 150]])
                #expect(try alone.entry(for: "kept", in: "ns")?.data == DiskTest.bytes(100))
            }
        }

        @Test(
            "An orphan that cannot be deleted (a directory) is reported and left, never entered; opening and verify go on"
        )
        func undeletableOrphan() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url)
                    try store.set(Data([1]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                // Given a directory named like a temporary value file, with a file in it,
                // and a link named like a value file to a file outside the store
                let blobs = url.appendingPathComponent("blobs")
                let directory = blobs.appendingPathComponent("0123456789abcdef-0123456789abcdef.tmp")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
                let inside = directory.appendingPathComponent("0123456789abcdef-0123456789abcdef")
                try Data([2]).write(to: inside)
                let outside = url.deletingLastPathComponent().appendingPathComponent("outside")
                try Data([3]).write(to: outside)
                try FileManager.default.createSymbolicLink(
                    at: blobs.appendingPathComponent("00000000000000aa-00000000000000bb"), withDestinationURL: outside)

                // When the store is opened alone
                let events = EventRecorder()
                let store = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))

                // Then the link is deleted (not what it points to), the directory is left
                // as it was and reported, and the store works
                #expect(try store.entry(for: "k", in: "ns")?.data == Data([1]))
                #expect(DiskTest.blobFiles(url) == ["0123456789abcdef-0123456789abcdef.tmp"])
                #expect(try Data(contentsOf: inside) == Data([2]))
                #expect(try Data(contentsOf: outside) == Data([3]))
                let collected = events.all.compactMap {
                    if case .collectedOrphans(let files, let bytes) = $0 { [files, bytes] } else { nil }
                }
                #expect(collected == [[1, 0]])
                #expect(events.failures.count == 1)
                #expect(
                    events.failures.first?.contains("delete an orphaned file at open") == true, "\(events.failures)")

                // And verify reports it; repairing says it could not delete it, reports
                // the failure and finishes
                try FileManager.default.setAttributes(
                    [.modificationDate: Date().addingTimeInterval(-3_600)], ofItemAtPath: directory.path)
                let report = try store.verify(repairing: true)
                #expect(report.entriesChecked == 1)
                #expect(report.damage.map(\.reason) == [.temporaryFile])
                #expect(report.damage.first?.detail.contains("could not be deleted") == true, "\(report.damage)")
                #expect(events.failures.count == 2)
                #expect(try Data(contentsOf: inside) == Data([2]))
            }
        }

        @Test(
            "A damaged index database never crashes: open or reads throw, or verify reports it",
            arguments: [4_096, 40_000])
        func damagedIndex(from offset: Int) throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url)
                    for i in 0..<300 {
                        try store.set(
                            DiskTest.bytes(200, seed: i), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                    }
                }
                // Overwrite everything from `offset` on with garbage
                let index = url.appendingPathComponent("index.sqlite")
                var bytes = try Data(contentsOf: index)
                #expect(bytes.count > offset + 4_096)
                for i in offset..<bytes.count { bytes[i] = UInt8(truncatingIfNeeded: i &* 131) }
                try bytes.write(to: index)

                var outcomes: [String] = []
                do {
                    let store = try DiskStore(directory: url)
                    do {
                        for i in 0..<300 { _ = try store.entry(for: "k\(i)", in: "ns") }
                        outcomes.append("read")
                    } catch {
                        outcomes.append("read threw \((error as? HoardError)?.code.rawValue ?? "\(error)")")
                    }
                    let report = try store.verify()
                    outcomes.append(
                        report.damage.contains { $0.reason == .damagedIndex } ? "verify reported" : "verify missed it")
                } catch {
                    outcomes.append("threw \((error as? HoardError)?.code.rawValue ?? "\(error)")")
                }
                let acceptable: [[String]] = [
                    ["threw storeDamaged"], ["read threw storeDamaged", "verify reported"],
                    ["read", "verify reported"],
                ]
                #expect(acceptable.contains(outcomes), "\(outcomes)")
            }
        }
    }
}
