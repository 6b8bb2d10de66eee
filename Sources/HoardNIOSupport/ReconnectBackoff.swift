#if Redis || Postgres
/// The delays between attempts to reach a server that failed, the one rule every
/// connection of the Redis and PostgreSQL stores follows: `initial` after the first
/// failure, doubled after each further one, never above `maximum`; a success
/// starts over.
package struct ReconnectBackoff: Sendable {
    /// The delay after the first failure.
    package let initial: Duration
    /// The longest delay.
    package let maximum: Duration
    /// The failures in a row so far.
    package private(set) var failures = 0

    package init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
    }

    /// Notes a failed attempt.
    ///
    /// - Returns: How long to wait before the next one.
    package mutating func fail() -> Duration {
        failures += 1
        return Self.delay(afterFailures: failures, initial: initial, maximum: maximum)
    }

    /// Notes a success: the next failure waits `initial` again.
    package mutating func succeed() {
        failures = 0
    }

    /// The delay after `failures` failed attempts in a row: `initial` after one (or
    /// none), doubled after each further one, never above `maximum`.
    package static func delay(afterFailures failures: Int, initial: Duration, maximum: Duration) -> Duration {
        var delay = initial
        for _ in 1..<max(1, min(failures, 40)) {
            delay *= 2
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }
}
#endif
