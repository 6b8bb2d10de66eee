import Foundation
import Testing

@testable import Hoard

/// The rows of the table in `_SuspectKeys`, one by one.
@Suite("Cache writer: the keys a store may hold older values of")
struct SuspectKeysTests {
    static let disk = CacheTier.local(0)
    static let remote = CacheTier.remote(0)

    static func set(_ key: String) -> CacheStoreWrite {
        .set(Data("v".utf8), for: key, in: "test", storedAt: Date(timeIntervalSince1970: 0), expiresAt: nil)
    }

    static func remove(_ key: String) -> CacheStoreWrite { .removeValue(for: key, in: "test") }

    @Test("A change not applied makes its key suspect in that store only; a change applied clears it")
    func keyRows() {
        var suspects = _SuspectKeys()
        suspects.settle(
            [Self.set("a"), Self.remove("b"), Self.set("c")], applied: [false, false, true], in: Self.disk)
        #expect(suspects.isSuspect("a", in: Self.disk))
        #expect(suspects.isSuspect("b", in: Self.disk))
        #expect(!suspects.isSuspect("c", in: Self.disk))
        #expect(!suspects.isSuspect("a", in: Self.remote), "another store is not concerned")
        #expect(suspects.repairs(for: Self.disk, namespace: "test") == [Self.remove("a"), Self.remove("b")])
        #expect(suspects.repairs(for: Self.remote, namespace: "test").isEmpty)

        suspects.settle([Self.remove("a"), Self.set("b")], applied: [true, true], in: Self.disk)
        #expect(!suspects.isSuspect("a", in: Self.disk))
        #expect(!suspects.isSuspect("b", in: Self.disk))
        #expect(suspects.stores.isEmpty, "a store with no suspect key is forgotten")
    }

    @Test("The last change of a key in the share decides")
    func lastChangeDecides() {
        var suspects = _SuspectKeys()
        suspects.settle([Self.set("a"), Self.set("a")], applied: [false, true], in: Self.disk)
        #expect(!suspects.isSuspect("a", in: Self.disk))
        suspects.settle([Self.set("a"), Self.set("a")], applied: [true, false], in: Self.disk)
        #expect(suspects.isSuspect("a", in: Self.disk))
    }

    @Test("A clear applied forgets every suspect key; a clear not applied makes the whole store suspect")
    func clearRows() {
        var suspects = _SuspectKeys()
        suspects.settle([Self.set("a")], applied: [false], in: Self.disk)
        suspects.settle([.removeAll(in: "test")], applied: [true], in: Self.disk)
        #expect(!suspects.isSuspect("a", in: Self.disk))

        suspects.settle([.removeAll(in: "test")], applied: [false], in: Self.disk)
        #expect(suspects.isSuspect("never-written", in: Self.disk))
        #expect(suspects.repairs(for: Self.disk, namespace: "test") == [.removeAll(in: "test")])
        suspects.settle([Self.set("a")], applied: [true], in: Self.disk)
        #expect(suspects.isSuspect("a", in: Self.disk), "a change of one key leaves the rest suspect")
        suspects.settle([.removeAll(in: "test"), Self.set("a")], applied: [true, false], in: Self.disk)
        #expect(suspects.isSuspect("a", in: Self.disk))
        #expect(!suspects.isSuspect("b", in: Self.disk))
    }

    @Test("Past the limit, every key of the store is suspect")
    func limit() {
        var suspects = _SuspectKeys()
        let keys = (0..<_SuspectKeys.limit).map { "k\($0)" }
        suspects.settle(keys.map(Self.set), applied: keys.map { _ in false }, in: Self.disk)
        #expect(suspects.stores[Self.disk] != .everything, "the limit itself is kept key by key")
        #expect(!suspects.isSuspect("other", in: Self.disk))
        suspects.settle([Self.set("one-more")], applied: [false], in: Self.disk)
        #expect(suspects.stores[Self.disk] == .everything)
        #expect(suspects.isSuspect("other", in: Self.disk))
    }
}
