/// Row id → when a ``_DiskAccessLog`` last recorded an access to the row, and in
/// which of its takes' generations: the map every disk hit probes to decide whether
/// its access needs recording.
///
/// An open-addressing table (linear probing) whose slot holds the id and both
/// values together, at most half full. A probe reads one slot, usually one cache
/// line, where a `Dictionary` reads three arrays (its occupancy bitmap, its keys,
/// its values) after hashing the key with SipHash; here the hash is one
/// multiplication. On a store of 100,000 entries the table outgrows the processor's
/// caches, so the line a probe needs is fetched from memory on most reads; a reader
/// can start that fetch early with ``_DiskAccessLog/prefetch(id:)``, as soon as it
/// knows the row's id (`Benchmarks/README.md`, "the access log's table").
///
/// There is no removal of one id: ``pruned(keeping:minimumCapacity:)`` builds a new
/// table of the slots to keep, which the log does at a take once the table has
/// doubled.
///
/// A slot is 24 bytes, and a table that has grown is between a quarter and half
/// full: 48 to 96 bytes per row read within the resolution (a `Dictionary` of the
/// same rows took 32 to 64, at most three quarters full).
///
/// - Complexity: ``slot(for:)`` and ``insert(_:at:)`` are O(1) on average (a
///   rehash, when the table doubles, is O(count)).
struct _AccessTimeTable: ~Copyable {
    /// One row's last recorded access; `isOccupied` is false in an empty slot.
    struct Slot {
        var id: Int64
        var time: Double
        var generation: UInt32
        var isOccupied: Bool

        static let empty = Slot(id: 0, time: 0, generation: 0, isOccupied: false)
    }

    /// The slots, a power of two of them, all initialized.
    private var slots: _SlotArray<Slot>
    /// 64 − log2 of the capacity: a probe starts at the top bits of the id's hash.
    private(set) var shift: UInt64
    /// How many slots are occupied.
    private(set) var count = 0

    /// An empty table of `capacity` slots (rounded up to a power of two, at least 16).
    init(capacity: Int = 1_024) {
        let size = _FrequencySketch.powerOfTwo(atLeast: max(capacity, 16))
        slots = _SlotArray(repeating: .empty, count: size)
        shift = UInt64(64 - size.trailingZeroBitCount)
    }

    /// How many slots the table has.
    var capacity: Int { slots.count }

    /// The address of the first slot, for ``_DiskAccessLog/prefetch(id:)``; it
    /// changes when the table grows or is pruned.
    var baseAddress: UInt { UInt(bitPattern: UnsafeRawPointer(slots.base)) }

    /// The slot a probe for `id` starts at, in a table whose ``shift`` is `shift`.
    @inline(__always)
    static func home(of id: Int64, shift: UInt64) -> Int {
        // Fibonacci hashing: the top bits of the product mix every bit of the id
        // (row ids are consecutive integers, whose low bits alone would do, but a
        // damaged index may hold any).
        Int(truncatingIfNeeded: (UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The slot holding `id`, or the empty slot where ``insert(_:at:)`` is to put
    /// it.
    @inline(__always)
    func slot(for id: Int64) -> Int {
        let mask = slots.count - 1
        var i = Self.home(of: id, shift: shift)
        // At most half full: an empty slot ends every probe.
        while slots[i].isOccupied, slots[i].id != id { i = (i + 1) & mask }
        return i
    }

    /// The slot at `i` (from ``slot(for:)``).
    subscript(i: Int) -> Slot {
        get { slots[i] }
        set {
            precondition(newValue.isOccupied == slots[i].isOccupied, "a slot is filled only by insert")
            slots[i] = newValue
        }
    }

    /// Puts `slot` (occupied) in the empty slot `i` that ``slot(for:)`` returned
    /// for its id, doubling the table when that makes it more than half full.
    ///
    /// - Returns: Whether the table was reallocated (its ``baseAddress`` changed).
    mutating func insert(_ slot: Slot, at i: Int) -> Bool {
        precondition(slot.isOccupied && !slots[i].isOccupied, "insert into an empty slot")
        slots[i] = slot
        count += 1
        guard count > slots.count / 2 else { return false }
        self = pruned(keeping: { _ in true }, minimumCapacity: 2 * slots.count)
        return true
    }

    /// A new table of the occupied slots for which `keep` is true, at most half
    /// full and of at least `minimumCapacity` slots.
    func pruned(keeping keep: (Slot) -> Bool, minimumCapacity: Int) -> _AccessTimeTable {
        var kept = 0
        for i in 0..<slots.count where slots[i].isOccupied && keep(slots[i]) { kept += 1 }
        var table = _AccessTimeTable(capacity: max(minimumCapacity, 2 * kept))
        let mask = table.slots.count - 1
        for i in 0..<slots.count where slots[i].isOccupied && keep(slots[i]) {
            var j = Self.home(of: slots[i].id, shift: table.shift)
            while table.slots[j].isOccupied { j = (j + 1) & mask }
            table.slots[j] = slots[i]
        }
        table.count = kept
        return table
    }
}
