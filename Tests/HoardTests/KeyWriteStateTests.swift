import Foundation
import Testing

@testable import Hoard

/// The rows of the tables in `_KeyWriteState` and `_ClearState`, one by one.
@Suite("Cache writer: one key's state and the clears' state")
struct KeyWriteStateTests {
    typealias KeyState = _KeyWriteState<Int>

    /// The change a tier's entry holds: the value, `-1` for a removal, `nil` for none.
    static func change(_ queued: KeyState.Queued?) -> Int? {
        switch queued?.change {
        case .value(let value, _, _)?: value
        case .removed?: -1
        case nil: nil
        }
    }

    static func set(_ value: Int, at sequence: UInt64) -> KeyState {
        .setting(value, storedAt: Date(), expiresAt: nil, at: sequence, hasRemoteStores: true)
    }

    @Test("A value is queued for both tiers, replacing whatever was queued")
    func valueReplaces() {
        let set = Self.set(7, at: 2)
        #expect(Self.change(set.local) == 7 && Self.change(set.remote) == 7)
        #expect(set.local?.sequence == 2 && set.remote?.sequence == 2)
        let localOnly = KeyState.setting(7, storedAt: Date(), expiresAt: nil, at: 2, hasRemoteStores: false)
        #expect(localOnly.remote == nil)
    }

    @Test("A removal from every tier replaces a queued value in both")
    func removalReplaces() {
        let removed = KeyState.removing(remote: true, at: 2, after: Self.set(7, at: 1), hasRemoteStores: true)
        #expect(Self.change(removed.local) == -1 && Self.change(removed.remote) == -1)
        #expect(removed.remote?.sequence == 2)
    }

    @Test("A removal from the local stores only leaves the remote tier's change as it was")
    func invalidationKeepsRemoteChange() {
        let afterSet = KeyState.removing(remote: false, at: 2, after: Self.set(7, at: 1), hasRemoteStores: true)
        #expect(Self.change(afterSet.local) == -1 && afterSet.local?.sequence == 2)
        #expect(Self.change(afterSet.remote) == 7 && afterSet.remote?.sequence == 1)
        let overNothing = KeyState.removing(remote: false, at: 1, after: nil, hasRemoteStores: true)
        #expect(Self.change(overNothing.local) == -1 && overNothing.remote == nil)
    }

    @Test("A tier forgets its change once applied; the key settles when both have")
    func settling() {
        let state = KeyState.removing(remote: false, at: 5, after: Self.set(7, at: 3), hasRemoteStores: true)
        let afterThree = state.afterApplying(3)
        #expect(afterThree?.remote == nil && Self.change(afterThree?.local) == -1)
        #expect(state.afterApplying(2)?.remote != nil)
        #expect(afterThree?.afterApplying(5) == nil)
    }

    @Test("A tier forgets a change made before its clear; the key settles when both have")
    func clearing() {
        let set = Self.set(7, at: 5)
        let localCleared = set.afterClearing(local: 6, remote: nil)
        #expect(localCleared?.local == nil && Self.change(localCleared?.remote) == 7)
        #expect(set.afterClearing(local: 4, remote: 4)?.local != nil)
        #expect(set.afterClearing(local: 6, remote: 7) == nil)
    }

    @Test("A clear says whether it covers every tier there is")
    func clearsOfEveryTier() {
        var withRemote = _ClearState(hasRemoteStores: true)
        let localClear = withRemote.clear(local: true, remote: false, at: 3)
        let bothClear = withRemote.clear(local: true, remote: true, at: 5)
        #expect(!localClear && bothClear)
        var localOnly = _ClearState(hasRemoteStores: false)
        let remoteClear = localOnly.clear(local: false, remote: true, at: 2)
        #expect(!remoteClear, "no remote stores to clear")
        #expect(localOnly.remote == nil)
        let everyTier = localOnly.clear(local: true, remote: false, at: 4)
        #expect(everyTier)
    }

    @Test("A clear of the local stores hides the removals by string; applied ones are forgotten")
    func removalsByString() {
        var clears = _ClearState(hasRemoteStores: true)
        clears.removeLocally("k", at: 1)
        let pending: _PendingRead<Int>? = clears.read(nil, keyString: { "k" })
        if case .removed(true, false)? = pending {} else { Issue.record("\(String(describing: pending))") }
        _ = clears.clear(local: true, remote: false, at: 2)
        #expect(clears.removedLocally.isEmpty)
        clears.appliedClear(at: 2)
        #expect(clears.local == nil)
        clears.removeLocally("k", at: 3)
        clears.appliedRemoval(of: "k", at: 2)
        #expect(clears.removedLocally["k"] == 3, "a newer removal stays")
        clears.appliedRemoval(of: "k", at: 3)
        #expect(clears.read(KeyState?.none, keyString: { "k" }) == nil)
    }

    @Test("A key removed from the local stores only reads as removed everywhere while the remote stores are cleared")
    func removalUnderRemoteClear() {
        var clears = _ClearState(hasRemoteStores: true)
        _ = clears.clear(local: false, remote: true, at: 2)
        let invalidated = KeyState.removing(remote: false, at: 1, after: nil, hasRemoteStores: true)
        let pending = clears.read(invalidated, keyString: { "k" })
        if case .removed(true, true)? = pending {} else { Issue.record("\(String(describing: pending))") }
        let untouched: _PendingRead<Int>? = clears.read(nil, keyString: { "other" })
        if case .removed(false, true)? = untouched {} else { Issue.record("\(String(describing: untouched))") }
    }
}

extension KeyWriteStateTests {
    @Test("A value queued before a clear of the remote stores and a removal from the local ones reads as removed")
    func valueUndoneTierByTier() {
        // The case the tier-by-tier state exists for: each tier loses the value in
        // its own way, so no store will hold it.
        var clears = _ClearState(hasRemoteStores: true)
        let set = Self.set(7, at: 1)
        _ = clears.clear(local: false, remote: true, at: 2)
        let invalidated = KeyState.removing(
            remote: false, at: 3, after: set.afterClearing(local: nil, remote: 2), hasRemoteStores: true)
        let pending = clears.read(invalidated, keyString: { "k" })
        if case .removed(true, true)? = pending {} else { Issue.record("\(String(describing: pending))") }
    }
}
