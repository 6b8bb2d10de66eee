/// The reads below memory in flight, and the changes made since each began: what
/// drops a read's promotion, or its fetched value, when a newer change came first.
///
/// A read takes a *ticket*, the sequence the next change will get; a change at or
/// after it is newer than anything the read can find. Changes of keys are
/// remembered only while reads are in flight, and only as far back as the oldest of
/// them needs; the newest clear is always remembered (one number).
@usableFromInline
struct _ReadTickets<Key: Hashable>: Sendable where Key: Sendable {
    /// The tickets of the reads in flight, with how many reads hold each.
    @usableFromInline private(set) var reads: [UInt64: Int] = [:]
    /// The last sequence that changed each key, kept only while reads are in
    /// flight.
    private(set) var changed: [Key: UInt64] = [:]
    /// The last sequence that changed each key known only by its string (another
    /// instance's invalidation of a key this one cannot name), kept like
    /// ``changed``.
    private(set) var changedStrings: [String: UInt64] = [:]
    /// The last sequence that changed every key at once (a clear).
    private(set) var barrier: UInt64 = 0
    /// How many remembered changes start a pruning pass.
    private var pruneAt = 1_024

    /// Whether no read is in flight.
    var isEmpty: Bool { reads.isEmpty }

    /// Holds `ticket` for one more read.
    mutating func begin(_ ticket: UInt64) {
        reads[ticket, default: 0] += 1
    }

    /// Gives back one hold of `ticket`; the changes are forgotten once no read is
    /// in flight.
    mutating func end(_ ticket: UInt64) {
        if let count = reads[ticket], count > 1 {
            reads[ticket] = count - 1
            return
        }
        reads[ticket] = nil
        // The emptiness checks keep the common case (nothing changed during the
        // read) off `Dictionary<Key, UInt64>`'s generic code, which this
        // unspecialised code runs through the runtime's metadata tables.
        if reads.isEmpty {
            if !changed.isEmpty { changed.removeAll(keepingCapacity: true) }
            if !changedStrings.isEmpty { changedStrings.removeAll() }
        }
    }

    /// Notes that `key` changed at `sequence`.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    mutating func noteChange(of key: Key, at sequence: UInt64) {
        guard !reads.isEmpty else { return }
        noteChangeWhileReading(of: key, at: sequence)
    }

    /// ``noteChange(of:at:)`` while reads are in flight.
    @usableFromInline
    mutating func noteChangeWhileReading(of key: Key, at sequence: UInt64) {
        changed[key] = sequence
        prune()
    }

    /// Notes that the key whose string is `keyString` changed at `sequence`.
    mutating func noteChange(ofString keyString: String, at sequence: UInt64) {
        guard !reads.isEmpty else { return }
        changedStrings[keyString] = sequence
        prune()
    }

    /// Notes that every key changed at `sequence`.
    mutating func noteClear(at sequence: UInt64) {
        barrier = sequence
    }

    /// Whether `key` (whose string `keyString` gives) changed, or every key did,
    /// at or after `ticket`.
    func hasChanged(_ key: Key, keyString: () -> String, since ticket: UInt64) -> Bool {
        if barrier >= ticket { return true }
        if !changed.isEmpty, let changed = changed[key], changed >= ticket { return true }
        if !changedStrings.isEmpty, let changed = changedStrings[keyString()], changed >= ticket { return true }
        return false
    }

    /// Whether every key changed at or after `ticket` (a clear).
    func hasClearedAll(since ticket: UInt64) -> Bool { barrier >= ticket }

    /// Forgets the changes made before the oldest read in flight (they can drop
    /// no promotion) once there are many.
    private mutating func prune() {
        guard changed.count + changedStrings.count > pruneAt, let oldest = reads.keys.min() else { return }
        changed = changed.filter { $0.value >= oldest }
        changedStrings = changedStrings.filter { $0.value >= oldest }
        pruneAt = max(1_024, (changed.count + changedStrings.count) * 2)
    }
}
