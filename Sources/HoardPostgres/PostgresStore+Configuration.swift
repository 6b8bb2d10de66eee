#if Postgres
import Foundation
import HoardNIOSupport
import Logging
import PostgresNIO

extension PostgresStore {
    /// Where a ``PostgresStore`` finds its server, which table it uses, how large the
    /// table may grow, and how long it waits.
    ///
    /// ```swift
    /// var configuration = try PostgresStore.Configuration(url: "postgres://app:secret@db.internal:5432/app")
    /// configuration.table = "shop_cache"
    /// configuration.isUnlogged = true          // faster writes; emptied after a server crash
    /// configuration.maximumRows = 1_000_000     // oldest entries are trimmed first
    /// let store = try PostgresStore(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The server's host name or IP address. Defaults to `"127.0.0.1"`.
        public var host: String

        /// The server's TCP port. Defaults to 5432.
        public var port: Int

        /// The role to log in as. Defaults to `"postgres"`.
        public var username: String

        /// The password, if the server asks for one. Defaults to `nil`.
        public var password: String?

        /// The database to connect to; `nil` (the default) uses the server's default,
        /// a database named like the user.
        public var database: String?

        /// The `application_name` the store's sessions report (in `pg_stat_activity`,
        /// in the server's log). Defaults to `"hoard"`.
        public var applicationName: String

        /// Whether connections use TLS: `.disable` (the default), `.prefer(…)` or
        /// `.require(…)` with a `TLSConfiguration` (for example
        /// `.require(.makeClientConfiguration())`). The `sslmode` query item of a URL
        /// sets it.
        public var tls: PostgresClient.Configuration.TLS

        /// The schema holding the table. Defaults to `"public"`. Any name of 1 to 63
        /// UTF-8 bytes without NUL; it is always quoted, so it is taken literally
        /// (case and punctuation included). A schema other than `public` is created
        /// when missing.
        public var schema: String

        /// The table holding the entries. Defaults to `"hoard_cache"`. Any name of 1
        /// to 48 UTF-8 bytes without NUL (its indexes `<table>_stored_at` and
        /// `<table>_expires_at` must fit PostgreSQL's 63-byte limit); always quoted.
        public var table: String

        /// Whether the table is created `UNLOGGED`: writes skip the write-ahead log,
        /// which makes them much cheaper, and the server empties the table after a
        /// crash (not after a clean restart) and does not replicate it. Applies only
        /// when the store creates the table. Defaults to `false`.
        public var isUnlogged: Bool

        /// Whether the store creates the schema, table and indexes when they are
        /// missing, on first use. Defaults to `true`. Without it, a missing table
        /// makes every operation fail with ``PostgresStoreError/Code/serverError``
        /// (SQLSTATE `42P01`).
        public var createsTable: Bool

        /// The `LISTEN`/`NOTIFY` channel on which stores of the same table announce
        /// changes. `nil` (the default) derives one from schema and table:
        /// `hoard:<schema>.<table>` when that is at most 63 bytes of letters, digits,
        /// `_`, `.` and `-`, otherwise `hoard:` and a hash of the two. A channel set
        /// here must be 1 to 63 bytes of those characters or `:`.
        public var notificationChannel: String?

        /// How many connections the store opens for its statements (the one
        /// connection that listens for invalidations comes on top). The store opens
        /// them all with its first operation and keeps them open. Defaults to 4.
        public var maximumConnections: Int

        /// How long opening a connection may take. Defaults to 5 seconds.
        public var connectTimeout: Duration

        /// How long a statement may run. The server cancels it then (the sessions'
        /// `statement_timeout`), and it fails with ``PostgresStoreError/Code/timeout``;
        /// when no answer has come one second later still (a server or network that
        /// does not answer at all), the connection is closed and the operation fails
        /// with the same code. Defaults to 5 seconds.
        ///
        /// The store's limits are watched by one timer that ticks every twentieth of
        /// the shorter of this and ``connectionWaitTimeout`` (at least every
        /// millisecond, at most every 100 ms), so a limit fires up to one tick after
        /// it has passed.
        public var commandTimeout: Duration

        /// How long an operation waits for a connection (a free one from the pool, or
        /// a new one being opened) before it fails with
        /// ``PostgresStoreError/Code/connectionFailed``. Defaults to 5 seconds. Like
        /// ``commandTimeout``, it fires up to one tick of the store's timer late.
        ///
        /// When the server refuses a connection's login (wrong user or password, no
        /// such database), every operation waiting for a connection fails at once
        /// with ``PostgresStoreError/Code/authenticationFailed`` and the server's
        /// message, instead of waiting out this limit.
        public var connectionWaitTimeout: Duration

