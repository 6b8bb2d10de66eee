/// The entries a trim of a ``DiskStore`` evicts next, least recently accessed
/// first: read in one pass over the index's access table, then evicted over
/// several transactions of `_DiskState.trimStep`.
///
/// The access table has no index by time (format version 6), so finding the
/// oldest entries is a pass over the whole table. A trim reads as many as it
/// expects to evict at once, and each later step takes the next ones from here
/// instead of reading the table again: one pass per trim, not one per
/// transaction.
///
/// Between two steps the store is unlocked, so an entry chosen here may be read,
/// written or removed before its turn. A step evicts a candidate only while its
/// access row still holds the time it was chosen at (`_DiskIndex.trimCandidate`),
/// after the step has written the accesses recorded in memory: an entry used
/// since is newer than every candidate, and is passed over.
struct _TrimQueue {
    /// One chosen entry: its row id and the access time it was chosen at.
    struct Candidate: Equatable {
        var id: Int64
        var accessedAt: Double
    }

    /// The entries chosen by the last fill, oldest first.
    private(set) var candidates: [Candidate] = []
    /// How many of `candidates` the steps have taken.
    private(set) var position = 0
    /// Whether the last fill found fewer rows than it asked for: the access table
    /// held no more.
    private(set) var reachedTheEnd = false
    /// Entries evicted since the last fill.
    private(set) var evictedSinceFill = 0
    /// Whether any fill happened.
    private(set) var wasFilled = false

    /// Whether every candidate has been taken (or none was ever read).
    var isEmpty: Bool { position == candidates.count }

    /// Whether another fill could find something to evict: the last one found a
    /// full set of rows, and some of them were evicted (a fill whose every
    /// candidate was protected, stale or gone would find the same again).
    var mayRefill: Bool { !wasFilled || (!reachedTheEnd && evictedSinceFill > 0) }

    /// Replaces the candidates with `chosen`, read with a limit of `limit`.
    mutating func fill(with chosen: [Candidate], limit: Int) {
        candidates = chosen
        position = 0
        reachedTheEnd = chosen.count < limit
        evictedSinceFill = 0
        wasFilled = true
    }

    /// Takes the next candidate, or `nil` when none is left.
    mutating func next() -> Candidate? {
        guard position < candidates.count else { return nil }
        defer { position += 1 }
        return candidates[position]
    }

    /// Counts an eviction of a candidate taken from this fill.
    mutating func countEviction() {
        evictedSinceFill += 1
    }

    /// How many rows a fill asks for, when the store holds `usage` and must come
    /// down to `maxBytes` and `maxCount`, with `protected` entries it must keep:
    /// the entries over the count, or the bytes over the byte target at the
    /// average entry size, whichever is more, plus a quarter for entries that
    /// turn out larger or smaller, used since, or protected; at least `chunk`,
    /// at most every entry.
    static func fillLimit(usage: StoreUsage, maxBytes: Int, maxCount: Int, protected: Int, chunk: Int) -> Int {
        let average = usage.count > 0 ? max(1, usage.bytes / usage.count) : 1
        let overCount = max(0, usage.count - maxCount)
        let overBytes = maxBytes == .max ? 0 : max(0, usage.bytes - maxBytes) / average + 1
        let over = max(overCount, overBytes)
        let wanted = over + over / 4 + protected
        return max(chunk, min(wanted, max(usage.count, 1)))
    }
}
