import Logging

extension Logger {
    /// Logs a failure a ``Cache`` met behind its caller's back, at `warning`, with
    /// the metadata every Hoard log record carries: `hoard.store`, `hoard.tier`,
    /// `hoard.operation`, `hoard.key` (when there is one) and `hoard.error`.
    func log(_ failure: CacheFailure, cache: String) {
        var metadata: Logger.Metadata = [
            "hoard.store": "\(cache)",
            "hoard.tier": "\(failure.tier)",
            "hoard.operation": "\(failure.operation.rawValue)",
            "hoard.error": "\(failure.error)",
        ]
        if let key = failure.key { metadata["hoard.key"] = "\(key.prefix(200))" }
        warning("\(failure.operation.rawValue) failed in \(failure.tier)", metadata: metadata)
    }
}
