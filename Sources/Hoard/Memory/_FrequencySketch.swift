internal import CHoardPrefetch

/// A 4-bit count-min sketch with a doorkeeper, the frequency estimate behind
/// W-TinyLFU (Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache
/// Admission Policy"; the layout follows Caffeine's `FrequencySketch`).
///
/// - Each 64-bit word holds sixteen 4-bit counters; an item maps to four counters in
///   one 64-byte block of the table (one cache line), and its estimate is the
///   smallest of them (saturating at 15).
/// - The doorkeeper, a Bloom filter, absorbs an item's first occurrence in each
///   sample period so that one-hit wonders never reach the counters. Unlike the
///   paper, the doorkeeper bit does not add one to the estimate: an item seen once
///   estimates 0, so a one-hit wonder never displaces an entry whose history has
///   decayed. This keeps W-TinyLFU from churning on loops longer than the sample
///   period (where every estimate would otherwise favour the newcomer), and costs
///   nothing measurable on skewed workloads (see the hit-ratio benchmark).
/// - The doorkeeper has 128 bits per entry of capacity and an item sets four bits
///   of one 64-bit word. A sample period puts `10 × capacity` items in it, and each
///   false positive lets a newcomer's first occurrence reach the counters, where it
///   beats an entry whose history has decayed: on a loop longer than the period
///   that is all the churn there is. Four bits of 128 keep false positives rarer
///   than two bits of 64 would, for 8 more bytes per entry (the loop trace's rows
///   in `Benchmarks/README.md` show the difference).
/// - After `10 × capacity` additions every counter is halved and the doorkeeper is
///   cleared ("reset"), so old popularity fades.
/// - The capacity is at most `maxCapacity`, 2^20 entries: the table and the
///   doorkeeper (24 to 48 bytes an entry of capacity, as both are powers of two)
///   are allocated up front, so a larger cache gets the sketch of a 2^20-entry one
///   (24 MiB, reset every 10 × 2^20 additions).
///
/// - Complexity: `increment` and `frequency` are O(1); a reset is O(capacity) and
///   happens once every `10 × capacity` additions, O(1) amortised.
@usableFromInline
struct _FrequencySketch {
    var table: [UInt64]
    let tableMask: Int
    var doorkeeper: [UInt64]
    let doorkeeperMask: UInt64
    let sampleSize: Int
    var additions: Int = 0
    /// How many resets there have been.
    var resets = 0
    /// Occurrences recorded but not yet counted, oldest first (`record`).
    var pending: [UInt64]
    var pendingCount = 0
    /// Keeps the loads of `flush`'s first pass from being optimised away.
    var touched: UInt64 = 0
    static let pendingCapacity = 32

    static let seeds: (UInt64, UInt64, UInt64, UInt64) = (
        0xc3a5_c85c_97cb_3127, 0xb492_b66f_be98_f273, 0x9ae1_6a3b_2f90_404f, 0xcbf2_9ce4_8422_2325
    )
    static let resetMask: UInt64 = 0x7777_7777_7777_7777
    static let oneMask: UInt64 = 0x1111_1111_1111_1111

    /// The largest capacity a sketch is sized for.
    static let maxCapacity = 1 << 20

    /// Creates a sketch sized for a cache of `capacity` entries, at most
    /// `maxCapacity`.
    init(capacity: Int) {
        let capacity = min(capacity, Self.maxCapacity)
        let size = Self.powerOfTwo(atLeast: max(capacity, 16))
        table = Array(repeating: 0, count: size)
        tableMask = size - 1
        let doorkeeperBits = Self.powerOfTwo(atLeast: max(capacity, 16) * 128)
        doorkeeper = Array(repeating: 0, count: doorkeeperBits / 64)
        doorkeeperMask = UInt64(doorkeeperBits - 1)
        sampleSize = 10 * max(capacity, 1)
        pending = Array(repeating: 0, count: Self.pendingCapacity)
    }

    /// The smallest power of two that is at least `n`, which must be at most 2^62.
    static func powerOfTwo(atLeast n: Int) -> Int {
        precondition(n <= 1 << 62, "no power of two of at least \(n) fits in Int")
        var size = 1
        while size < n { size <<= 1 }
        return size
    }

    /// Mixes a key's `hashValue` into the 64-bit hash the sketch uses.
    // @inlinable: MemoryCacheBenchmarks "get-hit 1T" and "set 1T" (every read and write runs it).
    @inlinable
    static func spread(_ hashValue: Int) -> UInt64 {
        var h = UInt64(bitPattern: Int64(hashValue))
        h = (h ^ (h >> 33)) &* 0xff51_afd7_ed55_8ccd
        h = (h ^ (h >> 33)) &* 0xc4ce_b9fe_1a85_ec53
        return h ^ (h >> 33)
    }

