#if Redis
import Logging

/// What a ``RedisStore`` logs, with the metadata every Hoard log record carries
/// (`hoard.store`, `hoard.tier`, `hoard.operation`, `hoard.error`). Nothing on
/// a command's path logs, except a read of a value not in the store's format
/// (with `hoard.namespace` and `hoard.key`).
struct _RedisLog: Sendable {
    let logger: Logger?
    /// The server, as `hoard.store` names it.
    let endpoint: String

    func log(
        _ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, operation: String,
        error: (any Error)? = nil, metadata extra: Logger.Metadata = [:]
    ) {
        guard let logger else { return }
        var metadata: Logger.Metadata = [
            "hoard.store": "redis \(endpoint)", "hoard.tier": "remote", "hoard.operation": "\(operation)",
        ]
        if let error { metadata["hoard.error"] = "\(error)" }
        metadata.merge(extra) { _, new in new }
        logger.log(level: level, message(), metadata: metadata)
    }
}
#endif
