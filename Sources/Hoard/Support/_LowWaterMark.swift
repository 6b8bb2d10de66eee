/// The level a cache or a store evicts down to once a write takes it over a limit.
enum _LowWaterMark {
    /// `fraction` (in `0...1`) of `limit`, rounded down, and never more than `limit`:
    /// a limit near `Int.max` is not exact as a `Double`, and its product may not fit
    /// in an `Int` (`Int.max` becomes 2^63).
    static func of(_ limit: Int, at fraction: Double) -> Int {
        let scaled = (Double(limit) * fraction).rounded(.down)
        return scaled < Double(Int.max) ? min(limit, Int(scaled)) : limit
    }
}
