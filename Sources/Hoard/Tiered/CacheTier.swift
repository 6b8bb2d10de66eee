/// A tier of a ``Cache``.
public enum CacheTier: Sendable, Hashable, CustomStringConvertible {
    /// The in-memory tier.
    case memory
    /// A local store, by its position in ``Cache/Configuration/localStores``.
    case local(Int)
    /// A remote store, by its position in ``Cache/Configuration/remoteStores``.
    case remote(Int)
    /// The fetch closure.
    case fetch

    public var description: String {
        switch self {
        case .memory: "memory"
        case .local(let index): "local store \(index)"
        case .remote(let index): "remote store \(index)"
        case .fetch: "fetch"
        }
    }
}

/// A failure a ``Cache`` met behind the caller's back, with where and doing what.
public struct CacheFailure: Error, Sendable, CustomStringConvertible {
    /// What the cache was doing.
    public enum Operation: String, Sendable, Hashable {
        /// Reading an entry.
        case read
        /// Writing an entry (write-behind, write-through or promotion).
        case write
        /// Removing an entry or clearing a namespace.
        case remove
        /// Turning stored bytes into a value. The entry stays in its store; the read
        /// goes on to the next tier.
        case decode
        /// Turning a value into bytes.
        case encode
        /// Running the fetch closure (for a read, or a background refresh).
        case fetch
    }

    /// The key involved, as its ``CacheKey/cacheKeyString`` (the caller's string,
    /// not the normalised form the stores keep), or `nil` for namespace-wide
    /// operations.
    public let key: String?
    /// The tier where it happened.
    public let tier: CacheTier
    /// What the cache was doing.
    public let operation: Operation
    /// The error.
    public let error: any Error

    /// Creates a failure report.
    public init(key: String?, tier: CacheTier, operation: Operation, error: any Error) {
        self.key = key
        self.tier = tier
        self.operation = operation
        self.error = error
    }

    public var description: String {
        "\(operation.rawValue) failed in \(tier)\(key.map { " for key \($0.prefix(200))" } ?? ""): \(error)"
    }
}