        /// After an operation could not get a connection, how long later operations
        /// fail at once with ``PostgresStoreError/Code/connectionFailed`` instead of waiting
        /// again; the delay doubles with each further failure and resets once a
        /// connection is had. Defaults to 100 ms.
        public var initialReconnectDelay: Duration

        /// The longest such delay. Defaults to 10 seconds.
        public var maximumReconnectDelay: Duration

        /// The most rows the table may keep; maintenance deletes the oldest (by
        /// `stored_at`) beyond it. `nil` (the default) sets no limit.
        public var maximumRows: Int?

        /// The most value bytes (`octet_length(value)`, summed) the table may keep;
        /// maintenance deletes the oldest rows beyond it. `nil` (the default) sets no
        /// limit.
        public var maximumBytes: Int?

        /// How many writes (sets and removals) of this store pass between two runs of
        /// maintenance: deleting expired rows, then trimming to ``maximumRows`` and
        /// ``maximumBytes``. The write that reaches the count runs it before it
        /// returns. 0 runs it only when ``PostgresStore/maintain()`` is called.
        /// Defaults to 1,000.
        public var maintenanceInterval: Int

        /// The logger postgres-nio writes to (its connection pool's background
        /// messages, and each statement's at `debug` and below). `nil` (the
        /// default) logs nothing.
        public var logger: Logger?

        /// Creates a configuration; every parameter defaults as its property says.
        public init(
            host: String = "127.0.0.1",
            port: Int = 5432,
            username: String = "postgres",
            password: String? = nil,
            database: String? = nil,
            applicationName: String = "hoard",
            tls: PostgresClient.Configuration.TLS = .disable,
            schema: String = "public",
            table: String = "hoard_cache",
            isUnlogged: Bool = false,
            createsTable: Bool = true,
            notificationChannel: String? = nil,
            maximumConnections: Int = 4,
            connectTimeout: Duration = .seconds(5),
            commandTimeout: Duration = .seconds(5),
            connectionWaitTimeout: Duration = .seconds(5),
            initialReconnectDelay: Duration = .milliseconds(100),
            maximumReconnectDelay: Duration = .seconds(10),
            maximumRows: Int? = nil,
            maximumBytes: Int? = nil,
            maintenanceInterval: Int = 1_000,
            logger: Logger? = nil
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.applicationName = applicationName
            self.tls = tls
            self.schema = schema
            self.table = table
            self.isUnlogged = isUnlogged
            self.createsTable = createsTable
            self.notificationChannel = notificationChannel
            self.maximumConnections = maximumConnections
            self.connectTimeout = connectTimeout
            self.commandTimeout = commandTimeout
            self.connectionWaitTimeout = connectionWaitTimeout
            self.initialReconnectDelay = initialReconnectDelay
            self.maximumReconnectDelay = maximumReconnectDelay
            self.maximumRows = maximumRows
            self.maximumBytes = maximumBytes
            self.maintenanceInterval = maintenanceInterval
            self.logger = logger
        }

