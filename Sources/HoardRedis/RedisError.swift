#if Redis
import Hoard
import HoardNIOSupport

/// The error every `HoardRedis` API throws when the server, the connection or the
/// configuration fails. (`RedisStore`'s `set` and `write` refuse a write whose dates
/// no store can keep with `HoardError` code `invalidArgument` instead, as every store
/// refuses it.)
///
/// A `RedisError` carries a ``Code`` a caller can switch on, a message a person can
/// read, the command and the cache key involved when there are any, the server's own
/// error text for ``Code/serverError``, and the underlying error that caused it. Its
/// `description` is a sentence that says what went wrong and what to look at.
///
/// ```swift
/// do {
///     let entry = try await store.entry(for: "user:42", in: "profiles")
/// } catch let error as RedisError where error.code == .timeout || error.code == .connectionFailed {
///     // the server is slow or away: treat as a miss
/// }
/// ```
public struct RedisError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in later versions, so
    /// `switch` over it with a `default` clause.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The raw name of the code, stable across versions.
        public let rawValue: String

        /// Creates a code from its raw name.
        public init(_ rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// A configuration value is out of range, or a `redis://` URL cannot be read.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A connection to the server could not be opened (refused, unreachable, DNS,
        /// connect timeout), or the store is waiting out its reconnect backoff.
        public static let connectionFailed = Code("connectionFailed")
        /// The connection closed while the command was in flight. The command may or
        /// may not have been carried out.
        public static let connectionClosed = Code("connectionClosed")
        /// The server refused the username or password (`AUTH`), or the database
        /// (`SELECT`), while a connection was being set up.
        public static let authenticationFailed = Code("authenticationFailed")
        /// The server did not answer within the configured time. The connection is
        /// closed, since every reply behind the missing one would arrive late too.
        public static let timeout = Code("timeout")
        /// The server sent bytes that are not valid RESP, or a reply larger or deeper
        /// than the configured limits, or a reply of an unexpected shape.
        public static let protocolError = Code("protocolError")
        /// The server answered with an error reply; see ``RedisError/serverMessage``.
        public static let serverError = Code("serverError")
        /// Every connection of the pool was busy for longer than the configured wait.
        public static let poolExhausted = Code("poolExhausted")
        /// A Redis Cluster could not serve the key's hash slot: no node owns it (the
        /// cluster is failing over or not fully configured), or redirections did
        /// not settle within the store's retry limit.
        public static let clusterDown = Code("clusterDown")
        /// The store has been shut down.
        public static let shutdown = Code("shutdown")
        /// The calling task was cancelled while the operation waited for room on a
        /// connection; nothing was sent.
        public static let cancelled = Code("cancelled")
    }

    /// What kind of failure this is.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The name of the Redis command involved (`GET`, `MGET`, `SET`, …), if any.
    public let command: String?
    /// The cache key involved, when the failure concerns one key.
    public let key: String?
    /// The server's error reply (`WRONGPASS invalid username-password pair`, …), for
    /// ``Code/serverError`` and ``Code/authenticationFailed``.
    public let serverMessage: String?
    /// The error that caused this one, when there is one.
    public let underlying: (any Error)?
    /// For an error thrown by ``RedisStore/write(_:)``: the changes of the batch that
    /// were not applied (the server refused them) or may not have been (their round
    /// trip failed), in the batch's order. Every other change of the batch was
    /// applied. Empty for every other error.
    public let unappliedChanges: [CacheStoreWrite]

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        command: String? = nil,
        key: String? = nil,
        serverMessage: String? = nil,
        underlying: (any Error)? = nil,
        unappliedChanges: [CacheStoreWrite] = []
    ) {
        self.code = code
        self.message = message
        self.command = command
        self.key = key
        self.serverMessage = serverMessage
        self.underlying = underlying
        self.unappliedChanges = unappliedChanges
    }

    public var description: String {
        var text = StoreErrorText.describe(
            code: code.rawValue, message: message, details: [("command", command), ("key", key)],
            serverMessage: serverMessage, underlying: underlying)
        if !unappliedChanges.isEmpty {
            let named = unappliedChanges.prefix(10).map { change in
                switch change {
                case .set(_, let key, let namespace, _, _): "set \(key.prefix(200)) in \(namespace.prefix(200))"
                case .removeValue(let key, let namespace): "removeValue \(key.prefix(200)) in \(namespace.prefix(200))"
                case .removeAll(let namespace): "removeAll in \(namespace.prefix(200))"
                }
            }
            let more = unappliedChanges.count > 10 ? ", and \(unappliedChanges.count - 10) more" : ""
            text += " (\(unappliedChanges.count) changes not applied: \(named.joined(separator: ", "))\(more))"
        }
        return text
    }

    /// The same error, naming `key` (when it names none yet).
    func with(key: String) -> RedisError {
        guard self.key == nil else { return self }
        return RedisError(
            code, message, command: command, key: key, serverMessage: serverMessage, underlying: underlying,
            unappliedChanges: unappliedChanges)
    }

    /// The same error, naming the changes of a batch not applied, and with `note`
    /// added to its message.
    func with(unappliedChanges: [CacheStoreWrite], note: String? = nil) -> RedisError {
        RedisError(
            code, note.map { "\(message) \($0)" } ?? message, command: command, key: key,
            serverMessage: serverMessage, underlying: underlying, unappliedChanges: unappliedChanges)
    }
}
#endif
