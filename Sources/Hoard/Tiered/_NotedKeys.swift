/// The keys a ``Cache`` noted, by their strings, so that another instance's
/// invalidation (which names a key by its string) finds the key memory holds
/// (``Cache/key(forCacheKeyString:)``); pruned to the keys memory holds.
///
/// A key is noted either after memory took it in (a write, under the writer's
/// lock) or before it does (a promotion or a remembered "not found": an
/// invalidation handled between the two must find it), in which case it is *in
/// flight* until the promotion was made or dropped (``settle(_:)``).
///
/// Guarantee: a prune drops only a key that memory did not hold when the prune
/// looked, that was not in flight then or since, and that was not noted again
/// since the prune began. So a key memory takes in is in the table from its
/// note on for as long as memory may hold it, however prunes interleave with the
/// notes and the promotions (a prune is not atomic with memory: it looks at
/// memory between two holds of the table's lock).
struct _NotedKeys<Key: Sendable>: Sendable {
    /// One noted key.
    struct Entry: Sendable {
        var key: Key
        /// The ``generation`` of its latest note.
        var notedAt: UInt64
        /// Its notes whose promotion has not yet been made or dropped.
        var inFlight: Int
    }

    /// The noted keys, by their strings.
    private(set) var entries: [String: Entry] = [:]
    /// Counts the notes; a prune drops no key noted after the generation it began at.
    private var generation: UInt64 = 0
    /// The number of entries above which the next note prunes.
    private var pruneAt: Int

    init(pruneAt: Int) {
        self.pruneAt = pruneAt
    }

    /// Notes `key` under `string`, in flight (until ``settle(_:)``) or not.
    ///
    /// - Returns: Whether the table has grown past its threshold: the caller then
    ///   prunes it (``pruneCandidates()``, then ``drop(_:notedBefore:keeping:)``).
    mutating func note(_ key: Key, as string: String, inFlight: Bool) -> Bool {
        generation += 1
        let earlier = entries[string]?.inFlight ?? 0
        entries[string] = Entry(key: key, notedAt: generation, inFlight: earlier + (inFlight ? 1 : 0))
        return entries.count > pruneAt
    }

    /// Ends an in-flight note of the key `string` names: its promotion was made
    /// (memory holds the key, until it evicts it) or dropped.
    mutating func settle(_ string: String) {
        guard let entry = entries[string], entry.inFlight > 0 else { return }
        entries[string]?.inFlight = entry.inFlight - 1
    }

    /// The keys a prune may drop (those not in flight), and the generation the
    /// prune began at.
    func pruneCandidates() -> (generation: UInt64, keys: [String: Key]) {
        var keys: [String: Key] = [:]
        for (string, entry) in entries where entry.inFlight == 0 { keys[string] = entry.key }
        return (generation, keys)
    }

    /// Drops the candidates memory did not hold (`released`), except those noted
    /// since `generation` or in flight now, and `string` (the key being noted);
    /// the next prune then waits until the table has doubled (memory may hold more
    /// keys than the first threshold, in a tier limited by cost), so pruning costs
    /// amortised O(1) per note.
    mutating func drop(_ released: [String: Key], notedBefore generation: UInt64, keeping string: String) {
        for candidate in released.keys where candidate != string {
            guard let entry = entries[candidate], entry.inFlight == 0, entry.notedAt <= generation else { continue }
            entries[candidate] = nil
        }
        pruneAt = max(pruneAt, entries.count * 2)
    }

    /// The key `string` names, taken out of the table (an invalidation drops it
    /// from memory); kept while a promotion of it is in flight, which is then
    /// dropped or takes the key into memory after the invalidation, which a later
    /// invalidation must find.
    mutating func take(_ string: String) -> Key? {
        guard let entry = entries[string] else { return nil }
        if entry.inFlight == 0 { entries[string] = nil }
        return entry.key
    }
}
