import Foundation

/// What a read of one key must answer, instead of asking the stores, while a
/// change of the key (or a clear, or a read's copy of it into the local stores) is
/// queued for them: the guarantee that a read never sees a value older than the
/// newest change made before it began, and never misses what the stores will hold.
@usableFromInline
enum _PendingRead<Value: Sendable>: Sendable {
    /// A value written with its own expiry: the memory tier's (the grace period
    /// included), whatever shorter lifetime a tier of stores gives it; for a
    /// promotion, the local copy's expiry.
    case value(Value, storedAt: Date, expiresAt: Date?)
    /// Removed from the local stores when `local`, and from the remote ones when
    /// `remote`. The stores left alone answer: the remote ones after another
    /// instance's invalidation or a clear of the local stores only (they hold
    /// the newest value), the local ones while a clear of the remote stores only
    /// is queued.
    case removed(local: Bool, remote: Bool)

    /// Whether a read answers from this alone, without looking in the local
    /// stores.
    @usableFromInline
    var hidesLocalStores: Bool {
        if case .removed(local: false, _) = self { return false }
        return true
    }
}
