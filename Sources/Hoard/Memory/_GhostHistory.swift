/// What W-TinyLFU's adaptive window learns from: the key hashes of the last
/// `capacity` entries to leave the admission window, and of the last `capacity`
/// entries evicted from the main space. A miss on a key still remembered on one side
/// is a request the cache would have answered had that side been `capacity` entries
/// larger, so each side counts the marginal value of growing it (the adaptation of
/// ARC, Megiddo & Modha, FAST 2003, applied to W-TinyLFU's split).
///
/// Both sides are FIFO rings of hashes over one open-addressing table (linear
/// probing, deletion by backward shift) that says which ring slot remembers a hash.
/// The table is at most half full, so a lookup probes a few adjacent slots.
///
/// - Complexity: `remember` and `forget` are O(1) on average.
struct _GhostHistory {
    /// Which part of the cache a remembered entry left.
    enum Side: Int {
        /// The entry left the admission window (as a candidate for the main space).
        case window = 0
        /// The entry was evicted from the main space.
        case main = 1
    }

    /// Hashes remembered per side; 0 when the history is off.
    let capacity: Int
    /// The two rings, `window` at `0..<capacity`, `main` at `capacity..<2 × capacity`.
    var rings: [UInt64]
    /// The slot of each ring the next hash goes to (0..<capacity).
    var next: (window: Int, main: Int) = (0, 0)
    /// The table's hashes, valid where `tableSlots` is not -1.
    var tableHashes: [UInt64]
    /// The ring slot that remembers the hash at the same index, or -1 (empty).
    var tableSlots: [Int32]
    let tableMask: Int
    let tableShift: UInt64

    /// A history of `capacity` hashes a side (at most 2^28); 0 turns it off.
    init(capacity: Int) {
        precondition(capacity >= 0 && capacity <= 1 << 28, "ghost history of \(capacity) entries")
        self.capacity = capacity
        rings = Array(repeating: 0, count: 2 * capacity)
        // At least twice the 2 × capacity hashes the rings can hold.
        let size = capacity == 0 ? 1 : _FrequencySketch.powerOfTwo(atLeast: 4 * capacity)
        tableHashes = Array(repeating: 0, count: size)
        tableSlots = Array(repeating: -1, count: size)
        tableMask = size - 1
        tableShift = UInt64(64 - size.trailingZeroBitCount)
    }

    var isEnabled: Bool { capacity > 0 }

    /// The table index a hash's probe starts at (the hash's high bits, after a
    /// multiplication, as the hash's low bits already place the key in the index and
    /// the sketch).
    func home(_ hash: UInt64) -> Int {
        tableShift == 64 ? 0 : Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> tableShift)
    }

    /// The table index holding `hash`, or nil.
    func find(_ hash: UInt64) -> Int? {
        var j = home(hash)
        while tableSlots[j] >= 0 {
            if tableHashes[j] == hash { return j }
            j = (j + 1) & tableMask
        }
        return nil
    }

    /// Remembers that the entry whose key hashes to `hash` left `side`, forgetting
    /// that side's oldest hash when its ring is full. A hash remembered already is
    /// now remembered by this newer slot only.
    mutating func remember(_ hash: UInt64, leaving side: Side) {
        let position = side == .window ? next.window : next.main
        let slot = side.rawValue * capacity + position
        // The slot's old hash, if the table still says this slot remembers it (a
        // slot never written, or whose hash was forgotten or remembered again
        // later, remembers nothing).
        if let j = find(rings[slot]), tableSlots[j] == Int32(slot) { delete(at: j) }
        let following = position + 1 == capacity ? 0 : position + 1
        if side == .window { next.window = following } else { next.main = following }
        rings[slot] = hash
        // One walk of the probe run: it ends at the hash (remembered again) or at the
        // first empty slot, where a new hash goes.
        var j = home(hash)
        while tableSlots[j] >= 0 && tableHashes[j] != hash { j = (j + 1) & tableMask }
        tableHashes[j] = hash
        tableSlots[j] = Int32(slot)
    }

    /// Forgets `hash` and returns the side that remembered it, or nil when neither
    /// does.
    mutating func forget(_ hash: UInt64) -> Side? {
        guard let j = find(hash) else { return nil }
        let side: Side = Int(tableSlots[j]) < capacity ? .window : .main
        delete(at: j)
        return side
    }

    /// Empties table slot `j`, moving later entries of its probe run back so that
    /// every remaining hash is still found from its home slot.
    mutating func delete(at j: Int) {
        var hole = j
        var k = (j + 1) & tableMask
        while tableSlots[k] >= 0 {
            let h = home(tableHashes[k])
            // Move k into the hole unless its home lies cyclically in (hole, k].
            let stays = hole <= k ? (hole < h && h <= k) : (hole < h || h <= k)
            if !stays {
                tableHashes[hole] = tableHashes[k]
                tableSlots[hole] = tableSlots[k]
                hole = k
            }
            k = (k + 1) & tableMask
        }
        tableSlots[hole] = -1
    }

    /// Forgets everything.
    mutating func removeAll() {
        guard isEnabled else { return }
        next = (0, 0)
        for j in tableSlots.indices { tableSlots[j] = -1 }
    }
}
