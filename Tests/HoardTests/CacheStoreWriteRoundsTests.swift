import Foundation
import Testing

@testable import Hoard

@Suite("Splitting a batch of store writes into rounds")
struct CacheStoreWriteRoundsTests {
    private let now = Date(timeIntervalSince1970: 1_700_000_000)

    private func set(_ key: String, bytes: Int = 1) -> CacheStoreWrite {
        .set(Data(count: bytes), for: key, in: "ns", storedAt: now, expiresAt: nil)
    }

    @Test("A removeAll is a round of its own, between the runs of changes before and after it, in order")
    func removeAllSplits() {
        let batch: [CacheStoreWrite] = [
            .removeAll(in: "a"), set("1"), .removeValue(for: "2", in: "ns"), .removeAll(in: "b"), .removeAll(in: "c"),
            set("3"),
        ]
        #expect(
            CacheStoreWrite.rounds(of: batch, maximumChanges: 10) == [
                .removeAll("a"), .changes(batch[1..<3]), .removeAll("b"), .removeAll("c"), .changes(batch[5..<6]),
            ])
        #expect(CacheStoreWrite.rounds(of: [], maximumChanges: 10).isEmpty)
    }

    @Test("Runs hold at most maximumChanges changes, and end once their values reach maximumBytes")
    func limits() {
        let batch = (0..<7).map { set("\($0)") }
        #expect(
            CacheStoreWrite.rounds(of: batch, maximumChanges: 3) == [
                .changes(batch[0..<3]), .changes(batch[3..<6]), .changes(batch[6..<7]),
            ])
        let sized = [
            set("a", bytes: 4), set("b", bytes: 4), set("c", bytes: 1), .removeValue(for: "d", in: "ns"),
            set("e", bytes: 100),
        ]
        // A run ends once its values reach 8 bytes; a value larger than the budget still
        // goes, alone or at the end of a run.
        #expect(
            CacheStoreWrite.rounds(of: sized, maximumChanges: 10, maximumBytes: 8) == [
                .changes(sized[0..<2]), .changes(sized[2..<5]),
            ])
        #expect(
            CacheStoreWrite.rounds(of: sized, maximumChanges: 10, maximumBytes: 1) == [
                .changes(sized[0..<1]), .changes(sized[1..<2]), .changes(sized[2..<3]), .changes(sized[3..<5]),
            ])
    }
}