        /// Creates a configuration from a URL of the form
        /// `postgres://[user[:password]@]host[:port][/database][?sslmode=disable|prefer|require]`
        /// (`postgresql://` too); every other setting has its default.
        ///
        /// User and password are percent-decoded. `sslmode=prefer` and `require` use
        /// the system's trust roots; `verify-full` is `require`.
        ///
        /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` when the URL is not of
        ///   that form.
        public init(url: String) throws(PostgresStoreError) {
            let parts: ServerURL
            do {
                parts = try ServerURL(url, schemes: ["postgres", "postgresql"])
            } catch {
                switch error {
                case .notAURL:
                    throw PostgresStoreError(.invalidConfiguration, "\"\(url)\" is not a URL.")
                case .unsupportedScheme:
                    throw PostgresStoreError(
                        .invalidConfiguration, "\"\(url)\" does not start with postgres:// or postgresql://.")
                case .noHost:
                    throw PostgresStoreError(.invalidConfiguration, "\"\(url)\" names no host.")
                }
            }
            self.init(host: parts.host)
            if let port = parts.port { self.port = port }
            if let user = parts.username { username = user }
            if let password = parts.password { self.password = password }
            if !parts.path.isEmpty { database = parts.path.removingPercentEncoding ?? parts.path }
            for item in parts.queryItems where item.name == "sslmode" {
                switch item.value ?? "" {
                case "disable": tls = .disable
                case "allow", "prefer": tls = .prefer(.makeClientConfiguration())
                case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
                default:
                    throw PostgresStoreError(
                        .invalidConfiguration, "\"\(url)\": unknown sslmode \"\(item.value ?? "")\".")
                }
            }
        }

        /// The channel the store notifies and listens on.
        var channel: String {
            if let notificationChannel { return notificationChannel }
            let name = "\(schema).\(table)"
            if name.utf8.count <= 57, name.utf8.allSatisfy(Self.isChannelByte) { return "hoard:" + name }
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return "hoard:" + String(hash, radix: 16)
        }

        private static func isChannelByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }

        /// Checks every setting.
        func validate() throws(PostgresStoreError) {
            func check(_ condition: Bool, _ message: String) throws(PostgresStoreError) {
                if !condition { throw PostgresStoreError(.invalidConfiguration, message) }
            }
            try check(!host.isEmpty, "host must not be empty")
            try check((1...65535).contains(port), "port must be between 1 and 65535, not \(port)")
            try check(!username.isEmpty, "username must not be empty")
            try check(!applicationName.utf8.contains(0), "applicationName must not contain NUL")
            try check(
                (1...63).contains(schema.utf8.count) && !schema.utf8.contains(0),
                "schema must be 1 to 63 UTF-8 bytes without NUL, not \"\(schema.prefix(100))\"")
            try check(
                (1...48).contains(table.utf8.count) && !table.utf8.contains(0),
                "table must be 1 to 48 UTF-8 bytes without NUL, not \"\(table.prefix(100))\"")
            if let notificationChannel {
                try check(
                    (1...63).contains(notificationChannel.utf8.count)
                        && notificationChannel.utf8.allSatisfy { Self.isChannelByte($0) || $0 == UInt8(ascii: ":") },
                    "notificationChannel must be 1 to 63 bytes of letters, digits, _ . - :, not \"\(notificationChannel.prefix(100))\""
                )
            }
            try check(maximumConnections >= 1, "maximumConnections must be at least 1, not \(maximumConnections)")
            try check(connectTimeout > .zero, "connectTimeout must be positive")
            try check(commandTimeout > .zero, "commandTimeout must be positive")
            try check(connectionWaitTimeout > .zero, "connectionWaitTimeout must be positive")
            try check(initialReconnectDelay > .zero, "initialReconnectDelay must be positive")
            try check(
                maximumReconnectDelay >= initialReconnectDelay,
                "maximumReconnectDelay must be at least initialReconnectDelay")
            try check((maximumRows ?? 0) >= 0, "maximumRows must not be negative")
            try check((maximumBytes ?? 0) >= 0, "maximumBytes must not be negative")
            try check(maintenanceInterval >= 0, "maintenanceInterval must not be negative")
        }

        /// The configuration of a postgres-nio client with at most `connections` connections.
        ///
        /// With `keepsConnectionsOpen` (the store's pool) the client opens all its
        /// connections when it starts, reopens one as soon as it is lost, never closes
        /// one for being idle and sends no keep-alive queries. postgres-nio otherwise
        /// schedules an idle timer and a keep-alive timer every time a connection goes
        /// back to the pool, and cancels them when it is leased again: a task group of
        /// three tasks and a sleep per timer, on every single statement, which cost
        /// more than the statement itself. Without keep-alive queries a connection that
        /// died silently is found by the next statement on it, which fails with
        /// ``PostgresStoreError/Code/timeout`` a second after ``commandTimeout``; the
        /// pool then replaces it.
        func clientConfiguration(connections: Int, keepsConnectionsOpen: Bool) -> PostgresClient.Configuration {
            var configuration = PostgresClient.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: tls)
            configuration.options.connectTimeout = connectTimeout
            configuration.options.maximumConnections = connections
            if keepsConnectionsOpen {
                configuration.options.minimumConnections = connections
                configuration.options.keepAliveBehavior = nil
            } else {
                configuration.options.minimumConnections = 0
            }
            configuration.options.additionalStartupParameters = [
                ("application_name", applicationName),
                ("statement_timeout", String(Self.statementTimeout(commandTimeout))),
            ]
            return configuration
        }

        /// `duration` as PostgreSQL's `statement_timeout`: whole milliseconds, at least
        /// 1 and at most `Int32.max` (the server's limit, about 24.8 days), so that any
        /// positive ``commandTimeout``, `.seconds(Int64.max)` included, gives a value
        /// the server accepts, and none traps.
        static func statementTimeout(_ duration: Duration) -> Int {
            let milliseconds = (duration / .milliseconds(1)).rounded(.down)
            guard milliseconds >= 1 else { return 1 }
            return milliseconds < Double(Int32.max) ? Int(milliseconds) : Int(Int32.max)
        }
    }
}
#endif
