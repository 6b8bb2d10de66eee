import Foundation

/// The writer's state of one key while a change of it is queued for the stores:
/// for each tier (the local stores, the remote stores), the newest queued change
/// of the key there and its sequence. A key with nothing queued has no state (it
/// is *settled*: reads ask the stores).
///
/// Each transition is a pure function from the state before (`nil` for settled)
/// to the state after; ``_WriterState`` holds one per key and applies them, and
/// ``_ClearState/read(_:keyString:)`` combines a key's state with the queued
/// clears into what a read answers.
///
/// | event, at sequence `s` | local tier | remote tier |
/// | --- | --- | --- |
/// | value queued | the value at `s` | the value at `s` (with remote stores) |
/// | removal from every tier queued | removed at `s` | removed at `s` (with remote stores) |
/// | removal from the local stores only (an invalidation) | removed at `s` | unchanged |
/// | copy of a value found in a slower tier queued for the local stores (a promotion) | the value at `s` | unchanged |
/// | changes up to `s` applied by every store | forgotten when at or before `s` | forgotten when at or before `s` |
/// | clear of a tier queued at `s` | forgotten when before `s` (the clear answers) | forgotten when before `s` |
///
/// The key settles when both tiers have forgotten their change.
///
/// The queuing transitions are inlinable with the writer's write path (see
/// ``_WriterState/write(_:ifUnchangedSince:bytes:waitsForRoom:completesLocally:completion:)``).
@usableFromInline
struct _KeyWriteState<Value: Sendable>: Sendable {
    /// What a queued change leaves in a tier.
    @usableFromInline
    enum Change: Sendable {
        case value(Value, storedAt: Date, expiresAt: Date?)
        case removed
    }

    /// A tier's newest queued change of the key.
    @usableFromInline
    struct Queued: Sendable {
        @usableFromInline var sequence: UInt64
        @usableFromInline var change: Change

        @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
        init(sequence: UInt64, change: Change) {
            self.sequence = sequence
            self.change = change
        }
    }

    /// The newest queued change of the key in the local stores.
    @usableFromInline private(set) var local: Queued?
    /// The newest queued change of the key in the remote stores (never set
    /// without remote stores).
    @usableFromInline private(set) var remote: Queued?

    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    init(local: Queued?, remote: Queued?) {
        self.local = local
        self.remote = remote
    }

    /// The state after a value is queued at `sequence`, whatever came before.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    static func setting(
        _ value: Value, storedAt: Date, expiresAt: Date?, at sequence: UInt64, hasRemoteStores: Bool
    ) -> Self {
        let queued = Queued(sequence: sequence, change: .value(value, storedAt: storedAt, expiresAt: expiresAt))
        return Self(local: queued, remote: hasRemoteStores ? queued : nil)
    }

    /// The state after a removal is queued at `sequence`: from every tier when
    /// `remote`, else from the local stores only (another instance's
    /// invalidation), which leaves the remote tier's queued change as it was.
    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore" (`cache[k] = nil`)
    static func removing(remote: Bool, at sequence: UInt64, after before: Self?, hasRemoteStores: Bool) -> Self {
        let queued = Queued(sequence: sequence, change: .removed)
        guard hasRemoteStores else { return Self(local: queued, remote: nil) }
        return Self(local: queued, remote: remote ? queued : before?.remote)
    }

    /// The state after a read's copy of a value it found in a slower tier (a
    /// promotion) is queued for the local stores at `sequence`; the remote tier's
    /// queued change stays as it was. A promotion is queued only when the key did
    /// not change since its read began, so the value is what the stores answer.
    static func promoting(_ value: Value, storedAt: Date, expiresAt: Date?, at sequence: UInt64, after before: Self?)
        -> Self
    {
        Self(
            local: Queued(sequence: sequence, change: .value(value, storedAt: storedAt, expiresAt: expiresAt)),
            remote: before?.remote)
    }

    /// The state once every store has applied the changes up to `applied`
    /// (they are applied in order): `nil` once neither tier has a newer one.
    func afterApplying(_ applied: UInt64) -> Self? {
        forgetting(
            local: local.map { $0.sequence <= applied } ?? false, remote: remote.map { $0.sequence <= applied } ?? false
        )
    }

    /// The state once clears of the local stores at `localClear` and of the remote
    /// stores at `remoteClear` are queued: a tier forgets a change made before its
    /// clear, which is what the tier will hold then.
    func afterClearing(local localClear: UInt64?, remote remoteClear: UInt64?) -> Self? {
        func isCleared(_ queued: Queued?, by clear: UInt64?) -> Bool {
            guard let queued, let clear else { return false }
            return queued.sequence < clear
        }
        return forgetting(local: isCleared(local, by: localClear), remote: isCleared(remote, by: remoteClear))
    }

    private func forgetting(local forgetsLocal: Bool, remote forgetsRemote: Bool) -> Self? {
        let next = Self(local: forgetsLocal ? nil : local, remote: forgetsRemote ? nil : remote)
        return next.local == nil && next.remote == nil ? nil : next
    }
}
