#if Postgres
import HoardNIOSupport

/// The error every `HoardPostgres` API throws when the server, the connection or the
/// configuration fails. (`PostgresStore`'s `set` and `write` refuse a write whose
/// dates no store can keep with `HoardError` code `invalidArgument` instead, as every
/// store refuses it, and a key too long for the table's index with `HoardError`
/// code `valueTooLarge`.)
///
/// A `PostgresStoreError` carries a ``Code`` a caller can switch on, a message a person
/// can read, the operation and the cache key involved when there are any, the
/// server's own message and SQLSTATE for ``Code/serverError``, and the underlying
/// error (usually postgres-nio's `PSQLError`) that caused it. Its `description` is a
/// sentence that says what went wrong and what to look at.
///
/// ```swift
/// do {
///     let entry = try await store.entry(for: "user:42", in: "profiles")
/// } catch let error as PostgresStoreError where error.code == .timeout || error.code == .connectionFailed {
///     // the server is slow or away: treat as a miss
/// }
/// ```
public struct PostgresStoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in later versions, so
    /// `switch` over it with a `default` clause.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The raw name of the code, stable across versions.
        public let rawValue: String

        /// Creates a code from its raw name.
        public init(_ rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// A configuration value is out of range, an identifier is not allowed, or a
        /// `postgres://` URL cannot be read.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// No connection to the server could be had: it refused or did not answer
        /// within the wait, or the store is waiting out its reconnect backoff after
        /// such a failure.
        public static let connectionFailed = Code("connectionFailed")
        /// The connection closed while the statement was in flight (the server went
        /// away or terminated the session). The statement may or may not have run.
        public static let connectionClosed = Code("connectionClosed")
        /// The server refused the user, the password or the database.
        public static let authenticationFailed = Code("authenticationFailed")
        /// The statement ran past ``PostgresStore/Configuration/commandTimeout``: the
        /// server cancelled it (SQLSTATE `57014`), or, when the server did not answer at
        /// all a second later, the connection was closed.
        public static let timeout = Code("timeout")
        /// The server answered a statement with an error; see
        /// ``PostgresStoreError/serverMessage`` and ``PostgresStoreError/sqlState``.
        public static let serverError = Code("serverError")
        /// The server sent something the store did not expect (a row of another shape,
        /// a message postgres-nio could not decode).
        public static let protocolError = Code("protocolError")
        /// The store has been shut down.
        public static let shutdown = Code("shutdown")
        /// The calling task was cancelled; the statement may or may not have run.
        public static let cancelled = Code("cancelled")
    }

    /// What kind of failure this is.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// What the store was doing (`get`, `multi-get`, `set`, `remove`, `clear`,
    /// `create table`, `sweep`, `trim`), if anything.
    public let operation: String?
    /// The cache key involved, when the failure concerns one key.
    public let key: String?
    /// The server's error message, for ``Code/serverError`` and
    /// ``Code/authenticationFailed``.
    public let serverMessage: String?
    /// The server's five-character SQLSTATE code (`42P01`, `28P01`, …), when it sent one.
    public let sqlState: String?
    /// The error that caused this one, when there is one.
    public let underlying: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        operation: String? = nil,
        key: String? = nil,
        serverMessage: String? = nil,
        sqlState: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.operation = operation
        self.key = key
        self.serverMessage = serverMessage
        self.sqlState = sqlState
        self.underlying = underlying
    }

    public var description: String {
        StoreErrorText.describe(
            code: code.rawValue, message: message, details: [("operation", operation), ("key", key)],
            serverMessage: serverMessage, note: sqlState.map { "SQLSTATE \($0)" }, underlying: underlying)
    }

    /// The same error, naming `key` (when it names none yet).
    func with(key: String?) -> PostgresStoreError {
        guard self.key == nil, let key else { return self }
        return PostgresStoreError(
            code, message, operation: operation, key: key, serverMessage: serverMessage, sqlState: sqlState,
            underlying: underlying)
    }
}
#endif
