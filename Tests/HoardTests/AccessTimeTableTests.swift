import Testing

@testable import Hoard

/// `_AccessTimeTable`: the disk access log's open-addressing map from row id to the
/// last recorded access. Also run in release builds (`scripts/test`), as it keeps
/// its slots behind an unsafe pointer.
@Suite("Access time table")
struct AccessTimeTableTests {
    /// Records `time` for `id`, as the access log does: in place when present,
    /// inserted otherwise.
    func set(_ table: inout _AccessTimeTable, _ id: Int64, time: Double, generation: UInt32 = 0) {
        let i = table.slot(for: id)
        if table[i].isOccupied {
            table[i].time = time
            table[i].generation = generation
        } else {
            _ = table.insert(.init(id: id, time: time, generation: generation, isOccupied: true), at: i)
        }
    }

    /// The time recorded for `id`, or nil.
    func time(_ table: borrowing _AccessTimeTable, _ id: Int64) -> Double? {
        let slot = table[table.slot(for: id)]
        return slot.isOccupied ? slot.time : nil
    }

    @Test("Ids that share a home slot, and ids at the ends of Int64, are each found with their own values")
    func collisionsAndExtremes() {
        var table = _AccessTimeTable(capacity: 64)
        let shift = table.shift
        // Ids whose probes all start at slot 5.
        let colliding = (1...50_000 as ClosedRange<Int64>).lazy
            .filter { _AccessTimeTable.home(of: $0, shift: shift) == 5 }.prefix(7)
        let absent = colliding.last!
        let ids = Array(colliding.dropLast()) + [0, -1, .min, .max]
        #expect(ids.count == 10)
        for (n, id) in ids.enumerated() { set(&table, id, time: Double(n)) }
        for (n, id) in ids.enumerated() { #expect(time(table, id) == Double(n), "id \(id)") }
        #expect(table.count == ids.count)
        #expect(time(table, absent) == nil, "an absent id sharing their home slot")
        // Updating one of them leaves the others.
        set(&table, ids[2], time: 100, generation: 7)
        #expect(table[table.slot(for: ids[2])].generation == 7)
        for (n, id) in ids.enumerated() where n != 2 { #expect(time(table, id) == Double(n)) }
        #expect(table.count == ids.count)
    }

    @Test("The table doubles before it is more than half full, keeping every row, and says it was reallocated")
    func growth() {
        var table = _AccessTimeTable(capacity: 16)
        var reallocations = 0
        for id in 1...1_000 as ClosedRange<Int64> {
            let i = table.slot(for: id)
            if table.insert(.init(id: id, time: Double(id), generation: 0, isOccupied: true), at: i) {
                reallocations += 1
            }
            #expect(table.count <= table.capacity / 2)
        }
        #expect(table.count == 1_000)
        #expect(table.capacity == 2_048)
        #expect(reallocations == 7, "16 → 2,048 slots")
        for id in 1...1_000 as ClosedRange<Int64> { #expect(time(table, id) == Double(id)) }
        #expect(time(table, 1_001) == nil)
    }

    @Test("Pruning keeps exactly the rows asked for, at most half full, and at least the minimum capacity")
    func pruning() {
        var table = _AccessTimeTable()
        for id in 1...3_000 as ClosedRange<Int64> { set(&table, id, time: Double(id % 3)) }
        let pruned = table.pruned(keeping: { $0.time == 0 }, minimumCapacity: 16)
        #expect(pruned.count == 1_000)
        #expect(pruned.count <= pruned.capacity / 2)
        for id in 1...3_000 as ClosedRange<Int64> {
            #expect(time(pruned, id) == (id % 3 == 0 ? 0 : nil), "id \(id)")
        }
        let empty = table.pruned(keeping: { _ in false }, minimumCapacity: 1_024)
        #expect(empty.count == 0 && empty.capacity == 1_024)
        #expect(time(empty, 3) == nil)
    }

    @Test("Random inserts, updates and prunes agree with a dictionary")
    func agreesWithADictionary() {
        var generator = SplitMix64(seed: 36)
        var table = _AccessTimeTable(capacity: 16)
        var model: [Int64: Double] = [:]
        for step in 0..<20_000 {
            // Ids from a small range (many updates) and from all of Int64.
            let id =
                generator.next() % 4 == 0
                ? Int64(bitPattern: generator.next()) : Int64(generator.next() % 3_000)
            let time = Double(step)
            set(&table, id, time: time)
            model[id] = time
            if step % 5_000 == 4_999 {
                table = table.pruned(keeping: { time - $0.time < 2_000 }, minimumCapacity: 16)
                model = model.filter { time - $0.value < 2_000 }
            }
        }
        #expect(table.count == model.count)
        for (id, time) in model { #expect(self.time(table, id) == time, "id \(id)") }
        for _ in 0..<1_000 {
            let id = Int64(bitPattern: generator.next())
            #expect(time(table, id) == model[id])
        }
    }
}