    /// The word of the table holding counter `i` (0..<4) of an item, and the counter's
    /// bit shift in it. The four counters of an item lie in one 64-byte block of
    /// eight words (each in its own pair of words), so that reading or incrementing
    /// them touches one cache line, as in Caffeine's sketch.
    func counter(_ hash: UInt64, _ i: Int) -> (word: Int, shift: UInt64) {
        Self.counter(hash, i, tableMask: tableMask)
    }

    /// `counter(_:_:)` for a table of `tableMask + 1` words.
    static func counter(_ hash: UInt64, _ i: Int, tableMask: Int) -> (word: Int, shift: UInt64) {
        let block = counterBlock(hash, tableMask: tableMask)
        var h = (hash &+ Self.seeds.0) &* Self.seeds.1
        h ^= h >> 29
        let bits = h >> UInt64(i << 3)
        return (block + (i << 1) + Int(bits & 1), ((bits >> 1) & 15) << 2)
    }

    /// The first of the eight words that hold an item's counters, in a table of
    /// `tableMask + 1` words.
    static func counterBlock(_ hash: UInt64, tableMask: Int) -> Int {
        (Int(truncatingIfNeeded: hash) & tableMask) & ~7
    }

    /// The doorkeeper word of an item, in a doorkeeper of `doorkeeperMask + 1` bits.
    static func doorkeeperWord(_ hash: UInt64, doorkeeperMask: UInt64) -> Int {
        Int(truncatingIfNeeded: (hash >> 32) & (doorkeeperMask >> 6))
    }

    /// The doorkeeper word of an item and the four bits of it the item sets: one
    /// word, so one cache line (a blocked Bloom filter).
    func doorkeeperBits(_ hash: UInt64) -> (word: Int, bits: UInt64) {
        Self.doorkeeperBits(hash, doorkeeperMask: doorkeeperMask)
    }

    /// `doorkeeperBits(_:)` for a doorkeeper of `doorkeeperMask + 1` bits.
    static func doorkeeperBits(_ hash: UInt64, doorkeeperMask: UInt64) -> (word: Int, bits: UInt64) {
        let word = doorkeeperWord(hash, doorkeeperMask: doorkeeperMask)
        let bits: UInt64 =
            (1 << (hash & 63)) | (1 << ((hash >> 6) & 63)) | (1 << ((hash >> 12) & 63))
            | (1 << ((hash >> 18) & 63))
        return (word, bits)
    }

    /// The estimated number of times `hash` was added since the last reset, not
    /// counting the first occurrence the doorkeeper absorbed; at most 15.
    func frequency(_ hash: UInt64) -> Int {
        var smallest = 15
        for i in 0..<4 {
            let (word, shift) = counter(hash, i)
            let count = Int((table[word] >> shift) & 0xF)
            if count < smallest { smallest = count }
        }
        return smallest
    }

    /// Starts loading the two cache lines an increment of `hash` touches, the
    /// doorkeeper's word and the counters' block (which may straddle two lines), and
    /// returns at once: it changes nothing, and costs three prefetch instructions and
    /// the address arithmetic.
    ///
    /// The walk that counts every slot's hits (`_TinyLFUPolicy.countAllHits`) calls
    /// it some slots ahead of the one it counts, so that their misses overlap.
    func prefetch(_ hash: UInt64) {
        let word = Self.doorkeeperWord(hash, doorkeeperMask: doorkeeperMask)
        let block = Self.counterBlock(hash, tableMask: tableMask)
        doorkeeper.withUnsafeBufferPointer { hoard_prefetch_for_write($0.baseAddress.map { $0 + word }) }
        table.withUnsafeBufferPointer { table in
            hoard_prefetch_for_write(table.baseAddress.map { $0 + block })
            hoard_prefetch_for_write(table.baseAddress.map { $0 + block + 7 })
        }
    }

    /// Records one occurrence of `hash`, to be counted by the next `flush`, which
    /// runs when 32 are waiting and must run before any `frequency` is read.
    ///
    /// An increment misses the processor's caches twice on a large sketch (the
    /// doorkeeper's word, then the counters' block). Counted in batches, the loads of
    /// many increments are in flight at once. The order of occurrences, and so every
    /// estimate and reset, is the same as when each is counted at once. Insertions
    /// record here; hits are counted on their slots instead (`_TinyLFUPolicy`).
    mutating func record(_ hash: UInt64) {
        pending[pendingCount] = hash
        pendingCount &+= 1
        if pendingCount == Self.pendingCapacity { flush() }
    }

    /// Counts every recorded occurrence, oldest first.
    mutating func flush() {
        // First pass: independent loads of every word the increments will touch,
        // which the processor overlaps; the second pass then finds them in cache.
        var sink: UInt64 = 0
        for j in 0..<pendingCount {
            let hash = pending[j]
            sink ^= doorkeeper[doorkeeperBits(hash).word] ^ table[counter(hash, 0).word]
        }
        touched ^= sink
        var next = 0
        while next < pendingCount {
            next = countPending(from: next)
            if additions >= sampleSize { reset() }
        }
        pendingCount = 0
    }

