import Foundation
import Testing

@testable import Hoard

/// How a store's share of a batch is retried when the store refuses a change, and
/// which keys the store must then remove so that it serves no older value.
@Suite("Writer: a store's share of a batch")
struct StoreBatchTests {
    static let date = Date(timeIntervalSince1970: 0)

    static func set(_ key: String) -> CacheStoreWrite {
        .set(Data(key.utf8), for: key, in: "ns", storedAt: date, expiresAt: nil)
    }

    /// Runs `share` against a store that applies every range except those holding a
    /// position in `refused`, which fail with `refused[position]`.
    static func run(_ share: inout _StoreBatch, refused: [Int: HoardError]) {
        while let range = share.next {
            let error = range.lazy.compactMap { refused[$0] }.first
            share.finish(range, error: error)
        }
    }

    @Test("A change refused for itself fails alone; the rest of the share is tried one by one")
    func changeSpecificFailureFailsAlone() {
        var share = _StoreBatch(count: 4)
        Self.run(&share, refused: [1: HoardError(.valueTooLarge, "too large")])
        #expect(share.failures.map(\.position) == [1])
    }

    @Test("A failure of the store ends the attempt: every change left fails with it")
    func storeFailureEndsTheShare() {
        var share = _StoreBatch(count: 4)
        Self.run(&share, refused: [1: HoardError(.ioFailed, "gone")])
        #expect(share.failures.map(\.position) == [1, 2, 3])
    }

    @Test("The keys to remove: those whose last change the store refused for itself, except keys it cannot hold")
    func staleKeysAreTheLastFailedChanges() {
        let writes: [CacheStoreWrite] = [
            Self.set("a"), Self.set("b"), .removeValue(for: "a", in: "ns"), Self.set("c"), Self.set("d"),
            .removeValue(for: "e", in: "ns"), .removeAll(in: "ns"),
        ]
        var share = _StoreBatch(count: writes.count)
        let tooLarge = HoardError(.valueTooLarge, "too large")
        Self.run(
            &share,
            refused: [
                0: tooLarge, 1: tooLarge, 3: HoardError(.invalidName, "bad key"), 4: tooLarge,
                5: HoardError(.storageFull, "full"), 6: HoardError(.storageFull, "full"),
            ])
        #expect(share.failures.map(\.position) == [0, 1, 3, 4, 5, 6])
        // "a" was removed afterwards, "c" cannot be held, the clear names no key.
        #expect(share.staleKeys(of: writes) == [1, 4, 5])
        #expect(
            _CacheWriter<String, Data>.removals(of: share.staleKeys(of: writes), in: writes) == [
                .removeValue(for: "b", in: "ns"), .removeValue(for: "d", in: "ns"), .removeValue(for: "e", in: "ns"),
            ])
    }

    @Test("Nothing refused, or the store failed as a whole: nothing to remove")
    func noFailureNoRemoval() {
        let writes = [Self.set("a"), Self.set("b")]
        var share = _StoreBatch(count: writes.count)
        Self.run(&share, refused: [:])
        #expect(share.failures.isEmpty)
        #expect(share.staleKeys(of: writes).isEmpty)
        var failed = _StoreBatch(count: writes.count)
        Self.run(&failed, refused: [0: HoardError(.busy, "locked")])
        #expect(failed.failures.map(\.position) == [0, 1])
        #expect(failed.staleKeys(of: writes).isEmpty)
    }
}
