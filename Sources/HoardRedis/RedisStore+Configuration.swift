#if Redis
import Foundation
import HoardNIOSupport
import Logging

/// A Redis server's host and TCP port.
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name or IP address.
    public var host: String
    /// The TCP port.
    public var port: Int

    /// Creates an address.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, with an IPv6 host in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension RedisStore {
    /// Where a ``RedisStore`` finds its server, how it names its keys, and how long
    /// it waits.
    ///
    /// ```swift
    /// var configuration = try RedisStore.Configuration(url: "redis://:secret@cache.internal:6379/2")
    /// configuration.keyPrefix = "shop"
    /// configuration.commandTimeout = .milliseconds(250)
    /// let store = try RedisStore(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The server's host name or IP address. Defaults to `"127.0.0.1"`.
        public var host: String

        /// The server's TCP port. Defaults to 6379.
        public var port: Int

        /// The nodes of a Redis Cluster to read its slot map from, or empty (the
        /// default) to talk to the single server at ``host`` and ``port``.
        ///
        /// With seeds, the store is a Redis Cluster client: it reads which primary
        /// owns each hash slot (`CLUSTER SLOTS`) from the first seed that answers,
        /// sends each command to the primary of its key's slot, and follows `MOVED`
        /// and `ASK` redirections. One seed is enough; more keep the store starting
        /// when one is down. ``database`` must be 0, the only database of a cluster.
        public var clusterSeeds: [ServerAddress]

        /// The ACL user to authenticate as, with ``password``. Defaults to `nil`:
        /// `AUTH <password>` authenticates as the `default` user.
        public var username: String?

        /// The password sent with `AUTH` on every new connection. Defaults to `nil`:
        /// no `AUTH`.
        public var password: String?

        /// The database number selected with `SELECT` on every new connection.
        /// Defaults to 0.
        public var database: Int

        /// The first part of every key and channel name the store uses, so that
        /// several applications can share a database. Defaults to `"hoard"`. Stores
        /// sharing a database must use prefixes of which neither is the other followed
        /// by `:`.
        public var keyPrefix: String

        /// Whether every key of a namespace goes to one hash slot of a Redis Cluster,
        /// and so to one primary. Defaults to `false`: keys spread over every slot.
        ///
        /// When on, the namespace is written in braces in every key
        /// (`<prefix>:<n>:{<namespace>}:<key>`), which a cluster hashes alone:
        /// ``RedisStore/entries(for:in:)`` is one `MGET` and a ``RedisStore/write(_:)``
        /// within one namespace one round trip, but all of a namespace's load and
        /// memory is on one primary. On a single server it changes only the key
        /// names. Every instance sharing a ``keyPrefix`` must use the same setting:
        /// the two layouts name the same entry differently.
        public var keepsNamespaceInOneSlot: Bool

        /// Whether ``RedisStore/invalidations(in:)`` also reports writes that did not
        /// come through Hoard: a value another service or `redis-cli` set or deleted.
        /// Defaults to `false`.
        ///
        /// When on, the store's pub/sub connection asks the server to track every key
        /// under ``keyPrefix`` (`CLIENT TRACKING on REDIRECT <itself> BCAST PREFIX
        /// <prefix>:`, Redis 6 or later), and the server sends it the keys of every
        /// write by any client. The server cannot tell Hoard's instances apart, so an
        /// instance hears of its own writes too: a `Cache` drops a key it just wrote
        /// from its memory and its local stores (an invalidation does not say who
        /// wrote), and reads it once from Redis. Redis's `NOLOOP` option cannot
        /// prevent it: it leaves out only the writes of the tracking connection
        /// itself, while the store writes over a pool of other connections. Turn it
        /// on only when other services write Hoard's keys. A flush of the
        /// database is reported as "everything changed". On a Redis Cluster every
        /// primary gets a tracking connection of its own (a node tracks only the
        /// writes it runs), opened when the first stream starts and moved when the
        /// primaries change; a new primary's first tracking subscription reports
        /// that changes may have been missed (`RemoteInvalidation.missed`), as
        /// writes before it were not tracked.
        public var serverAssistedInvalidation: Bool

        /// The most connections the store opens for its commands (the pub/sub
        /// connection of ``RedisStore/invalidations(in:)`` comes on top). Defaults to 4.
        public var maximumConnections: Int

        /// The most operations that share one connection at once, their commands
        /// pipelined. Defaults to 64.
        public var pipeliningLimit: Int

        /// How long opening a connection may take. Defaults to 5 seconds.
        public var connectTimeout: Duration

        /// How long the server may take to answer a command. A command that times out
        /// fails with ``RedisError/Code/timeout`` and its connection is closed.
        /// Defaults to 5 seconds.
        public var commandTimeout: Duration

        /// How long an operation waits for room on a connection when every connection
        /// is full, before it fails with ``RedisError/Code/poolExhausted``. Defaults
        /// to 5 seconds.
        public var connectionWaitTimeout: Duration

        /// How long the store waits after a failed connection attempt before it tries
        /// again; the delay doubles with each further failure. Defaults to 100 ms.
        public var initialReconnectDelay: Duration

        /// The longest delay between two connection attempts. Defaults to 10 seconds.
        public var maximumReconnectDelay: Duration

        /// How long the pub/sub connection of ``RedisStore/invalidations(in:)``
        /// waits, once it is open and after each check, before it sends `PING` to
        /// check that the server still answers; `nil` turns the check off. Defaults
        /// to 5 seconds.
        ///
        /// A server that stops answering without closing the connection (frozen, or
        /// cut off by a firewall or NAT that dropped the connection's state) would
        /// otherwise leave the streams waiting, hearing no change, until the
        /// operating system gives up on the connection, hours later. With the check,
        /// a connection on which nothing at all arrives within
        /// ``invalidationPingTimeout`` of a `PING` is closed and opened again (after
        /// the reconnect delays, doubling while new connections stay unanswered),
        /// and once the server confirms the subscription every stream receives
        /// `RemoteInvalidation.missed`. A connection that stops answering is closed
        /// at most about ``invalidationPingInterval`` plus ``invalidationPingTimeout``
        /// after the last thing it received.
        ///
        /// An ACL user needs permission for `PING`: a server that refuses it answers
        /// each check with an error, so the connection is closed and opened again
        /// (reporting `RemoteInvalidation.missed`) at every check. Where `PING` cannot
        /// be allowed, set this to `nil`: no `PING` is sent and the connection is
        /// closed only when the server or the operating system closes it, so a
        /// frozen server or a path that dropped the connection silently goes
        /// unnoticed until TCP gives up (give memory a short lifetime then).
        public var invalidationPingInterval: Duration?

        /// How long the pub/sub connection waits after a `PING` for anything to arrive
        /// (the answer, or any message) before it takes the connection for dead,
        /// closes it and opens a new one. Defaults to 5 seconds; unused while
        /// ``invalidationPingInterval`` is `nil`. See ``invalidationPingInterval``.
        public var invalidationPingTimeout: Duration

        /// The longest string reply the store accepts; a longer one is a
        /// ``RedisError/Code/protocolError`` and closes the connection. Defaults to
        /// 512 MiB, the server's own limit.
        public var maximumReplyBulkLength: Int

        /// The deepest nesting of aggregates (arrays, maps, sets) the store accepts in
        /// a reply. Defaults to 32.
        public var maximumReplyDepth: Int

        /// Where connection failures, lost connections, subscriptions the server
        /// refused, invalidation connections that left a `PING` unanswered, and
        /// resubscriptions (after which every watcher hears
        /// `RemoteInvalidation.missed`) are logged,
        /// once each, with `hoard.store` (the server's address), `hoard.tier`
        /// (`remote`), `hoard.operation` and `hoard.error` metadata; commands
        /// themselves are never logged. `nil` (the default) logs nothing.
        public var logger: Logger?

        /// Creates a configuration; every parameter defaults as its property says.
        public init(
            host: String = "127.0.0.1",
            port: Int = 6379,
            clusterSeeds: [ServerAddress] = [],
            username: String? = nil,
            password: String? = nil,
            database: Int = 0,
            keyPrefix: String = "hoard",
            keepsNamespaceInOneSlot: Bool = false,
            serverAssistedInvalidation: Bool = false,
            maximumConnections: Int = 4,
            pipeliningLimit: Int = 64,
            connectTimeout: Duration = .seconds(5),
            commandTimeout: Duration = .seconds(5),
            connectionWaitTimeout: Duration = .seconds(5),
            initialReconnectDelay: Duration = .milliseconds(100),
            maximumReconnectDelay: Duration = .seconds(10),
            invalidationPingInterval: Duration? = .seconds(5),
            invalidationPingTimeout: Duration = .seconds(5),
            maximumReplyBulkLength: Int = 512 << 20,
            maximumReplyDepth: Int = 32,
            logger: Logger? = nil
        ) {
            self.host = host
            self.port = port
            self.clusterSeeds = clusterSeeds
            self.username = username
            self.password = password
            self.database = database
            self.keyPrefix = keyPrefix
            self.keepsNamespaceInOneSlot = keepsNamespaceInOneSlot
            self.serverAssistedInvalidation = serverAssistedInvalidation
            self.maximumConnections = maximumConnections
            self.pipeliningLimit = pipeliningLimit
            self.connectTimeout = connectTimeout
            self.commandTimeout = commandTimeout
            self.connectionWaitTimeout = connectionWaitTimeout
            self.initialReconnectDelay = initialReconnectDelay
            self.maximumReconnectDelay = maximumReconnectDelay
            self.invalidationPingInterval = invalidationPingInterval
            self.invalidationPingTimeout = invalidationPingTimeout
            self.maximumReplyBulkLength = maximumReplyBulkLength
            self.maximumReplyDepth = maximumReplyDepth
            self.logger = logger
        }

        /// Creates a configuration from a URL of the form
        /// `redis://[[username]:password@]host[:port][/database]`, or
        /// `redis+cluster://[[username]:password@]host:port[,host:port…]` for a Redis
        /// Cluster (the nodes become ``clusterSeeds``); every other setting has its
        /// default.
        ///
        /// User and password are percent-decoded. `rediss://` (TLS) is not supported.
        ///
        /// - Throws: ``RedisError/Code/invalidConfiguration`` when the URL is not of
        ///   that form.
        public init(url: String) throws(RedisError) {
            if url.lowercased().hasPrefix("redis+cluster://") {
                try self.init(clusterURL: url)
                return
            }
            let parts: ServerURL
            do {
                parts = try ServerURL(url, schemes: ["redis"])
            } catch {
                switch error {
                case .notAURL:
                    throw RedisError(.invalidConfiguration, "\"\(url)\" is not a URL.")
                case .unsupportedScheme:
                    throw RedisError(
                        .invalidConfiguration,
                        "\"\(url)\" does not start with redis:// (rediss://, Redis over TLS, is not supported).")
                case .noHost:
                    throw RedisError(.invalidConfiguration, "\"\(url)\" names no host.")
                }
            }
            self.init(host: parts.host)
            if let port = parts.port { self.port = port }
            if let user = parts.username { username = user }
            if let password = parts.password { self.password = password }
            if !parts.path.isEmpty {
                guard let database = Int(parts.path) else {
                    throw RedisError(.invalidConfiguration, "\"\(url)\": the path must be a database number.")
                }
                self.database = database
            }
        }

        /// Parses a `redis+cluster://` URL: credentials as in a `redis://` URL, then
        /// comma-separated `host:port` seeds, then an optional `/0`.
        private init(clusterURL url: String) throws(RedisError) {
            var rest = Substring(url.dropFirst("redis+cluster://".count))
            var user: Substring?
            var password: Substring?
            if let at = rest.lastIndex(of: "@") {
                let credentials = rest[..<at]
                rest = rest[rest.index(after: at)...]
                if let colon = credentials.firstIndex(of: ":") {
                    user = credentials[..<colon]
                    password = credentials[credentials.index(after: colon)...]
                } else {
                    user = credentials
                }
            }
            var database = 0
            if let slash = rest.firstIndex(of: "/") {
                let path = rest[rest.index(after: slash)...]
                rest = rest[..<slash]
                if !path.isEmpty {
                    guard let number = Int(path) else {
                        throw RedisError(.invalidConfiguration, "\"\(url)\": the path must be a database number.")
                    }
                    database = number
                }
            }
            var seeds: [ServerAddress] = []
            for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
                guard let address = ServerAddress(redirection: part), !address.host.isEmpty else {
                    throw RedisError(
                        .invalidConfiguration, "\"\(url)\": \"\(part)\" is not a host:port pair.")
                }
                seeds.append(address)
            }
            guard let first = seeds.first else {
                throw RedisError(.invalidConfiguration, "\"\(url)\" names no node.")
            }
            self.init(host: first.host, port: first.port, clusterSeeds: seeds)
            self.database = database
            if let user, !user.isEmpty { username = user.removingPercentEncoding ?? String(user) }
            if let password { self.password = password.removingPercentEncoding ?? String(password) }
        }

        /// Checks every setting.
        func validate() throws(RedisError) {
            func check(_ condition: Bool, _ message: String) throws(RedisError) {
                if !condition { throw RedisError(.invalidConfiguration, message) }
            }
            try check(!host.isEmpty, "host must not be empty")
            try check((1...65535).contains(port), "port must be between 1 and 65535, not \(port)")
            try check(database >= 0, "database must not be negative, not \(database)")
            try check(
                clusterSeeds.isEmpty || database == 0, "a Redis Cluster has database 0 only, not \(database)")
            for seed in clusterSeeds {
                try check(!seed.host.isEmpty, "a cluster seed's host must not be empty")
                try check((1...65535).contains(seed.port), "a cluster seed's port must be between 1 and 65535")
            }
            try check(username == nil || password != nil, "a username needs a password")
            try check(maximumConnections >= 1, "maximumConnections must be at least 1, not \(maximumConnections)")
            try check(pipeliningLimit >= 1, "pipeliningLimit must be at least 1, not \(pipeliningLimit)")
            try check(connectTimeout > .zero, "connectTimeout must be positive")
            try check(commandTimeout > .zero, "commandTimeout must be positive")
            try check(connectionWaitTimeout >= .zero, "connectionWaitTimeout must not be negative")
            try check(initialReconnectDelay > .zero, "initialReconnectDelay must be positive")
            try check(
                maximumReconnectDelay >= initialReconnectDelay,
                "maximumReconnectDelay must be at least initialReconnectDelay")
            try check(
                invalidationPingInterval.map { $0 > .zero } ?? true,
                "invalidationPingInterval must be positive, or nil for no check")
            try check(invalidationPingTimeout > .zero, "invalidationPingTimeout must be positive")
            try check(maximumReplyBulkLength >= 1, "maximumReplyBulkLength must be at least 1")
            try check(maximumReplyDepth >= 1, "maximumReplyDepth must be at least 1")
        }

        var connectionSettings: _RedisConnection.Settings {
            var limits = _RESPParser.Limits()
            limits.maximumBulkLength = maximumReplyBulkLength
            limits.maximumDepth = maximumReplyDepth
            return _RedisConnection.Settings(
                host: host, port: port, username: username, password: password, database: database,
                connectTimeout: connectTimeout, commandTimeout: commandTimeout, limits: limits)
        }
    }
}
#endif