    /// Counts the recorded occurrences from `start` on, until the last one or the
    /// one that completes the sample (after which the caller resets); returns the
    /// index after the last one counted.
    ///
    /// The tables are reached through buffer pointers for the whole batch: through
    /// the arrays, each write paid a uniqueness check and each access a bounds check.
    /// Every index is masked into its table, so none is out of bounds.
    mutating func countPending(from start: Int) -> Int {
        let end = pendingCount
        let tableMask = tableMask
        let doorkeeperMask = doorkeeperMask
        let sampleSize = sampleSize
        let pending = pending
        var additions = additions
        var next = start
        table.withUnsafeMutableBufferPointer { table in
            doorkeeper.withUnsafeMutableBufferPointer { doorkeeper in
                while next < end {
                    let added = Self.increment(
                        pending[next], table: table, tableMask: tableMask, doorkeeper: doorkeeper,
                        doorkeeperMask: doorkeeperMask)
                    next += 1
                    if added {
                        additions += 1
                        if additions >= sampleSize { break }
                    }
                }
            }
        }
        self.additions = additions
        return next
    }

    /// Counts one occurrence of `hash` now; returns whether it changed anything (see
    /// the static `increment`).
    @discardableResult
    mutating func increment(_ hash: UInt64) -> Bool {
        let tableMask = tableMask
        let doorkeeperMask = doorkeeperMask
        let added = table.withUnsafeMutableBufferPointer { table in
            doorkeeper.withUnsafeMutableBufferPointer { doorkeeper in
                Self.increment(
                    hash, table: table, tableMask: tableMask, doorkeeper: doorkeeper, doorkeeperMask: doorkeeperMask)
            }
        }
        if added { countAddition() }
        return added
    }

    /// Counts `times` occurrences of `hash` now, after the recorded ones, as `times`
    /// calls of `increment(_:)` would. It stops at the first occurrence that changes
    /// nothing (the doorkeeper's bits and all four counters already set, "full"):
    /// the rest would change nothing either, as only a change can bring a reset.
    /// Returns `false` when it stopped there: until the next reset, further
    /// occurrences of `hash` change nothing.
    ///
    /// The counters take the occurrences in one step, up to the first that
    /// would complete the sample: an item's four counters lie in four different
    /// words, and each occurrence adds one to every one of them below 15, so `k`
    /// occurrences leave each at `min(15, count + k)`, and every one of them is an
    /// addition while the smallest is below 15.
    mutating func increment(_ hash: UInt64, times: Int) -> Bool {
        if pendingCount > 0 { flush() }
        var remaining = times
        while remaining > 0 {
            let (word, bits) = doorkeeperBits(hash)
            if doorkeeper[word] & bits != bits {
                doorkeeper[word] |= bits
                remaining -= 1
                countAddition()
                continue
            }
            let room = 15 - frequency(hash)
            guard room > 0 else { return false }
            let steps = min(remaining, room, sampleSize - additions)
            for i in 0..<4 {
                let (word, shift) = counter(hash, i)
                let count = (table[word] >> shift) & 0xF
                table[word] += (min(15, count + UInt64(steps)) - count) << shift
            }
            remaining -= steps
            additions += steps
            if additions >= sampleSize { reset() }
        }
        return true
    }

    /// How many more additions the sample takes before the next reset.
    var additionsBeforeReset: Int { sampleSize - additions }

    /// Counts one occurrence of `hash` in the given tables: sets its doorkeeper bits
    /// if they were not all set, or else adds one to each of its four counters that
    /// is below 15. Returns whether the occurrence counts as an addition to the
    /// sample (anything changed).
    static func increment(
        _ hash: UInt64, table: UnsafeMutableBufferPointer<UInt64>, tableMask: Int,
        doorkeeper: UnsafeMutableBufferPointer<UInt64>, doorkeeperMask: UInt64
    ) -> Bool {
        let (word, bits) = doorkeeperBits(hash, doorkeeperMask: doorkeeperMask)
        if doorkeeper[word] & bits != bits {
            doorkeeper[word] |= bits
            return true
        }
        var added = false
        for i in 0..<4 {
            let (word, shift) = counter(hash, i, tableMask: tableMask)
            let mask: UInt64 = 0xF << shift
            if table[word] & mask != mask {
                table[word] &+= 1 << shift
                added = true
            }
        }
        return added
    }

    mutating func countAddition() {
        additions += 1
        if additions >= sampleSize { reset() }
    }

    /// Halves every counter and clears the doorkeeper.
    mutating func reset() {
        var odd = 0
        for i in table.indices {
            odd += (table[i] & Self.oneMask).nonzeroBitCount
            table[i] = (table[i] >> 1) & Self.resetMask
        }
        for i in doorkeeper.indices { doorkeeper[i] = 0 }
        additions = (additions - (odd >> 2)) / 2
        resets += 1
    }
}
