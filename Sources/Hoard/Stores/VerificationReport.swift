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
    /// Everything found: damaged entries with their namespace, key and reason,
    /// orphaned files, problems of the index as a whole, and temporary files of
    /// interrupted writes (which are not damage: see ``problems``).
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

    /// Whether nothing was wrong: ``damage`` is empty, or lists only temporary files
    /// of interrupted writes (``StoreDamage/Reason/temporaryFile``), which hold no
    /// value and are not damage.
    public var isHealthy: Bool { problems.isEmpty }

    /// Every finding that is damage: ``damage`` without the temporary files of
    /// interrupted writes.
    public var problems: [StoreDamage] { damage.filter { $0.reason != .temporaryFile } }

    /// The problems that are still there: every one without a repair, and after a
    /// repair those it could not mend.
    public var unrepaired: [StoreDamage] { damage.filter { !$0.isRepaired } }

    public var description: String {
        let problems = problems
        var text: String
        if problems.isEmpty {
            text = "\(entriesChecked) entries checked, no damage"
        } else {
            let what = problems.count == 1 ? "problem" : "problems"
            text = "\(entriesChecked) entries checked, \(problems.count) \(what)"
            if repaired {
                let left = problems.filter { !$0.isRepaired }.count
                text += left == 0 ? " (repaired)" : " (\(problems.count - left) repaired, \(left) left)"
            }
        }
        let temporary = damage.filter { $0.reason == .temporaryFile }
        if !temporary.isEmpty {
            let what = temporary.count == 1 ? "temporary file" : "temporary files"
            text += "; \(temporary.count) \(what) of interrupted writes"
            if repaired {
                let deleted = temporary.filter(\.isRepaired).count
                text +=
                    deleted == temporary.count
                    ? " (deleted)" : " (\(deleted) deleted, \(temporary.count - deleted) kept)"
            }
        }
        return text
    }
}
