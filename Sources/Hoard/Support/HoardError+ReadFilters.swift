import Foundation

extension HoardError {
    /// Checks the freshness filters of a read that can throw, before any tier is
    /// read: `maxAge`, when given, must be 0 or more seconds (`.infinity` is "any
    /// age"), and `newerThan`, when given, must not be NaN (a date at either
    /// infinity is a valid "any" or "none").
    ///
    /// No entry can satisfy a NaN or negative age limit or a NaN date: the reads
    /// that cannot throw answer such a filter with a miss
    /// (``MemoryCache/value(for:maxAge:newerThan:)``,
    /// ``Cache/cachedValue(for:maxAge:newerThan:)``); those that can refuse it, so
    /// that a mistaken argument is not a fetch on every call.
    ///
    /// - Throws: ``Code/invalidArgument`` naming the filter, with `key`.
    @inlinable
    static func checkReadFilters(
        maxAge: TimeInterval?, newerThan: Date?, key: @autoclosure () -> String
    ) throws(HoardError) {
        if let maxAge, !(maxAge >= 0) {
            throw invalidReadFilter("maxAge must be 0 or more seconds, not \(maxAge)", key: key())
        }
        if let newerThan, newerThan.timeIntervalSinceReferenceDate.isNaN {
            throw invalidReadFilter("newerThan must be a date, not NaN", key: key())
        }
    }

    /// The error ``checkReadFilters(maxAge:newerThan:key:)`` throws.
    @usableFromInline
    static func invalidReadFilter(_ what: String, key: String) -> HoardError {
        HoardError(.invalidArgument, "\(what); no tier was read", key: key)
    }
}
