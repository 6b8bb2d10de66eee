import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    @Suite("DiskStore limits, eviction and access times")
    struct DiskStoreLimitsTests {
        @Test("Over the byte limit, least-recently-accessed entries go, down to 75%")
        func byteLimit() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given ten 100-byte entries in a store limited to 1,000 bytes
                let clock = ManualClock()
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url,
                    configuration: .init(byteLimit: 1_000, spillThreshold: 150, onEvent: events.handler),
                    clock: clock)
                for i in 0..<10 {
                    try store.set(DiskTest.bytes(100), for: "k\(i)", in: "ns", storedAt: clock.now(), expiresAt: nil)
                }
                #expect(try store.totalUsage() == StoreUsage(count: 10, bytes: 1_000))
                // And k0 and k1 read after the others were written
                clock.advance(by: 120)
                #expect(try store.entry(for: "k0", in: "ns") != nil)
                #expect(try store.entry(for: "k1", in: "ns") != nil)

                // When one more entry takes the store over the limit
                clock.advance(by: 1)
                try store.set(DiskTest.bytes(100), for: "k10", in: "ns", storedAt: clock.now(), expiresAt: nil)

                // Then the four least recently accessed go, leaving 700 bytes <= 750
                #expect(try store.totalUsage() == StoreUsage(count: 7, bytes: 700))
                #expect(try store.keys(in: "ns") == ["k0", "k1", "k10", "k6", "k7", "k8", "k9"])
                let evictions = events.all.compactMap {
                    if case .evicted(let count, let bytes) = $0 { [count, bytes] } else { nil }
                }
                #expect(evictions == [[4, 400]])
            }
        }

        @Test("Over the count limit, entries go down to the low-water mark, never the one just written")
        func countLimitProtectsNewEntry() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(
                    directory: url, configuration: .init(countLimit: 3, lowWaterMark: 1), clock: clock)
                for key in ["a", "b", "c"] {
                    try store.set(Data([1]), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                }
                // A write whose access time is the oldest of all (the clock went back)
                clock.set(to: Date(timeIntervalSince1970: 0))
                try store.set(Data([2]), for: "d", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try store.keys(in: "ns") == ["b", "c", "d"])
                // A batch's entries are protected the same way
                try store.write([
                    .set(Data([3]), for: "e", in: "ns", storedAt: clock.now(), expiresAt: nil),
                    .set(Data([4]), for: "f", in: "ns", storedAt: clock.now(), expiresAt: nil),
                ])
                // d (accessed at 0) and b (1000, written before c) go; e and f stay though they are oldest-accessed
                #expect(try store.keys(in: "ns") == ["c", "e", "f"])
            }
        }

        @Test("Only the limit a write exceeded is trimmed to the low-water mark; the other is only kept")
        func onlyExceededLimitIsTrimmed() throws {
            // Over the count limit only: down to 3 of 4 entries, not also to 750 of the 1,000 bytes
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: url, configuration: .init(byteLimit: 1_000, countLimit: 4, onEvent: events.handler),
                    clock: clock)
                for (key, size) in [("s1", 0), ("s2", 0), ("s3", 0), ("big", 900), ("s4", 0)] {
                    try store.set(Data(count: size), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                    clock.advance(by: 2)
                }
                #expect(try store.keys(in: "ns") == ["big", "s3", "s4"])
                let evictions = events.all.compactMap {
                    if case .evicted(let count, let bytes) = $0 { [count, bytes] } else { nil }
                }
                #expect(evictions == [[2, 0]])
            }
            // Over the byte limit only: down to 750 bytes, not also to 3 of 5 entries
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(
                    directory: url, configuration: .init(byteLimit: 1_000, countLimit: 5), clock: clock)
                for (key, size) in [("a", 400), ("b", 10), ("c", 10), ("d", 10), ("e", 600)] {
                    try store.set(Data(count: size), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                    clock.advance(by: 2)
                }
                #expect(try store.keys(in: "ns") == ["b", "c", "d", "e"])
                #expect(try store.totalUsage() == StoreUsage(count: 4, bytes: 630))
            }
        }

        @Test("Limits of Int.max with a low-water mark of 1 open a working store")
        func largestLimits() async {
            await #expect(processExitsWith: .success) {
                try DiskTest.withTemporaryDirectory { url in
                    let store = try DiskStore(
                        directory: url, configuration: .init(byteLimit: .max, countLimit: .max, lowWaterMark: 1))
                    try store.set(Data([1]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                    try #require(try store.entry(for: "k", in: "ns")?.data == Data([1]))
                }
            }
        }

        @Test("A value larger than the byte limit is refused and changes nothing")
        func valueTooLarge() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(byteLimit: 100))
                try store.set(Data([7]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                let error = #expect(throws: HoardError.self) {
                    try store.set(Data(count: 101), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(error?.code == .valueTooLarge)
                #expect(error?.key == "k")
                #expect(try store.entry(for: "k", in: "ns")?.data == Data([7]))
            }
        }

        @Test("trim(toBytes:count:progress:) evicts in chunks and reports progress")
        func trimWithProgress() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock()
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 50), clock: clock)
                var batch: [CacheStoreWrite] = []
                for i in 0..<1_000 {
                    batch.append(
                        .set(
                            DiskTest.bytes(i % 10 == 0 ? 100 : 10), for: "k\(i)", in: "ns", storedAt: clock.now(),
                            expiresAt: nil))
                }
                try store.write(batch)
                #expect(DiskTest.blobFiles(url).count == 100)
                var reports: [DiskStore.Progress] = []
                let evicted = try store.trim(toBytes: nil, count: 200, progress: { reports.append($0) })
                #expect(evicted == 800)
                #expect(try store.totalUsage().count == 200)
                #expect(reports.count >= 4)
                #expect(reports.last?.completed == 800)
                #expect(reports.allSatisfy { $0.completed <= $0.total })
                #expect(DiskTest.blobFiles(url).count == 20, "files of evicted entries are deleted")
                // The protocol's form
                #expect(try store.trim(toBytes: 0) == 200)
                #expect(try store.totalUsage() == StoreUsage())
                #expect(DiskTest.blobFiles(url).isEmpty)
            }
        }

        @Test("Reads record access times in memory and write them in batches, off the reading thread")
        func accessTimesAreBatched() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given two instances on one directory; A writes accesses every 3 reads
                let clock = ManualClock(start: Date(timeIntervalSince1970: 0))
                let a = try DiskStore(
                    directory: url,
                    configuration: .init(accessTimeResolution: 0, accessFlushCount: 3, accessFlushInterval: 3_600),
                    clock: clock)
                let b = try DiskStore(directory: url, clock: clock)
                for i in 1...4 {
                    try a.set(Data([UInt8(i)]), for: "k\(i)", in: "ns", storedAt: clock.now(), expiresAt: nil)
                }
                func accessed() throws -> [String: Double] {
                    a.waitForQueuedAccessFlushes()
                    return Dictionary(
                        uniqueKeysWithValues: try b.entries(in: "ns").map {
                            ($0.key, $0.accessedAt.timeIntervalSince1970)
                        })
                }
                clock.advance(by: 10)

                // When A reads twice, nothing is written yet
                _ = try a.entry(for: "k1", in: "ns")
                _ = try a.entry(for: "k2", in: "ns")
                _ = try a.entry(for: "k2", in: "ns")
                #expect(try accessed() == ["k1": 0, "k2": 0, "k3": 0, "k4": 0])
                // The third distinct read has all three written
                _ = try a.entry(for: "k3", in: "ns")
                #expect(try accessed() == ["k1": 10, "k2": 10, "k3": 10, "k4": 0])
                // A write does not carry a pending access (it never pays for reads)…
                clock.advance(by: 5)
                _ = try a.entry(for: "k4", in: "ns")
                try a.set(Data([9]), for: "other", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try accessed()["k4"] == 0)
                // …a read that finds the oldest pending access an interval old flushes it
                clock.advance(by: 3_600)
                _ = try a.entry(for: "k1", in: "ns")
                #expect(try accessed()["k4"] == 15)
                #expect(try accessed()["k1"] == 3_615)
            }
        }

        @Test("By default, reads record up to 10,000 accesses before a flush writes them")
        func defaultAccessBatch() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given 10,000 entries, and an instance with the default batch (and no
                // flush by age within the test)
                let clock = ManualClock(start: Date(timeIntervalSince1970: 0))
                let a = try DiskStore(directory: url, configuration: .init(accessFlushInterval: 3_600), clock: clock)
                let b = try DiskStore(directory: url, clock: clock)
                let keys = (0..<10_000).map { "k\($0)" }
                try a.write(keys.map { .set(Data([1]), for: $0, in: "ns", storedAt: clock.now(), expiresAt: nil) })
                func accessedAt10() throws -> Int {
                    a.waitForQueuedAccessFlushes()
                    return try b.entries(in: "ns").filter { $0.accessedAt.timeIntervalSince1970 == 10 }.count
                }
                clock.advance(by: 10)

                // When A reads 9,999 of them, none of the accesses is written yet
                for key in keys.dropLast() { #expect(try a.entry(for: key, in: "ns") != nil) }
                #expect(try accessedAt10() == 0)
                // The 10,000th has them all written in one flush
                #expect(try a.entry(for: keys[9_999], in: "ns") != nil)
                #expect(try accessedAt10() == 10_000)
            }
        }

        @Test("A trim reads the access order once; an entry read, rewritten or removed during it is passed over")
        func trimPassesOverEntriesUsedDuringIt() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given 600 entries, each stored (and so last accessed) a second after the one before
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(directory: url, clock: clock)
                for i in 0..<600 {
                    try store.set(Data(count: 10), for: "k\(i)", in: "ns", storedAt: clock.now(), expiresAt: nil)
                    clock.advance(by: 1)
                }
                // When a trim down to 10 entries has evicted its first chunk (of 256),
                // "k300" is read, "k301" written again and "k302" removed: all three
                // were chosen for later chunks when the trim read the access order
                var reports = 0
                let evicted = try store.trim(
                    toBytes: nil, count: 10,
                    progress: { _ in
                        reports += 1
                        guard reports == 1 else { return }
                        #expect((try? store.contains("k255", in: "ns")) == false)
                        #expect((try? store.entry(for: "k300", in: "ns")) != nil)
                        try? store.set(Data(count: 10), for: "k301", in: "ns", storedAt: clock.now(), expiresAt: nil)
                        _ = try? store.removeValue(for: "k302", in: "ns")
                    })

                // Then the read and the rewritten entry stay, the removed one is not
                // counted, and the newest others fill the rest
                #expect(reports >= 3)
                #expect(evicted == 589)
                let expected = ["k300", "k301"] + (592..<600).map { "k\($0)" }
                #expect(try store.keys(in: "ns").sorted() == expected.sorted())
            }
        }

        @Test("A trim evicts an entry whose access time is not a number first, and ends")
        func trimEvictsDamagedAccessTimesFirst() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given three entries stored in order, the newest with a damaged access time
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                try DiskTest.writeInOrder(["a", "b", "c"], at: url, clock: clock)
                try DiskStoreDamageTests.tamper(
                    url,
                    "INSERT INTO access (id, accessed_at) SELECT id, 'x' FROM entries WHERE key = CAST('c' AS BLOB)")
                let store = try DiskStore(directory: url, clock: clock)

                // When it is trimmed one entry at a time, then to nothing
                #expect(try store.trim(toBytes: 20) == 1)
                let afterFirst = try store.keys(in: "ns").sorted()
                #expect(try store.trim(toBytes: 10) == 1)
                let afterSecond = try store.keys(in: "ns")
                #expect(try store.trim(toBytes: 0) == 1)

                // Then the damaged one goes first (as if accessed at time 0), then the oldest
                #expect(afterFirst == ["a", "b"])
                #expect(afterSecond == ["b"])
                #expect(try store.totalUsage() == StoreUsage())
            }
        }

        @Test("A trim writes pending access times first")
        func trimAppliesPendingAccesses() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(
                    directory: url, configuration: .init(accessFlushCount: 1_000, accessFlushInterval: 3_600),
                    clock: clock)
                try store.set(Data(count: 100), for: "old", in: "ns", storedAt: clock.now(), expiresAt: nil)
                clock.advance(by: 2)
                try store.set(Data(count: 100), for: "new", in: "ns", storedAt: clock.now(), expiresAt: nil)
                clock.advance(by: 2)
                // The read of "old" is only in memory when the trim starts
                #expect(try store.entry(for: "old", in: "ns") != nil)
                #expect(try store.trim(toBytes: 100) == 1)
                #expect(try store.contains("old", in: "ns"))
                #expect(try !store.contains("new", in: "ns"))
            }
        }

        @Test("By default, a read seconds after a write protects the entry from trimming")
        func readProtectsEntry() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(directory: url, clock: clock)
                try store.set(Data(count: 100), for: "read", in: "ns", storedAt: clock.now(), expiresAt: nil)
                clock.advance(by: 2)
                try store.set(Data(count: 100), for: "unread", in: "ns", storedAt: clock.now(), expiresAt: nil)
                clock.advance(by: 2)
                #expect(try store.entry(for: "read", in: "ns") != nil)
                #expect(try store.trim(toBytes: 100) == 1)
                #expect(try store.entry(for: "read", in: "ns") != nil)
                #expect(try store.entry(for: "unread", in: "ns") == nil)
            }
        }

        @Test("A later read of an entry whose earlier read is still pending moves its access time forward")
        func laterReadOfPendingEntry() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given two entries in a store limited to two
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(
                    directory: url, configuration: .init(countLimit: 2, lowWaterMark: 1), clock: clock)
                try store.set(Data([1]), for: "a", in: "ns", storedAt: clock.now(), expiresAt: nil)
                try store.set(Data([2]), for: "c", in: "ns", storedAt: clock.now(), expiresAt: nil)
                // When a is read, then c, then a again, before any of the reads is written
                for key in ["a", "c", "a"] {
                    clock.advance(by: 2)
                    #expect(try store.entry(for: key, in: "ns") != nil)
                }
                // Then a third entry evicts c, read before a was read again
                clock.advance(by: 2)
                try store.set(Data([3]), for: "d", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try store.keys(in: "ns") == ["a", "d"])
            }
            try DiskTest.withTemporaryDirectory { url in
                // A pending read moves on only for a read the resolution or more after it
                let clock = ManualClock(start: Date(timeIntervalSince1970: 0))
                let reader = try DiskStore(directory: url, configuration: .init(accessTimeResolution: 60), clock: clock)
                let observer = try DiskStore(directory: url, clock: clock)
                func accessed() throws -> Double? {
                    try observer.entries(in: "ns").first?.accessedAt.timeIntervalSince1970
                }
                try reader.set(Data([1]), for: "k", in: "ns", storedAt: clock.now(), expiresAt: nil)
                for time in [30.0, 89] {
                    clock.set(to: Date(timeIntervalSince1970: time))
                    _ = try reader.entry(for: "k", in: "ns")
                }
                reader.flushAccessTimes()
                #expect(try accessed() == 30)
                for time in [100.0, 160] {
                    clock.set(to: Date(timeIntervalSince1970: time))
                    _ = try reader.entry(for: "k", in: "ns")
                }
                reader.flushAccessTimes()
                #expect(try accessed() == 160)
            }
        }

        @Test("A first read before the entry's stored date (within the resolution) records the stored date")
        func firstAccessNeverBeforeStoredDate() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given an entry stored with a date 50 s ahead of the clock, within the
                // resolution, so its write records no access row
                let clock = ManualClock(start: Date(timeIntervalSince1970: 0))
                let reader = try DiskStore(directory: url, configuration: .init(accessTimeResolution: 60), clock: clock)
                // (after a first flush, so that the next one knows no other connection
                // wrote since and trusts the stored date the read found)
                try reader.set(Data([0]), for: "first", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try reader.entry(for: "first", in: "ns") != nil)
                reader.flushAccessTimes()
                try reader.set(Data([1]), for: "k", in: "ns", storedAt: Date(timeIntervalSince1970: 50), expiresAt: nil)
                // When it is read at 10 s and the access is written
                clock.set(to: Date(timeIntervalSince1970: 10))
                #expect(try reader.entry(for: "k", in: "ns") != nil)
                reader.flushAccessTimes()
                // Then its access time is its stored date, not the earlier read time
                let observer = try DiskStore(directory: url, clock: clock)
                #expect(try observer.entries(in: "ns").first { $0.key == "k" }?.accessedAt.timeIntervalSince1970 == 50)
            }
        }

        @Test(
            "A read within the resolution of the instance's last recorded one is not recorded; pending ones are written on flush and deinit"
        )
        func accessTimeResolutionAndFlush() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 0))
                let reader = try DiskStore(directory: url, configuration: .init(accessTimeResolution: 60), clock: clock)
                let observer = try DiskStore(directory: url, clock: clock)
                func accessed(_ key: String) throws -> Double? {
                    try observer.entries(in: "ns").first { $0.key == key }?.accessedAt.timeIntervalSince1970
                }
                try reader.set(Data([1]), for: "k", in: "ns", storedAt: clock.now(), expiresAt: nil)
                try reader.set(Data([1]), for: "j", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try accessed("k") == 0)
                clock.advance(by: 30)
                _ = try reader.entry(for: "k", in: "ns")
                reader.flushAccessTimes()
                #expect(try accessed("k") == 30)
                // 59 seconds after the recorded read: not recorded again
                clock.advance(by: 59)
                _ = try reader.entry(for: "k", in: "ns")
                reader.flushAccessTimes()
                #expect(try accessed("k") == 30)
                // 60 seconds after: recorded
                clock.advance(by: 1)
                _ = try reader.entry(for: "k", in: "ns")
                reader.flushAccessTimes()
                #expect(try accessed("k") == 90)
                // Pending at deinit: written as the instance goes away
                clock.advance(by: 100)
                do {
                    let shortLived = try DiskStore(
                        directory: url, configuration: .init(accessTimeResolution: 1), clock: clock)
                    _ = try shortLived.entry(for: "j", in: "ns")
                }
                #expect(try accessed("j") == 190)
            }
        }

        @Test(
            "Access times without an entry are reported by verify; an entry without one is evicted by its stored date")
        func lostAccessTime() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(directory: url, configuration: .init(accessTimeResolution: 0), clock: clock)
                for key in ["a", "b", "c"] {
                    try store.set(Data(count: 10), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                    clock.advance(by: 10)
                }
                // Given "a" without an access time (as if never read: it counts as
                // accessed when stored) and an access time that belongs to no entry
                try DiskStoreDamageTests.tamper(
                    url,
                    """
                    DELETE FROM access WHERE id = (SELECT id FROM entries WHERE key = CAST('a' AS BLOB));
                    INSERT INTO access (id, accessed_at) VALUES (999, 5);
                    """)

                // verify() reports the access time without an entry, and repairs it
                let report = try store.verify()
                #expect(report.damage.map(\.reason) == [.wrongAccessTimes])
                #expect(report.damage.first?.detail.contains("1 access times without an entry") == true)
                #expect(try store.verify(repairing: true).damage.map(\.reason) == [.wrongAccessTimes])
                #expect(try store.verify().isHealthy)
                #expect(try store.trim(toBytes: 20) == 1)
                #expect(try store.keys(in: "ns").sorted() == ["b", "c"])

                // A read gives an entry an access time again
                try DiskStoreDamageTests.tamper(
                    url, "DELETE FROM access WHERE id = (SELECT id FROM entries WHERE key = CAST('b' AS BLOB))")
                #expect(try store.entry(for: "b", in: "ns") != nil)
                store.flushAccessTimes()
                #expect(try store.verify().isHealthy)
                #expect(try store.trim(toBytes: 10) == 1)
                #expect(try store.keys(in: "ns") == ["b"])
            }
        }

        /// How many rows `access` holds.
        static func accessRows(_ url: URL) throws -> Int {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            defer { connection.close() }
            let statement = try connection.prepare("SELECT count(*) FROM access")
            defer { statement.reset() }
            _ = try statement.step()
            return Int(statement.int64(at: 0))
        }

        @Test("A new entry writes no access row; never read, it is evicted by its stored date among read ones")
        func unreadEntriesByStoredDate() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given "a" written at 1000 and read at 1030, and "b", "c", "d" written at
                // 1010, 1020 and 1040 and never read
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(directory: url, configuration: .init(accessTimeResolution: 1), clock: clock)
                try store.set(Data(count: 10), for: "a", in: "ns", storedAt: clock.now(), expiresAt: nil)
                for key in ["b", "c"] {
                    clock.advance(by: 10)
                    try store.set(Data(count: 10), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                }
                #expect(try Self.accessRows(url) == 0, "an insert writes the entry's row alone")
                clock.advance(by: 10)
                #expect(try store.entry(for: "a", in: "ns") != nil)
                clock.advance(by: 10)
                try store.write([.set(Data(count: 10), for: "d", in: "ns", storedAt: clock.now(), expiresAt: nil)])
                store.flushAccessTimes()
                #expect(try Self.accessRows(url) == 1)

                // Then trimming to two entries takes "b" (1010) and "c" (1020)
                #expect(try store.trim(toBytes: nil, count: 2) == 2)
                #expect(try store.keys(in: "ns") == ["a", "d"])
                // And then "a" (read at 1030) before "d" (stored at 1040)
                #expect(try store.trim(toBytes: nil, count: 1) == 1)
                #expect(try store.keys(in: "ns") == ["d"])
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("A value stored with an older date records its write time; a rewrite counts from its new stored date")
        func storedDateAndWriteTime() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(directory: url, configuration: .init(accessTimeResolution: 1), clock: clock)
                func accessed() throws -> [String: Double] {
                    Dictionary(
                        uniqueKeysWithValues: try store.entries(in: "ns").map {
                            ($0.key, $0.accessedAt.timeIntervalSince1970)
                        })
                }
                // Given a copy of a value stored long ago, written at 1000 (a promotion)
                try store.set(
                    Data(count: 10), for: "old", in: "ns", storedAt: Date(timeIntervalSince1970: 100), expiresAt: nil)
                // And "x" written at 1000, read at 1010 (the read still pending), and written again at 1020
                try store.set(Data(count: 10), for: "x", in: "ns", storedAt: clock.now(), expiresAt: nil)
                clock.advance(by: 10)
                #expect(try store.entry(for: "x", in: "ns") != nil)
                clock.advance(by: 10)
                try store.set(Data(count: 10), for: "x", in: "ns", storedAt: clock.now(), expiresAt: nil)
                store.flushAccessTimes()

                // Then "old" was accessed when written, and the pending read does not
                // move "x" back before its new stored date
                #expect(try accessed() == ["old": 1_000, "x": 1_020])
                #expect(try store.trim(toBytes: nil, count: 1) == 1)
                #expect(try store.keys(in: "ns") == ["x"])
            }
        }

        @Test("A flush does not trust a read made before the same instance rewrote or removed the entry")
        func flushAfterOwnWrites() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let store = try DiskStore(
                    directory: url, configuration: .init(accessTimeResolution: 1, accessFlushInterval: 3_600),
                    clock: clock)
                for key in ["rewritten", "removed", "kept"] {
                    try store.set(Data(count: 10), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                }
                // Given a flush already done (the store has seen the index as it is)
                #expect(try store.entry(for: "kept", in: "ns") != nil)
                store.flushAccessTimes()
                #expect(try Self.accessRows(url) == 1)
                // When all three are read at 1010, then one is written again at 1020
                // and one removed, before the reads are written
                clock.advance(by: 10)
                for key in ["rewritten", "removed", "kept"] { #expect(try store.entry(for: key, in: "ns") != nil) }
                clock.advance(by: 10)
                try store.set(Data(count: 10), for: "rewritten", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try store.removeValue(for: "removed", in: "ns"))
                store.flushAccessTimes()

                // Then the rewritten entry counts from its new stored date, the removed
                // one leaves no access row behind, and the other has its read
                let accessed = Dictionary(
                    uniqueKeysWithValues: try store.entries(in: "ns").map {
                        ($0.key, $0.accessedAt.timeIntervalSince1970)
                    })
                #expect(accessed == ["rewritten": 1_020, "kept": 1_010])
                #expect(try Self.accessRows(url) == 2)
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("A flush does not trust a read made before another instance rewrote or removed the entry")
        func flushAfterOtherInstanceWrites() throws {
            try DiskTest.withTemporaryDirectory { url in
                let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                let reader = try DiskStore(
                    directory: url, configuration: .init(accessTimeResolution: 1, accessFlushInterval: 3_600),
                    clock: clock)
                let writer = try DiskStore(directory: url, clock: clock)
                for key in ["rewritten", "removed", "kept"] {
                    try writer.set(Data(count: 10), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
                }
                // Given a flush by the reader after those writes
                #expect(try reader.entry(for: "kept", in: "ns") != nil)
                reader.flushAccessTimes()
                // When the reader reads all three at 1010, and the other instance (its
                // own connection, as another process would) writes one again at 1020
                // and removes one before the reads are written
                clock.advance(by: 10)
                for key in ["rewritten", "removed", "kept"] { #expect(try reader.entry(for: key, in: "ns") != nil) }
                clock.advance(by: 10)
                try writer.set(Data(count: 10), for: "rewritten", in: "ns", storedAt: clock.now(), expiresAt: nil)
                #expect(try writer.removeValue(for: "removed", in: "ns"))
                reader.flushAccessTimes()

                // Then the flush sees the other connection's commits and checks each
                // read against its entry
                let accessed = Dictionary(
                    uniqueKeysWithValues: try writer.entries(in: "ns").map {
                        ($0.key, $0.accessedAt.timeIntervalSince1970)
                    }
                )
                #expect(accessed == ["rewritten": 1_020, "kept": 1_010])
                #expect(try Self.accessRows(url) == 2)
                #expect(try writer.verify().isHealthy)
            }
        }
    }
}
