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
/// A change the store refused leaves the store with what it held before: the value a
/// refused `set` was to replace, or the value a refused removal was to remove. So
/// that the store does not serve that older value once memory lets go of the key,
/// ``staleKeys(of:)`` names the keys whose last change in the share the store
/// refused for a reason of the change's own, and the writer then removes them from
/// that store (one more write; if the store refuses that too, the failure of the
/// removal is reported with the key, and the key is suspect in that store). After a
/// failure of the store itself (unreachable, busy, damaged), a removal would fail
/// the same way: the changes' failures are reported, and their keys are suspect in
/// that store. Reads do not take a suspect key's value from the store, and the
/// writer removes the key with the store's next share, or at the next flush
/// (``_SuspectKeys``).
///
/// The type only plans: the writer runs ``next``, reports the outcome with
/// ``finish(_:error:)``, and reads ``failures`` and ``staleKeys(of:)`` at the end. Retrying a change
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

    /// The positions in the share of the changes whose refusal leaves the store
    /// serving an older value of their key: each `set` or removal refused for a
    /// reason of its own (``isChangeSpecific(_:)``) that is the last change of its
    /// key in `writes` (a later change of the key decides what the store holds),
    /// unless the store refused the key itself (`invalidName`: it can hold no value
    /// for it). In the share's order.
    func staleKeys(of writes: [CacheStoreWrite]) -> [Int] {
        guard !failures.isEmpty else { return [] }
        var last: [Self.Key: Int] = [:]
        for (position, write) in writes.enumerated() {
            if let key = Self.Key(write) { last[key] = position }
        }
        return failures.compactMap { failure in
            guard let key = Self.Key(writes[failure.position]), last[key] == failure.position,
                Self.isChangeSpecific(failure.error), (failure.error as? HoardError)?.code != .invalidName
            else { return nil }
            return failure.position
        }
    }

    /// A store's key: its namespace and its string.
    struct Key: Hashable {
        let namespace: String
        let key: String

        /// The key `write` changes; `nil` for a clear of a namespace.
        init?(_ write: CacheStoreWrite) {
            switch write {
            case .set(_, let key, let namespace, _, _), .removeValue(let key, let namespace):
                (self.namespace, self.key) = (namespace, key)
            case .removeAll:
                return nil
            }
        }
    }

    /// Whether `error` concerns the change that was tried rather than the store, so
    /// that the next change may still succeed.
    static func isChangeSpecific(_ error: any Error) -> Bool {
        guard let error = error as? HoardError else { return false }
        switch error.code {
        case .valueTooLarge, .encodingFailed, .storageFull, .invalidName, .invalidArgument: return true
        default: return false
        }
    }
}
