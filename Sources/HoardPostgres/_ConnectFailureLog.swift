#if Postgres
import Logging
import Synchronization

/// The reason of the pool's latest failed connection attempt, so that an operation
/// that could not get a connection can say why.
///
/// postgres-nio's pool retries failed connection attempts by itself and only logs
/// them (at `info`, "Connection creation failed", with the error as `psql_error`
/// metadata); this log handler, the pool's background logger, keeps that text. A
/// successful connection clears it. When the server refused the login, the handler
/// also calls `onRefusedLogin`, so that operations waiting for a connection need not
/// wait out their limit for one that will not come.
final class _ConnectFailureLog: Sendable {
    private let latest = Mutex<String?>(nil)
    private let onRefusedLogin: @Sendable () -> Void

    /// - Parameter onRefusedLogin: Called, on the thread that logged it, after each
    ///   attempt the server refused for its credentials or database.
    init(onRefusedLogin: @escaping @Sendable () -> Void = {}) {
        self.onRefusedLogin = onRefusedLogin
    }

    /// What the latest failed attempt reported; `nil` when none failed since the last success.
    var reason: String? { latest.withLock { $0 } }

    func clear() { latest.withLock { $0 = nil } }

    /// Whether `reason` says the server refused the login: SQLSTATE class 28 (invalid
    /// authorization) or 3D000 (no such database).
    static func isRefusedLogin(_ reason: String) -> Bool {
        ["sqlState: 28", "sqlState: 3D000", "SQLSTATE 28", "SQLSTATE 3D000"].contains { reason.contains($0) }
    }

    fileprivate func record(_ reason: String) {
        latest.withLock { $0 = reason }
        if Self.isRefusedLogin(reason) { onRefusedLogin() }
    }

    /// A logger whose connection-failure messages land here; every message also
    /// goes to `caller`.
    func logger(forwardingTo caller: Logger) -> Logger {
        Logger(label: caller.label) { _ in MultiplexLogHandler([Handler(log: self), caller.handler]) }
    }

    private struct Handler: LogHandler {
        let log: _ConnectFailureLog
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.message.description == "Connection creation failed" else { return }
            if let error = event.metadata?["psql_error"] {
                log.record("\(error)")
            } else if let error = event.error {
                log.record(String(reflecting: error))
            } else {
                log.record("no reason given")
            }
        }
    }
}
#endif
