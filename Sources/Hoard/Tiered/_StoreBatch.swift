/// How one store's share of a write-behind batch is applied so that a change the
/// store refuses fails alone, and every other change is applied, in order.
///
/// The share is first tried whole, as one ``CacheStore/write(_:)`` or
/// ``RemoteCacheStore/write(_:)`` (one transaction, one round trip). When that
/// throws, nothing is known of which change the store refused, so each change is
/// tried alone, in the batch's order. A change that fails alone for a reason of
/// its own (a value over the store's limit, a full disk that a removal can still
/// free) leaves the next change to be tried. A failure that is the store's (a lost
/// connection, a busy or damaged index) ends the attempt: the changes left are not
/// tried and fail with that error, so an unreachable store costs one more attempt,
/// not one per change.
///
/// The type only plans: the writer runs ``next``, reports the outcome with
/// ``finish(_:error:)``, and reads ``failures`` at the end. Retrying a change
/// after the whole share failed is safe because a store's `write` either applied
/// nothing (a local store's transaction) or applied a prefix of idempotent changes
/// (a remote store's rounds), which the same changes in the same order restore.
struct _StoreBatch {
    /// How many changes the share holds.
    let count: Int
    /// The changes to try next, by position in the share; `nil` once every change
    /// was applied or has failed.
    private(set) var next: Range<Int>?
    /// Each change that failed, by position in the share, with its error, in order.
    private(set) var failures: [(position: Int, error: any Error)] = []

    /// Plans a share of `count` changes.
    init(count: Int) {
        self.count = count
        next = count == 0 ? nil : 0..<count
    }

    /// Records the outcome of trying `range` (the last ``next``): `error` is `nil`
    /// when the store applied it.
    mutating func finish(_ range: Range<Int>, error: (any Error)?) {
        guard let error else {
            next = range.count == 1 && range.upperBound < count ? range.upperBound..<range.upperBound + 1 : nil
            return
        }
        if range.count > 1 {
            next = range.lowerBound..<range.lowerBound + 1
            return
        }
        failures.append((range.lowerBound, error))
        if Self.isChangeSpecific(error) {
            next = range.upperBound < count ? range.upperBound..<range.upperBound + 1 : nil
        } else {
            for position in range.upperBound..<count { failures.append((position, error)) }
            next = nil
        }
    }

    /// Whether `error` concerns the change that was tried rather than the store, so
    /// that the next change may still succeed.
    static func isChangeSpecific(_ error: any Error) -> Bool {
        guard let error = error as? HoardError else { return false }
        switch error.code {
        case .valueTooLarge, .encodingFailed, .storageFull, .invalidName: return true
        default: return false
        }
    }
}
