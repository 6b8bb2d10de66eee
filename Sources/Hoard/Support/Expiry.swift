import Foundation

/// When an entry stops being served.
///
/// Every write takes an optional `Expiry`; a write that gives none gets the cache's
/// default lifetime. An expired entry is a miss and is removed.
///
/// ```swift
/// cache.set(token, for: "session", expires: .minutes(15))
/// cache.set(banner, for: "banner", expires: .at(campaignEnd))
/// cache.set(config, for: "config", expires: .never)
/// ```
public enum Expiry: Sendable, Hashable {
    /// The entry never expires; only eviction or removal takes it out.
    case never
    /// The entry expires this many seconds after it is stored. A value of zero or
    /// less stores an entry that is already expired.
    case after(TimeInterval)
    /// The entry expires at this date.
    case at(Date)

    /// Expires after `seconds` seconds.
    public static func seconds(_ seconds: TimeInterval) -> Expiry { .after(seconds) }
    /// Expires after `minutes` minutes.
    public static func minutes(_ minutes: Double) -> Expiry { .after(minutes * 60) }
    /// Expires after `hours` hours.
    public static func hours(_ hours: Double) -> Expiry { .after(hours * 3600) }
    /// Expires after `days` days.
    public static func days(_ days: Double) -> Expiry { .after(days * 86_400) }

    /// Whether the lifetime gives a NaN date: `.after(.nan)`, or `.at` a NaN date.
    /// Writes refuse such a lifetime (``HoardError/Code/invalidArgument``), and
    /// configurations reject it.
    @usableFromInline
    var _isNaN: Bool {
        switch self {
        case .never: false
        case .after(let seconds): seconds.isNaN
        case .at(let date): date.timeIntervalSinceReferenceDate.isNaN
        }
    }

    /// The expiry date for an entry stored at `storedAt`, or `nil` for ``never``.
    public func date(storedAt: Date) -> Date? {
        switch self {
        case .never: return nil
        case .after(let seconds): return storedAt.addingTimeInterval(seconds)
        case .at(let date): return date
        }
    }
}
