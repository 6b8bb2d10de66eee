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
    /// Whether the check was asked to repair what it found (`repairing: true`).
    /// Each problem's ``StoreDamage/isRepaired`` says whether it was; some damage is
    /// never repaired (see ``unrepaired``).
    public var repaired: Bool

    /// Creates a report.
    public init(entriesChecked: Int = 0, damage: [StoreDamage] = [], repaired: Bool = false) {
        self.entriesChecked = entriesChecked
        self.damage = damage
        self.repaired = repaired
    }

    /// Whether nothing was wrong.
    public var isHealthy: Bool { damage.isEmpty }

    /// The problems that are still there: every one without a repair, and after a
    /// repair those it could not mend.
    public var unrepaired: [StoreDamage] { damage.filter { !$0.isRepaired } }

    public var description: String {
        if damage.isEmpty { return "\(entriesChecked) entries checked, no damage" }
        let what = damage.count == 1 ? "problem" : "problems"
        var text = "\(entriesChecked) entries checked, \(damage.count) \(what)"
        if repaired {
            let left = unrepaired.count
            text += left == 0 ? " (repaired)" : " (\(damage.count - left) repaired, \(left) left)"
        }
        return text
    }
}
