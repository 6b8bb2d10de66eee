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
    static func checkWriteDates(storedAt: Date, expiresAt: Date?, key: String?) throws(HoardError) {
        let stored = storedAt.timeIntervalSinceReferenceDate
        guard stored.isFinite else {
            throw HoardError(
                .invalidArgument, "the stored date must be a finite date, not \(stored) seconds", key: key)
        }
        if let expiresAt, expiresAt.timeIntervalSinceReferenceDate.isNaN {
            throw HoardError(.invalidArgument, "the expiry date must not be NaN", key: key)
        }
    }
}
