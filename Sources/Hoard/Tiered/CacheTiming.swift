/// How long one operation of a ``Cache`` took, for metrics: handed to
/// ``Cache/Configuration/timings`` as it completes.
public struct CacheTiming: Sendable, Hashable, CustomStringConvertible {
    /// What was timed.
    public enum Operation: String, Sendable, Hashable {
        /// One run of the fetch closure (whether it returned a value, `nil` or threw).
        case fetch
        /// One store read of a key (`entry(for:in:)`), hit or miss.
        case read
        /// One store write of a batch the writer applied (one transaction).
        case write
    }

    /// What was timed.
    public var operation: Operation
    /// Where: ``CacheTier/fetch`` for a fetch, the store's tier otherwise.
    public var tier: CacheTier
    /// How long it took.
    public var duration: Duration
    /// Whether it completed without an error.
    public var succeeded: Bool

    /// Creates a timing.
    public init(operation: Operation, tier: CacheTier, duration: Duration, succeeded: Bool) {
        self.operation = operation
        self.tier = tier
        self.duration = duration
        self.succeeded = succeeded
    }

    public var description: String {
        "\(operation.rawValue) in \(tier): \(duration)\(succeeded ? "" : " (failed)")"
    }
}
