/// The keys each store of a ``Cache`` may hold an older value of: a change the
/// writer sent was not applied (the store failed as a whole, or refused the change
/// and then its removal too), so the store may still answer with the value the
/// change replaced or removed.
///
/// Removing a key from a store is always correct for a cache, so a suspect key is
/// repaired by removal: reads below memory skip the key in that store (a miss
/// there, as a queued change masks the stores), and the writer sends the removal
/// ahead of the store's next share of a batch (``repairs(for:namespace:)``), or
/// in a repair pass of its own when a flush finds nothing else queued. A key
/// stops being suspect once the store applies a change of it: the repair, or a
/// newer write or removal. A repair that fails keeps the key suspect, and is sent
/// again with the next batch or flush.
///
/// The suspect keys of one store are bounded by ``limit``. Past it, or when the
/// store fails to clear the cache's namespace, every key of the store is suspect
/// (``Store/everything``): reads skip the store altogether, and its next share
/// (or flush) starts with a removal of the cache's namespace; once that is
/// applied, the store is read again. Dropping every entry of one store is the one repair that
/// is still correct with no memory per key, and it costs only what the store
/// would have served from its older entries.
///
/// | event, for one store | keys | everything |
/// | --- | --- | --- |
/// | a change of key `k` applied | `k` no longer suspect | unchanged |
/// | a change of key `k` not applied | `k` suspect (everything past ``limit``) | unchanged |
/// | a clear of the namespace applied | none suspect | none suspect |
/// | a clear of the namespace not applied | everything | unchanged |
///
/// Only the writer's queue changes the state; reads ask it from any thread, under
/// the writer's lock for it.
struct _SuspectKeys: Sendable {
    /// What one store may hold older values of.
    enum Store: Equatable, Sendable {
        /// These keys (store key strings, in the cache's namespace).
        case keys(Set<String>)
        /// Any key: the store is not read until a clear of the namespace is
        /// applied.
        case everything
    }

    /// The most suspect keys one store keeps before every key of it is suspect.
    static var limit: Int { 4_096 }

    /// The stores with suspect keys; a store with none is absent.
    private(set) var stores: [CacheTier: Store] = [:]

    /// Whether the store of `tier` may hold an older value of `key`.
    func isSuspect(_ key: String, in tier: CacheTier) -> Bool {
        switch stores[tier] {
        case nil: false
        case .everything: true
        case .keys(let keys): keys.contains(key)
        }
    }

    /// The removals the store of `tier` is sent ahead of its next share: one per
    /// suspect key, or one of the whole namespace.
    func repairs(for tier: CacheTier, namespace: String) -> [CacheStoreWrite] {
        switch stores[tier] {
        case nil: []
        case .everything: [.removeAll(in: namespace)]
        case .keys(let keys): keys.sorted().map { .removeValue(for: $0, in: namespace) }
        }
    }

    /// Notes what the store of `tier` did with `writes`, in their order: `applied`
    /// says, by position, whether the store holds the change (or holds nothing for
    /// its key).
    mutating func settle(_ writes: [CacheStoreWrite], applied: [Bool], in tier: CacheTier) {
        // Taken out, and out of `store` while changed, so that the set is not copied.
        var store = stores.removeValue(forKey: tier)
        for (write, isApplied) in zip(writes, applied) {
            switch write {
            case .removeAll:
                store = isApplied ? nil : .everything
            case .set(_, let key, _, _, _), .removeValue(let key, _):
                guard case .keys(var keys) = store ?? .keys([]) else { continue }
                store = nil
                if isApplied {
                    keys.remove(key)
                } else {
                    keys.insert(key)
                }
                store = keys.isEmpty ? nil : keys.count > Self.limit ? .everything : .keys(keys)
            }
        }
        stores[tier] = store
    }
}
