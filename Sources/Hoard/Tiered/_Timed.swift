/// Runs `body` and, when there is somewhere to send it, hands its duration to
/// `timings` (the cost when `timings` is `nil` is one comparison).
@inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
func _timed<T>(
    _ timings: (@Sendable (CacheTiming) -> Void)?, _ operation: CacheTiming.Operation, _ tier: CacheTier,
    _ body: () throws -> T
) rethrows -> T {
    guard let timings else { return try body() }
    let start = ContinuousClock.now
    do {
        let result = try body()
        timings(CacheTiming(operation: operation, tier: tier, duration: .now - start, succeeded: true))
        return result
    } catch {
        timings(CacheTiming(operation: operation, tier: tier, duration: .now - start, succeeded: false))
        throw error
    }
}

/// ``_timed(_:_:_:_:)`` for asynchronous work.
func _timed<T>(
    _ timings: (@Sendable (CacheTiming) -> Void)?, _ operation: CacheTiming.Operation, _ tier: CacheTier,
    _ body: () async throws -> T
) async rethrows -> T {
    guard let timings else { return try await body() }
    let start = ContinuousClock.now
    do {
        let result = try await body()
        timings(CacheTiming(operation: operation, tier: tier, duration: .now - start, succeeded: true))
        return result
    } catch {
        timings(CacheTiming(operation: operation, tier: tier, duration: .now - start, succeeded: false))
        throw error
    }
}
