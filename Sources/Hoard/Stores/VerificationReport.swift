/// What ``CacheStore/verify(repairing:)`` found.
///
/// ```swift
/// let report = try store.verify()
/// if !report.isHealthy {
///     for damage in report.damage { print(damage) }
/// }
/// ```
public struct VerificationReport: Sendable, Hashable, CustomStringConvertible {
    /// How many entries were checked.
    public var entriesChecked: Int
    /// Every problem found: damaged entries with their namespace, key and reason,
    /// orphaned files, and problems of the index as a whole.
    public var damage: [StoreDamage]
    /// Whether the problems were repaired: damaged entries removed, orphaned files
    /// deleted, totals recomputed.
    public var repaired: Bool

    /// Creates a report.
    public init(entriesChecked: Int = 0, damage: [StoreDamage] = [], repaired: Bool = false) {
        self.entriesChecked = entriesChecked
        self.damage = damage
        self.repaired = repaired
    }

    /// Whether nothing was wrong.
    public var isHealthy: Bool { damage.isEmpty }

    public var description: String {
        if damage.isEmpty { return "\(entriesChecked) entries checked, no damage" }
        let what = damage.count == 1 ? "problem" : "problems"
        return "\(entriesChecked) entries checked, \(damage.count) \(what)\(repaired ? " (repaired)" : "")"
    }
}
