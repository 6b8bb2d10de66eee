import Testing

@testable import Hoard

@Suite("Ghost history of W-TinyLFU's adaptive window")
struct GhostHistoryTests {
    @Test("Remembers which side a hash left, and forgets it once asked")
    func remembersSide() {
        var history = _GhostHistory(capacity: 4)
        history.remember(10, leaving: .window)
        history.remember(20, leaving: .main)
        #expect(history.forget(10) == .window)
        #expect(history.forget(20) == .main)
        #expect(history.forget(10) == nil)
        #expect(history.forget(30) == nil)
    }

    @Test("Each side forgets its oldest hash beyond its capacity, independently of the other side")
    func fifoPerSide() {
        var history = _GhostHistory(capacity: 3)
        for hash: UInt64 in 1...5 { history.remember(hash, leaving: .window) }
        history.remember(100, leaving: .main)
        #expect(history.forget(1) == nil)
        #expect(history.forget(2) == nil)
        #expect(history.forget(3) == .window)
        #expect(history.forget(5) == .window)
        #expect(history.forget(100) == .main)
    }

    @Test("A hash remembered again belongs to its newest side and outlives its older slot")
    func rememberedAgain() {
        var history = _GhostHistory(capacity: 2)
        history.remember(7, leaving: .window)
        history.remember(7, leaving: .main)
        // The window's ring overwrites 7's old slot; the main side still has it.
        history.remember(8, leaving: .window)
        history.remember(9, leaving: .window)
        #expect(history.forget(7) == .main)
    }

    @Test("removeAll forgets everything")
    func removeAll() {
        var history = _GhostHistory(capacity: 8)
        for hash: UInt64 in 0..<8 { history.remember(hash, leaving: hash.isMultiple(of: 2) ? .window : .main) }
        history.removeAll()
        for hash: UInt64 in 0..<8 { #expect(history.forget(hash) == nil) }
        history.remember(3, leaving: .main)
        #expect(history.forget(3) == .main)
    }

    /// A small hash range keeps the table half full, so probe runs form, wrap
    /// around the table's end and are cut by backward-shift deletions. The model
    /// keeps the same rings with a dictionary in place of the open-addressing table.
    @Test("Matches a dictionary model over a long random run", arguments: [1, 5, 64])
    func matchesModel(capacity: Int) {
        var history = _GhostHistory(capacity: capacity)
        var rings: [[UInt64?]] = Array(repeating: Array(repeating: nil, count: capacity), count: 2)
        var next = [0, 0]
        var remembered: [UInt64: (side: _GhostHistory.Side, position: Int)] = [:]
        var state: UInt64 = 0x1234_5678
        func random(_ bound: UInt64) -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (state >> 33) % bound
        }
        for _ in 0..<20_000 {
            let hash = random(UInt64(4 * capacity + 3)) &* 0x0123_4567_89AB_CDEF
            if random(3) < 2 {
                let side: _GhostHistory.Side = random(2) == 0 ? .window : .main
                let position = next[side.rawValue]
                if let old = rings[side.rawValue][position], let slot = remembered[old],
                    slot.side == side, slot.position == position
                {
                    remembered[old] = nil
                }
                rings[side.rawValue][position] = hash
                next[side.rawValue] = (position + 1) % capacity
                remembered[hash] = (side, position)
                history.remember(hash, leaving: side)
            } else {
                #expect(history.forget(hash) == remembered.removeValue(forKey: hash)?.side)
            }
        }
        for hash in remembered.keys { #expect(history.forget(hash) == remembered[hash]?.side) }
    }

    @Test("A history of capacity 0 is off and allocates no rings")
    func off() {
        let history = _GhostHistory(capacity: 0)
        #expect(!history.isEnabled)
        #expect(history.rings.isEmpty)
    }
}
