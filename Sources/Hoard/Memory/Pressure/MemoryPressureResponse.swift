/// How a ``MemoryCache`` (or the memory tier of a ``Cache``) gives memory back when
/// the system runs short: on each signal it evicts, in its eviction policy's order
/// (least valuable first), down to a fraction of the cost it holds (of its entry
/// count, when its values cost nothing), and reports each entry as evicted for
/// ``EvictionReason/memoryPressure``. Disk and remote tiers are never touched.
///
/// ```swift
/// var configuration = MemoryCache<String, Data>.Configuration(costLimit: 256 << 20)
/// configuration.memoryPressure = .init(warningFraction: 0.25)   // keep a quarter on a warning
/// ```
public struct MemoryPressureResponse: Sendable {
    /// The fraction of its cost the cache keeps on a warning. Defaults to 0.5.
    public var warningFraction: Double
    /// The fraction of its cost the cache keeps on critical pressure. Defaults to 0:
    /// the cache empties.
    public var criticalFraction: Double
    /// Where the signals come from. Defaults to ``SystemMemoryPressure``, the
    /// operating system's; tests pass a ``ManualMemoryPressure``.
    public var source: any MemoryPressureSource

    /// Creates a response; every parameter defaults as its property says. The
    /// fractions must be between 0 and 1 (checked when the cache is created).
    public init(
        warningFraction: Double = 0.5, criticalFraction: Double = 0,
        source: any MemoryPressureSource = SystemMemoryPressure()
    ) {
        self.warningFraction = warningFraction
        self.criticalFraction = criticalFraction
        self.source = source
    }
}
