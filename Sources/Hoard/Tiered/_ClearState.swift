import Foundation

/// The writer's state of what is queued for every key at once: the newest clear
/// of each tier, and the removals from the local stores of keys known only by
/// their strings (another instance's invalidations of keys this one never saw).
///
/// | event | effect |
/// | --- | --- |
/// | clear of the local stores at `s` | local clear at `s`; forgets the removals by string (the clear hides those keys too) |
/// | clear of the remote stores at `s` | remote clear at `s` (only when there are remote stores) |
/// | removal by string at `s` | that string removed at `s` |
/// | a clear or removal applied | forgotten, unless a newer one of the same kind is queued |
@usableFromInline
struct _ClearState: Sendable {
    /// Whether the cache has remote stores (a clear of them is nothing without).
    @usableFromInline let hasRemoteStores: Bool
    /// The newest queued clear of the local stores.
    private(set) var local: UInt64?
    /// The newest queued clear of the remote stores (never set without remote
    /// stores).
    private(set) var remote: UInt64?
    /// The queued removals by string, with the newest's sequence.
    private(set) var removedLocally: [String: UInt64] = [:]

    init(hasRemoteStores: Bool) {
        self.hasRemoteStores = hasRemoteStores
    }

    /// Records a clear queued at `sequence`.
    ///
    /// - Returns: Whether it clears every tier there is (so it undoes every queued
    ///   change of every key).
    mutating func clear(local clearsLocal: Bool, remote clearsRemote: Bool, at sequence: UInt64) -> Bool {
        if clearsLocal {
            local = sequence
            // The clear hides those keys too.
            removedLocally.removeAll()
        }
        if clearsRemote && hasRemoteStores { remote = sequence }
        return clearsLocal && (clearsRemote || !hasRemoteStores)
    }

    /// Records a removal from the local stores of the key whose string is
    /// `keyString`, queued at `sequence`.
    mutating func removeLocally(_ keyString: String, at sequence: UInt64) {
        removedLocally[keyString] = sequence
    }

    /// Whether nothing is queued: no clear of either tier, no removal by string.
    var isEmpty: Bool { local == nil && remote == nil && removedLocally.isEmpty }

    /// Forgets the clear at `sequence` once the stores have applied it.
    mutating func appliedClear(at sequence: UInt64) {
        if local == sequence { local = nil }
        if remote == sequence { remote = nil }
    }

    /// Forgets the removal by string at `sequence` once the stores have applied it.
    mutating func appliedRemoval(of keyString: String, at sequence: UInt64) {
        if removedLocally[keyString] == sequence { removedLocally[keyString] = nil }
    }

    /// What a read of a key must answer, given the key's own state: for each tier,
    /// the newest of the key's queued change there, the tier's queued clear and (in
    /// the local stores) the key's queued removal by string; then the local tier's
    /// answer, or the remote tier's when the local one will not hold the key.
    /// `nil` when nothing queued concerns the key.
    func read<Value>(_ key: _KeyWriteState<Value>?, keyString: () -> String) -> _PendingRead<Value>? {
        typealias Queued = _KeyWriteState<Value>.Queued
        func newest(_ queued: Queued?, _ removal: UInt64?) -> Queued? {
            guard let removal, removal > queued?.sequence ?? 0 else { return queued }
            return Queued(sequence: removal, change: .removed)
        }
        var localTier = newest(key?.local, local)
        if !removedLocally.isEmpty { localTier = newest(localTier, removedLocally[keyString()]) }
        let remoteTier = newest(hasRemoteStores ? key?.remote : nil, remote)
        switch (localTier?.change, remoteTier?.change) {
        case (.value(let value, let storedAt, let expiresAt)?, _),
            (.removed?, .value(let value, let storedAt, let expiresAt)?),
            // Not reached: a value is queued for both tiers at once, and the local
            // tier forgets it no earlier than the remote one (after a change or a
            // clear of its own, which it then answers).
            (nil, .value(let value, let storedAt, let expiresAt)?):
            return .value(value, storedAt: storedAt, expiresAt: expiresAt)
        case (.removed?, .removed?): return .removed(local: true, remote: true)
        case (.removed?, nil): return .removed(local: true, remote: false)
        case (nil, .removed?): return .removed(local: false, remote: true)
        case (nil, nil): return nil
        }
    }
}
