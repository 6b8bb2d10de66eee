import Foundation
import Hoard
import Testing

@Suite("Coarse system clock")
struct CoarseSystemClockTests {
    /// Far longer than any kernel tick (at most 10 ms), so a stalled machine cannot
    /// fail the lower bound: a stall between the reads only moves the coarse time on.
    static let slack: TimeInterval = 0.05

    @Test("Reads the wall clock: never ahead of Date(), at most a tick behind the Date() read before it")
    func readsTheWallClock() {
        let clock = CoarseSystemClock()
        for _ in 0..<1_000 {
            let before = Date()
            let coarse = clock.now()
            let after = Date()
            #expect(coarse <= after)
            #expect(coarse >= before.addingTimeInterval(-Self.slack))
        }
    }

    @Test("A MemoryCache on the coarse clock stores dates within a tick of the write, and lifetimes from them")
    func memoryCacheDates() throws {
        let cache = try MemoryCache<String, Int>(configuration: .init(countLimit: 10), clock: CoarseSystemClock())
        let before = Date()
        cache.set(1, for: "a", expires: .after(3_600))
        let after = Date()
        let entry = try #require(cache.entry(for: "a"))
        #expect(entry.value == 1)
        #expect(entry.storedAt <= after)
        #expect(entry.storedAt >= before.addingTimeInterval(-Self.slack))
        let expiresAt = try #require(entry.expiresAt)
        #expect(abs(expiresAt.timeIntervalSince(entry.storedAt) - 3_600) < 0.001)
        // An entry stored before a date is never newer than it.
        #expect(cache.entry(for: "a", newerThan: after) == nil)
    }
}
