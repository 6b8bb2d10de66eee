import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// Values changed on disk behind the store's back (bits flipped in a value file,
    /// inline bytes or a key rewritten with SQL), and stores of format version 1.
    @Suite("DiskStore checksums and format migration")
    struct DiskStoreChecksumTests {
        static func tamper(_ url: URL, _ sql: String) throws {
            try DiskStoreDamageTests.tamper(url, sql)
        }

        /// The single value in `blobs/`.
        static func onlyFile(_ url: URL) throws -> URL {
            let names = DiskTest.blobFiles(url)
            try #require(names.count == 1)
            return url.appendingPathComponent("blobs").appendingPathComponent(names[0])
        }

        static func flipBit(in file: URL, at offset: Int) throws {
            var bytes = try Data(contentsOf: file)
            bytes[offset] ^= 0x04
            try bytes.write(to: file)
        }

        /// What `meta` records as the format version.
        static func formatVersion(_ url: URL) throws -> String? {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            defer { connection.close() }
            let statement = try connection.prepare("SELECT value FROM meta WHERE name = 'version'")
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return statement.string(at: 0)
        }

        /// Whether the store's index database has an index named `name`.
        static func hasIndex(_ name: String, _ url: URL) throws -> Bool {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            defer { connection.close() }
            let statement = try connection.prepare(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = '\(name)'")
            defer { statement.reset() }
            return try statement.step() && statement.int64(at: 0) > 0
        }

        @Test("A flipped bit in a value file is reported by verify(), then a miss: removed, reported, never returned")
        func flippedBitInFile() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a spilled value and an inline one, and one bit flipped in the file
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))
                try store.set(DiskTest.bytes(1_000), for: "photo", in: "images", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(50), for: "note", in: "images", storedAt: Date(), expiresAt: nil)
                try Self.flipBit(in: Self.onlyFile(url), at: 517)

                // Then verify() names it and changes nothing
                let report = try store.verify()
                #expect(report.damage.map(\.reason) == [.checksumMismatch])
                #expect(report.damage.first?.key == "photo")
                #expect(DiskTest.blobFiles(url).count == 1)

                // And a read is a miss that removes it, reported once
                #expect(try store.entry(for: "photo", in: "images") == nil)
                #expect(events.damage.map(\.reason) == [.checksumMismatch])
                #expect(events.damage.first?.key == "photo")
                #expect(DiskTest.blobFiles(url).isEmpty, "the damaged file is deleted with its entry")
                #expect(try store.entry(for: "photo", in: "images") == nil)
                #expect(events.damage.count == 1)
                #expect(try store.entry(for: "note", in: "images")?.data == DiskTest.bytes(50))
                #expect(try store.verify().isHealthy)
            }
        }

        @Test(
            "Inline bytes changed in the index are reported by verify(), then a miss: removed, reported, never returned"
        )
        func changedInlineBytes() throws {
            try DiskTest.withTemporaryDirectory { url in
                let events = EventRecorder()
                let store = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))
                try store.set(Data("hello, world".utf8), for: "greeting", in: "text", storedAt: Date(), expiresAt: nil)
                try store.set(Data("intact".utf8), for: "other", in: "text", storedAt: Date(), expiresAt: nil)
                // Same length, one letter changed: only the checksum can tell
                try Self.tamper(
                    url, "UPDATE entries SET value = CAST('hello, wOrld' AS BLOB) WHERE key = CAST('greeting' AS BLOB)")

                let report = try store.verify()
                #expect(report.damage.map(\.reason) == [.checksumMismatch])
                #expect(report.damage.first?.key == "greeting")
                #expect(try store.entry(for: "greeting", in: "text") == nil)
                #expect(events.damage.map(\.reason) == [.checksumMismatch])
                #expect(try !store.contains("greeting", in: "text"))
                #expect(try store.entry(for: "other", in: "text")?.data == Data("intact".utf8))
            }
        }

        @Test("A row whose key or namespace changed does not answer for the new name: the checksum binds both")
        func checksumBindsTheName() throws {
            try DiskTest.withTemporaryDirectory { url in
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))
                try store.set(Data("alice's".utf8), for: "alice", in: "users", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(500), for: "bob", in: "users", storedAt: Date(), expiresAt: nil)
                try Self.tamper(
                    url, "UPDATE entries SET key = CAST('mallory' AS BLOB) WHERE key = CAST('alice' AS BLOB)")
                try Self.tamper(
                    url, "UPDATE entries SET namespace = CAST('admins' AS BLOB) WHERE key = CAST('bob' AS BLOB)")

                #expect(try store.entry(for: "mallory", in: "users") == nil)
                #expect(try store.entry(for: "bob", in: "admins") == nil)
                #expect(events.damage.map(\.reason) == [.checksumMismatch, .checksumMismatch])
                #expect(events.damage.map(\.key) == ["mallory", "bob"])
            }
        }

        @Test("A row without a checksum in a version 2 store is malformed: a miss, removed, reported")
        func missingChecksum() throws {
            try DiskTest.withTemporaryDirectory { url in
                let events = EventRecorder()
                let store = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))
                try store.set(Data("v".utf8), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                try Self.tamper(url, "UPDATE entries SET crc = NULL")
                #expect(try store.verify().damage.map(\.reason) == [.malformedRow])
                #expect(try store.entry(for: "k", in: "ns") == nil)
                #expect(events.damage.map(\.reason) == [.malformedRow])
                #expect(events.damage.first?.detail.contains("no valid checksum") == true)
            }
        }

        /// Turns a store of the current format into one of format version 2 as an
        /// earlier Hoard left it: access times in an indexed `accessed_at` column of
        /// `entries`, no `access` table.
        static func downgradeToVersion2(_ url: URL) throws {
            try downgradeToVersion4(url)
            try tamper(
                url,
                """
                ALTER TABLE entries ADD COLUMN accessed_at REAL NOT NULL DEFAULT 0;
                UPDATE entries SET accessed_at = coalesce(
                    (SELECT accessed_at FROM access WHERE access.id = entries.id), stored_at);
                CREATE INDEX entries_by_access ON entries (accessed_at);
                DROP TRIGGER entries_deleted_access;
                DROP TRIGGER entries_rewritten_access;
                DROP TABLE access;
                UPDATE meta SET value = '2' WHERE name = 'version';
                """)
            #expect(try formatVersion(url) == "2")
        }

        /// A store of format version 1 as an earlier Hoard left it: version 2
        /// without the `crc` column.
        static func makeVersion1Store(_ url: URL) throws {
            do {
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                try store.set(Data("small".utf8), for: "inline", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(DiskTest.bytes(1_000), for: "spilled", in: "ns", storedAt: Date(), expiresAt: nil)
            }
            try downgradeToVersion2(url)
            try tamper(url, "ALTER TABLE entries DROP COLUMN crc; UPDATE meta SET value = '1' WHERE name = 'version'")
            #expect(try formatVersion(url) == "1")
        }

        @Test("A version 1 store is migrated on open: every value reads back, and is checked from then on")
        func migratesVersion1() throws {
            try DiskTest.withTemporaryDirectory { url in
                try Self.makeVersion1Store(url)

                // When it is opened alone
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(spillThreshold: 100, onEvent: events.handler))

                // Then it is version 7, healthy, with every value
                #expect(try Self.formatVersion(url) == "7")
                #expect(try store.verify().isHealthy)
                #expect(try store.entry(for: "inline", in: "ns")?.data == Data("small".utf8))
                #expect(try store.entry(for: "spilled", in: "ns")?.data == DiskTest.bytes(1_000))

                // And the checksums the migration stored catch a change
                try Self.flipBit(in: Self.onlyFile(url), at: 3)
                #expect(try store.entry(for: "spilled", in: "ns") == nil)
                #expect(events.damage.map(\.reason) == [.checksumMismatch])
                #expect(events.failures.isEmpty)
            }
        }

        @Test("A version 1 store another instance has open is refused with busy and left unchanged")
        func version1InUse() throws {
            try DiskTest.withTemporaryDirectory { url in
                try Self.makeVersion1Store(url)
                // Given another holder of the store's lock (as an older Hoard that has it open)
                let descriptor = open(url.appendingPathComponent("lock").path, O_RDWR | O_CLOEXEC)
                try #require(descriptor >= 0)
                #expect(flock(descriptor, LOCK_SH) == 0)

                let error = #expect(throws: HoardError.self) { try DiskStore(directory: url) }
                #expect(error?.code == .busy)
                #expect(error?.message.contains("format version 1") == true)
                #expect(try Self.formatVersion(url) == "1")

                // Once it is let go, opening migrates
                close(descriptor)
                let store = try DiskStore(directory: url)
                #expect(try Self.formatVersion(url) == "7")
                #expect(try store.entry(for: "inline", in: "ns")?.data == Data("small".utf8))
            }
        }

        @Test("A version 2 store is migrated on open with its access order: the least recently read is evicted first")
        func migratesVersion2() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a version 2 store where "a" was written first but read last
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                try DiskTest.writeInOrder(["a", "b", "c"], at: url, clock: clock, reading: "a")
                try Self.downgradeToVersion2(url)

                // When it is opened alone
                let store = try DiskStore(directory: url, clock: clock)

                // Then it is version 7, healthy, with every access time
                #expect(try Self.formatVersion(url) == "7")
                #expect(try store.verify().isHealthy)
                let accessed = Dictionary(
                    uniqueKeysWithValues: try store.entries(in: "ns").map {
                        ($0.key, $0.accessedAt.timeIntervalSince1970)
                    })
                #expect(accessed == ["a": 1_030, "b": 1_010, "c": 1_020])
                // And eviction follows them
                #expect(try store.trim(toBytes: 20) == 1)
                #expect(try store.keys(in: "ns").sorted() == ["a", "c"])
            }
        }

        /// Turns a store of the current format into one of format version 6 as an
        /// earlier Hoard left it: one deletion trigger, which keeps the totals and
        /// leaves the watermark where it is.
        static func downgradeToVersion6(_ url: URL) throws {
            try tamper(
                url,
                """
                DROP TRIGGER entries_deleted_above_watermark;
                DROP TRIGGER entries_deleted;
                CREATE TRIGGER entries_deleted AFTER DELETE ON entries
                WHEN OLD.id <= (SELECT id FROM totals_watermark) BEGIN
                    UPDATE namespaces SET count = count - 1, bytes = bytes - OLD.size WHERE namespace = OLD.namespace;
                    DELETE FROM namespaces WHERE namespace = OLD.namespace AND count <= 0;
                END;
                UPDATE meta SET value = '6' WHERE name = 'version';
                """)
            #expect(try formatVersion(url) == "6")
        }

        @Test(
            "A version 6 store is migrated on open: a watermark left above the last row comes down, and new rows are counted"
        )
        func migratesVersion6() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a version 6 store whose last two rows were deleted after a fold
                do {
                    let store = try DiskStore(directory: url)
                    for i in 0..<_DiskIndex.foldInterval {
                        try store.set(Data(count: 10), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                    }
                }
                try Self.downgradeToVersion6(url)
                try Self.tamper(url, "DELETE FROM entries WHERE id > \(_DiskIndex.foldInterval - 2)")
                #expect(try DiskStoreTotalsTests.watermark(url) == Int64(_DiskIndex.foldInterval))

                // When it is opened alone
                let store = try DiskStore(directory: url)

                // Then it is version 7, with the watermark at the last row, healthy
                #expect(try Self.formatVersion(url) == "7")
                #expect(try DiskStoreTotalsTests.watermark(url) == Int64(_DiskIndex.foldInterval - 2))
                #expect(try store.verify().isHealthy)
                // And a new entry, given the id after the last row, is counted
                try store.set(Data(count: 5), for: "new", in: "ns", storedAt: Date(), expiresAt: nil)
                let count = _DiskIndex.foldInterval - 1
                #expect(try store.usage(in: "ns") == StoreUsage(count: count, bytes: (count - 1) * 10 + 5))
                #expect(try store.verify().isHealthy)
            }
        }

        /// Turns a store of the current format into one of format version 5 as an
        /// earlier Hoard left it: `access` indexed by time.
        static func downgradeToVersion5(_ url: URL) throws {
            try downgradeToVersion6(url)
            try tamper(
                url,
                """
                CREATE INDEX access_by_time ON access (accessed_at);
                UPDATE meta SET value = '5' WHERE name = 'version';
                """)
            #expect(try formatVersion(url) == "5")
        }

        @Test("A version 5 store is migrated on open: the time index goes, and trimming keeps the access order")
        func migratesVersion5() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a version 5 store where "a" was written first but read last
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                try DiskTest.writeInOrder(["a", "b", "c"], at: url, clock: clock, reading: "a")
                try Self.downgradeToVersion5(url)
                #expect(try Self.hasIndex("access_by_time", url))

                // When it is opened alone
                let store = try DiskStore(directory: url, clock: clock)

                // Then it is version 7 without the index, healthy
                #expect(try Self.formatVersion(url) == "7")
                #expect(try store.verify().isHealthy)
                #expect(try Self.hasIndex("access_by_time", url) == false)
                // And trimming evicts the least recently used first: "b", then "c"
                #expect(try store.trim(toBytes: 20) == 1)
                #expect(try store.keys(in: "ns").sorted() == ["a", "c"])
                #expect(try store.trim(toBytes: 10) == 1)
                #expect(try store.keys(in: "ns") == ["a"])
            }
        }

        /// Turns a store of the current format into one of format version 4 as an
        /// earlier Hoard left it: totals that count every row, kept by three
        /// triggers, and no watermark.
        static func downgradeToVersion4(_ url: URL) throws {
            try downgradeToVersion5(url)
            try tamper(
                url,
                """
                \(DiskStoreDamageTests.foldTotals)
                DROP TRIGGER entries_deleted;
                DROP TRIGGER entries_resized;
                DROP TABLE totals_watermark;
                CREATE TRIGGER entries_inserted AFTER INSERT ON entries BEGIN
                    INSERT INTO namespaces (namespace, count, bytes) VALUES (NEW.namespace, 1, NEW.size)
                    ON CONFLICT (namespace) DO UPDATE SET count = count + 1, bytes = bytes + excluded.bytes;
                END;
                CREATE TRIGGER entries_deleted AFTER DELETE ON entries BEGIN
                    UPDATE namespaces SET count = count - 1, bytes = bytes - OLD.size WHERE namespace = OLD.namespace;
                    DELETE FROM namespaces WHERE namespace = OLD.namespace AND count <= 0;
                END;
                CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries WHEN OLD.size IS NOT NEW.size BEGIN
                    UPDATE namespaces SET bytes = bytes - OLD.size + NEW.size WHERE namespace = NEW.namespace;
                END;
                UPDATE meta SET value = '4' WHERE name = 'version';
                """)
            #expect(try formatVersion(url) == "4")
        }

        @Test("A version 4 store is migrated on open: its totals stay exact, and later writes keep them")
        func migratesVersion4() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a version 4 store of 100 entries in two namespaces
                do {
                    let store = try DiskStore(directory: url)
                    for i in 0..<100 {
                        try store.set(
                            Data(count: i), for: "k\(i)", in: i % 2 == 0 ? "even" : "odd", storedAt: Date(),
                            expiresAt: nil)
                    }
                }
                try Self.downgradeToVersion4(url)

                // When it is opened alone
                let store = try DiskStore(directory: url)

                // Then it is version 7, healthy, with the same totals
                #expect(try Self.formatVersion(url) == "7")
                #expect(try store.verify().isHealthy)
                #expect(try store.usage(in: "even") == StoreUsage(count: 50, bytes: 2_450))
                #expect(try store.usage(in: "odd") == StoreUsage(count: 50, bytes: 2_500))
                // And writes, overwrites and removals keep them
                try store.set(Data(count: 7), for: "new", in: "even", storedAt: Date(), expiresAt: nil)
                try store.set(Data(count: 1), for: "k1", in: "odd", storedAt: Date(), expiresAt: nil)
                _ = try store.removeValue(for: "k0", in: "even")
                #expect(try store.usage(in: "even") == StoreUsage(count: 50, bytes: 2_457))
                #expect(try store.usage(in: "odd") == StoreUsage(count: 50, bytes: 2_500))
                #expect(try store.totalUsage() == StoreUsage(count: 100, bytes: 4_957))
                #expect(try store.verify().isHealthy)
            }
        }

        /// Turns a store of the current format into one of format version 3 as an
        /// earlier Hoard left it: an access row for every entry, and no trigger
        /// that deletes it when the entry is written again.
        static func downgradeToVersion3(_ url: URL) throws {
            try downgradeToVersion4(url)
            try tamper(
                url,
                """
                INSERT INTO access (id, accessed_at)
                    SELECT id, stored_at FROM entries WHERE NOT EXISTS (SELECT 1 FROM access WHERE access.id = entries.id);
                DROP TRIGGER entries_rewritten_access;
                UPDATE meta SET value = '3' WHERE name = 'version';
                """)
            #expect(try formatVersion(url) == "3")
        }

        @Test("A version 3 store is migrated on open: its access order stays, and a rewrite makes an entry new again")
        func migratesVersion3() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a version 3 store where "a" was written first but read last
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                try DiskTest.writeInOrder(["a", "b", "c"], at: url, clock: clock, reading: "a")
                try Self.downgradeToVersion3(url)

                // When it is opened alone
                let store = try DiskStore(directory: url, clock: clock)

                // Then it is version 7, healthy, with its access times
                #expect(try Self.formatVersion(url) == "7")
                #expect(try store.verify().isHealthy)
                func accessed() throws -> [String: Double] {
                    Dictionary(
                        uniqueKeysWithValues: try store.entries(in: "ns").map {
                            ($0.key, $0.accessedAt.timeIntervalSince1970)
                        })
                }
                #expect(try accessed() == ["a": 1_030, "b": 1_010, "c": 1_020])
                // And writing "b" again makes it the most recent (its old access row goes)
                clock.advance(by: 10)
                try store.set(Data(count: 10), for: "b", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try accessed() == ["a": 1_030, "b": 1_040, "c": 1_020])
                #expect(try store.trim(toBytes: 20) == 1)
                #expect(try store.keys(in: "ns") == ["a", "b"])
            }
        }

        @Test("A store of a newer format version is refused as unsupported, and left unchanged")
        func newerVersion() throws {
            try DiskTest.withTemporaryDirectory { url in
                do { _ = try DiskStore(directory: url) }
                let newer = "\(_DiskIndex.formatVersion + 1)"
                try Self.tamper(url, "UPDATE meta SET value = '\(newer)' WHERE name = 'version'")
                let error = #expect(throws: HoardError.self) { try DiskStore(directory: url) }
                #expect(error?.code == .unsupportedFormat)
                #expect(try Self.formatVersion(url) == newer)
            }
        }

        @Test("A store of format version 0 is refused as unsupported, and left unchanged")
        func versionZero() throws {
            try DiskTest.withTemporaryDirectory { url in
                try Self.makeVersion1Store(url)
                try Self.tamper(url, "UPDATE meta SET value = '0' WHERE name = 'version'")
                let error = #expect(throws: HoardError.self) { try DiskStore(directory: url) }
                #expect(error?.code == .unsupportedFormat)
                #expect(try Self.formatVersion(url) == "0")
            }
        }
    }
}
