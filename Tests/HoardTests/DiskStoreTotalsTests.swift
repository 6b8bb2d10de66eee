import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// The namespace totals of format version 5: the `namespaces` table counts the
    /// rows up to a watermark, reads add the rows above it, and every
    /// ``_DiskIndex/foldInterval``-th write folds them in.
    @Suite("DiskStore namespace totals")
    struct DiskStoreTotalsTests {
        /// The totals the store reports, per namespace and in all.
        static func totals(_ store: DiskStore) throws -> (namespaces: [String: StoreUsage], total: StoreUsage) {
            (try store.namespaces(), try store.totalUsage())
        }

        /// The row id up to which the `namespaces` table counts, read through a
        /// connection of its own.
        static func watermark(_ url: URL) throws -> Int64 {
            try integer("SELECT id FROM totals_watermark", url)
        }

        /// The last row id of `entries`, 0 when it is empty.
        static func lastRowID(_ url: URL) throws -> Int64 {
            try integer("SELECT coalesce(max(id), 0) FROM entries", url)
        }

        /// The integer `sql` answers in the store at `url`, read through a
        /// connection of its own.
        private static func integer(_ sql: String, _ url: URL) throws -> Int64 {
            let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
            defer { connection.close() }
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try #require(try statement.step())
            return statement.int64(at: 0)
        }

        @Test("Random writes, overwrites and removals in three namespaces: the totals are exact after every step")
        func exactAfterEveryStep() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                var model: [String: [String: Int]] = [:]  // namespace → key → size
                var random = MemoryCacheModelTests.Generator(state: 7)
                var folds = 0
                var lastWatermark: Int64 = 0
                for step in 0..<600 {
                    let namespace = ["a", "b", "c"][Int.random(in: 0..<3, using: &random)]
                    let key = "k\(Int.random(in: 0..<40, using: &random))"
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<70:
                        let size = Int.random(in: 0..<50, using: &random)
                        try store.set(Data(count: size), for: key, in: namespace, storedAt: Date(), expiresAt: nil)
                        model[namespace, default: [:]][key] = size
                    case 70..<97:
                        let removed = try store.removeValue(for: key, in: namespace)
                        #expect(removed == (model[namespace]?[key] != nil), "step \(step)")
                        model[namespace]?[key] = nil
                    default:
                        _ = try store.removeAll(in: namespace)
                        model[namespace] = nil
                    }
                    let expected = model.compactMapValues { keys -> StoreUsage? in
                        keys.isEmpty ? nil : StoreUsage(count: keys.count, bytes: keys.values.reduce(0, +))
                    }
                    let (namespaces, total) = try Self.totals(store)
                    #expect(namespaces == expected, "step \(step)")
                    #expect(
                        total
                            == StoreUsage(
                                count: expected.values.reduce(0) { $0 + $1.count },
                                bytes: expected.values.reduce(0) { $0 + $1.bytes }),
                        "step \(step)")
                    for name in ["a", "b", "c"] {
                        #expect(try store.usage(in: name) == expected[name] ?? StoreUsage(), "step \(step), \(name)")
                    }
                    if namespaces != expected { return }
                    let watermark = try Self.watermark(url)
                    #expect(watermark <= (try Self.lastRowID(url)), "step \(step)")
                    if watermark != lastWatermark { folds += 1 }
                    lastWatermark = watermark
                }
                #expect(folds >= 5, "the run folds the totals again and again")
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("A row id freed at the top of the table after a fold is not given again below the watermark")
        func rowIDsStayAboveTheWatermark() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                // Given a fold (the foldInterval-th write) at the last row
                for i in 0..<_DiskIndex.foldInterval {
                    try store.set(Data(count: 10), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                let watermark = try Self.watermark(url)
                #expect(watermark == Int64(_DiskIndex.foldInterval))
                // When the last two rows go and a new entry comes
                #expect(try store.removeValue(for: "k\(_DiskIndex.foldInterval - 1)", in: "ns"))
                #expect(try store.removeValue(for: "k\(_DiskIndex.foldInterval - 2)", in: "ns"))
                try store.set(Data(count: 5), for: "new", in: "ns", storedAt: Date(), expiresAt: nil)

                // Then the new entry is counted
                let count = _DiskIndex.foldInterval - 1
                #expect(try store.usage(in: "ns") == StoreUsage(count: count, bytes: (count - 1) * 10 + 5))
                #expect(try store.verify().isHealthy)
            }
        }

        @Test(
            "Deleting the rows at and above the watermark brings it down to the last row id, and new rows are counted"
        )
        func watermarkComesDown() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url)
                let fold = _DiskIndex.foldInterval
                // Given a fold at row `fold`, then three rows above the watermark
                for i in 0..<(fold + 3) {
                    try store.set(Data(count: 10), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(try Self.watermark(url) == Int64(fold))

                // When the row at the watermark goes, rows above it remain: it stays
                #expect(try store.removeValue(for: "k\(fold - 1)", in: "ns"))
                #expect(try Self.watermark(url) == Int64(fold))
                // And when the rows above it go too, it comes down to the last row left
                for i in fold..<(fold + 3) { #expect(try store.removeValue(for: "k\(i)", in: "ns")) }
                #expect(try Self.watermark(url) == Int64(fold - 1))
                #expect(try store.usage(in: "ns") == StoreUsage(count: fold - 1, bytes: (fold - 1) * 10))

                // Then new entries, given the ids after it, are counted
                try store.set(Data(count: 5), for: "new", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(Data(count: 7), for: "newer", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try store.usage(in: "ns") == StoreUsage(count: fold + 1, bytes: (fold - 1) * 10 + 12))
                #expect(try store.verify().isHealthy)

                // And emptying the store brings it to 0; the next entry is counted
                _ = try store.removeAll(in: "ns")
                #expect(try Self.watermark(url) == 0)
                try store.set(Data(count: 3), for: "again", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try store.usage(in: "ns") == StoreUsage(count: 1, bytes: 3))
                #expect(try store.totalUsage() == StoreUsage(count: 1, bytes: 3))
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("Only a transaction that writes an entry folds: a removal after a failed write at the interval does not")
        func removalsNeverFold() throws {
            try DiskTest.withTemporaryDirectory { url in
                _ = try DiskStore(directory: url)
                let index = try _DiskIndex(path: url.appendingPathComponent("index.sqlite").path, busyTimeout: 5)
                defer { index.close() }
                func write(_ key: String) throws(HoardError) {
                    try index.upsert(
                        namespace: "ns", key: key, storedAt: 1, expiresAt: nil, accessedAt: nil, value: Data(count: 1),
                        size: 1, blob: nil, crc: 0)
                }
                // Given one write short of the interval, then a write whose transaction fails
                for i in 0..<(_DiskIndex.foldInterval - 1) {
                    try index.transaction { () throws(HoardError) in try write("k\(i)") }
                }
                #expect(throws: HoardError.self) {
                    try index.transaction { () throws(HoardError) in
                        try write("failed")
                        throw HoardError(.ioFailed, "the disk is full")
                    }
                }
                #expect(try Self.watermark(url) == 0)

                // When a transaction only removes an entry, it does not fold
                try index.transaction { () throws(HoardError) in _ = try index.delete(namespace: "ns", key: "k0") }
                #expect(try Self.watermark(url) == 0)

                // Then the next write folds everything above the watermark
                try index.transaction { () throws(HoardError) in try write("next") }
                #expect(try Self.watermark(url) > 0)
                let store = try DiskStore(directory: url)
                #expect(
                    try store.usage(in: "ns")
                        == StoreUsage(count: _DiskIndex.foldInterval - 1, bytes: _DiskIndex.foldInterval - 1))
            }
        }

        @Test("A second instance reads exact totals over rows the first wrote and did not fold, and the other way")
        func twoInstances() throws {
            try DiskTest.withTemporaryDirectory { url in
                let first = try DiskStore(directory: url)
                let second = try DiskStore(directory: url)
                for i in 0..<10 {
                    try first.set(Data(count: 3), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(try Self.watermark(url) == 0, "nothing folded yet")
                #expect(try second.usage(in: "ns") == StoreUsage(count: 10, bytes: 30))
                #expect(try second.totalUsage() == StoreUsage(count: 10, bytes: 30))
                // The second instance's writes and removals, up to its own fold
                for i in 5..<(5 + _DiskIndex.foldInterval) {
                    try second.set(Data(count: 1), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(try Self.watermark(url) > 0, "the second instance folded")
                #expect(try first.removeValue(for: "k0", in: "ns"))
                let count = 4 + _DiskIndex.foldInterval
                let expected = StoreUsage(count: count, bytes: 4 * 3 + _DiskIndex.foldInterval)
                #expect(try first.usage(in: "ns") == expected)
                #expect(try second.usage(in: "ns") == expected)
                #expect(try first.namespaces() == ["ns": expected])
                #expect(try first.verify().isHealthy)
            }
        }

        @Test("Byte limits count the entries not folded yet: a store over its limit trims at once")
        func limitsCountUnfoldedEntries() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(byteLimit: 100, lowWaterMark: 0.5))
                for i in 0..<10 {
                    try store.set(Data(count: 10), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(try store.totalUsage() == StoreUsage(count: 10, bytes: 100))
                try store.set(Data(count: 10), for: "k10", in: "ns", storedAt: Date(), expiresAt: nil)
                // Over 100 bytes: trimmed to the low-water mark, keeping the newest
                #expect(try store.totalUsage() == StoreUsage(count: 5, bytes: 50))
                #expect(try store.contains("k10", in: "ns"))
                #expect(try Self.watermark(url) == 0, "nothing folded: the limit read the rows above the watermark")
            }
        }

        @Test("A store with a limit folds every limitedFoldInterval writes, one without every foldInterval")
        func limitedStoresFoldSooner() throws {
            try DiskTest.withTemporaryDirectory { url in
                let limited = try DiskStore(
                    directory: url.appendingPathComponent("limited"), configuration: .init(countLimit: 1_000))
                let unlimited = try DiskStore(directory: url.appendingPathComponent("unlimited"))
                for i in 0..<_DiskIndex.limitedFoldInterval {
                    #expect(try Self.watermark(url.appendingPathComponent("limited")) == 0)
                    for store in [limited, unlimited] {
                        try store.set(Data(count: 1), for: "k\(i)", in: "ns", storedAt: Date(), expiresAt: nil)
                    }
                }
                #expect(
                    try Self.watermark(url.appendingPathComponent("limited")) == Int64(_DiskIndex.limitedFoldInterval))
                #expect(try Self.watermark(url.appendingPathComponent("unlimited")) == 0)
                #expect(
                    try limited.totalUsage()
                        == StoreUsage(count: _DiskIndex.limitedFoldInterval, bytes: _DiskIndex.limitedFoldInterval))
            }
        }
    }
}
