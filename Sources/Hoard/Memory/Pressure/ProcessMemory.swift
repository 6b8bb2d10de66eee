import Foundation

/// How much memory this process may use, for limits given as a fraction of it.
///
/// ```swift
/// let images = try MemoryCache<URL, Data>(configuration: .init(
///     costLimit: ProcessMemory.fraction(0.1)))   // a tenth of what the process may use
/// ```
public enum ProcessMemory {
    /// The bytes this process may use: on Linux the memory limit of its cgroup (v2
    /// `memory.max`, or v1 `memory.limit_in_bytes`, the smallest along its ancestors)
    /// when one is set below the machine's memory, otherwise the machine's memory
    /// (`MemTotal`); on Apple platforms the physical memory. Read anew on each call.
    public static var availableBytes: Int {
        let physical = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        guard let limit = _ProcessCgroup.memoryLimit(), limit > 0 else { return physical }
        return min(limit, physical)
    }

    /// `fraction` (between 0 and 1) of ``availableBytes``, rounded down, at least 1:
    /// for ``MemoryCache/Configuration/costLimit`` when a value's cost is its size
    /// in bytes, as it is for `Data` and `String`. Computed when it is called.
    /// A fraction below 0 counts as 0, one above 1 as 1, and NaN as 0: the result is
    /// always within `1...availableBytes`, never a trap.
    public static func fraction(_ fraction: Double) -> Int {
        let available = availableBytes
        let clamped = fraction.isNaN ? 0 : min(max(fraction, 0), 1)
        let bytes = (Double(available) * clamped).rounded(.down)
        // `Double(available)` may round up past `available` (and past `Int.max`).
        return max(1, bytes < Double(available) ? Int(bytes) : available)
    }
}
