#if Postgres
import PostgresNIO

extension PostgresStoreError {
    /// The error postgres-nio's `error` stands for, while the store was doing `operation`.
    init(from error: any Error, operation: String) {
        if let error = error as? PostgresStoreError {
            // An error raised below the pool names no operation; the pool's does.
            self.init(
                error.code, error.message, operation: error.operation ?? operation, key: error.key,
                serverMessage: error.serverMessage, sqlState: error.sqlState, underlying: error.underlying)
            return
        }
        if error is CancellationError {
            self.init(.cancelled, "The operation was cancelled.", operation: operation, underlying: error)
            return
        }
        // postgres-nio maps its pool's shutdown and cancellation errors to PSQLError;
        // the one left, its circuit breaker, is of a type it does not export.
        if String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError") {
            let text = String(reflecting: error)
            if text.contains("requestCancelled") {
                self.init(
                    .cancelled, "The wait for a connection was cancelled.", operation: operation, underlying: error)
            } else if text.contains("poolShutdown") {
                self.init(.shutdown, "The store has been shut down.", operation: operation, underlying: error)
            } else {
                self.init(
                    .connectionFailed, "No connection to the PostgreSQL server could be opened for a long while.",
                    operation: operation, underlying: error)
            }
            return
        }
        guard let psql = error as? PSQLError else {
            self.init(.protocolError, "Unexpected failure: \(error)", operation: operation, underlying: error)
            return
        }
        let serverMessage = psql.serverInfo?[.message]
        let sqlState = psql.serverInfo?[.sqlState]
        switch psql.code {
        case .server:
            let message = serverMessage ?? "an error without a message"
            if let sqlState, sqlState.hasPrefix("28") || sqlState == "3D000" {
                self.init(
                    .authenticationFailed, "PostgreSQL refused the login: \(message)", operation: operation,
                    serverMessage: serverMessage, sqlState: sqlState, underlying: error)
            } else if let sqlState, sqlState.hasPrefix("57P") {
                // admin_shutdown, crash_shutdown, cannot_connect_now: the session is gone.
                self.init(
                    .connectionClosed, "PostgreSQL ended the session: \(message)", operation: operation,
                    serverMessage: serverMessage, sqlState: sqlState, underlying: error)
            } else if sqlState == "57014" {
                // query_canceled: the session's statement_timeout (commandTimeout) ran out.
                self.init(
                    .timeout, "PostgreSQL cancelled the statement: \(message)", operation: operation,
                    serverMessage: serverMessage, sqlState: sqlState, underlying: error)
            } else {
                self.init(
                    .serverError, "PostgreSQL answered with an error: \(message)", operation: operation,
                    serverMessage: serverMessage, sqlState: sqlState, underlying: error)
            }
        case .connectionError, .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            self.init(
                .connectionFailed, "Could not connect to the PostgreSQL server.", operation: operation,
                underlying: error)
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            self.init(
                .connectionClosed, "The connection to the PostgreSQL server closed while the statement was in flight.",
                operation: operation, underlying: error)
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            self.init(.authenticationFailed, "PostgreSQL refused the login.", operation: operation, underlying: error)
        case .queryCancelled:
            self.init(.cancelled, "The statement was cancelled.", operation: operation, underlying: error)
        case .poolClosed:
            self.init(.shutdown, "The store has been shut down.", operation: operation, underlying: error)
        default:
            self.init(.protocolError, "postgres-nio failed: \(psql.code)", operation: operation, underlying: error)
        }
    }
}
#endif
