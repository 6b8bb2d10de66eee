import Foundation

extension HoardError {
    /// Checks the dates of one write before any store sees them: the stored date
    /// must be a finite date, and the expiry, when there is one, must not be NaN
    /// (an infinite expiry is a valid "never" or "already").
    ///
    /// Every store keeps dates as seconds in a `Double`; a NaN or infinite stored
    /// date would be refused by some (SQLite's `NOT NULL` column takes NaN as
    /// `NULL`) and kept by others, and a NaN expiry never compares as reached.
    /// Refusing the write up front, as its own ``Code/invalidArgument``, keeps
    /// every tier in step and lets the other changes of a batch go on.
    ///
    /// - Throws: ``Code/invalidArgument`` naming the date, with `key`.
    package static func checkWriteDates(storedAt: Date, expiresAt: Date?, key: String?) throws(HoardError) {
        let stored = storedAt.timeIntervalSinceReferenceDate
        guard stored.isFinite else {
            throw HoardError(
                .invalidArgument, "the stored date must be a finite date, not \(stored) seconds", key: key)
        }
        if let expiresAt, expiresAt.timeIntervalSinceReferenceDate.isNaN {
            throw HoardError(.invalidArgument, "the expiry date must not be NaN", key: key)
        }
    }

    /// The first set of `batch` whose dates ``checkWriteDates(storedAt:expiresAt:key:)``
    /// refuses, by its position in `batch`, with the error that check throws (naming
    /// the set's key); `nil` when every set's dates can be kept.
    ///
    /// A remote store's `write` applies the changes before that position and sends
    /// neither the refused set nor any change after it, then throws the error: the
    /// batch ends there, as it ends at the first error when its changes are applied
    /// one at a time (the default ``RemoteCacheStore/write(_:)``, which
    /// ``InMemoryRemoteStore`` uses).
    ///
    /// - Complexity: O(*n*) in the batch's length.
    package static func firstRefusedWrite(in batch: [CacheStoreWrite]) -> (position: Int, error: HoardError)? {
        for (position, change) in batch.enumerated() {
            guard case .set(_, let key, _, let storedAt, let expiresAt) = change else { continue }
            do {
                try checkWriteDates(storedAt: storedAt, expiresAt: expiresAt, key: key)
            } catch {
                return (position, error)
            }
        }
        return nil
    }
}
