#if Redis
import Foundation
import Hoard
import HoardNIOSupport
import NIOCore
import NIOPosix

/// A remote cache tier on a Redis server (Redis 6 or later, or a compatible server),
/// spoken to in RESP over SwiftNIO with a pool of pipelining connections.
///
/// ```swift
/// let store = try RedisStore(configuration: .init(host: "cache.internal", keyPrefix: "shop"))
/// try await store.set(bytes, for: "user:42", in: "profiles", storedAt: .now, expiresAt: .now + 300)
/// let entry = try await store.entry(for: "user:42", in: "profiles")      // StoredEntry?
/// let many = try await store.entries(for: ["user:1", "user:2"], in: "profiles")  // one MGET
/// for await change in store.invalidations(in: "profiles") { … }         // other instances' writes
/// ```
///
/// What it guarantees:
/// - **Keys.** An entry lives under `<prefix>:<n>:<namespace>:<key>`, `<n>` being the
///   namespace's length in UTF-8 bytes, so any namespace and key, `:` included, map
///   to distinct Redis keys, and clearing one namespace never touches another.
/// - **Values.** The Redis value is a 17-byte header (format version 1, `storedAt`
///   and `expiresAt` as big-endian Int64 milliseconds since 1970, `Int64.min` for
///   "never") followed by the bytes. An entry with an expiry is written with a `PX`
///   lifetime, so the server drops it by itself. A value in another format is a miss,
///   reported at `warning` through ``Configuration/logger``, and kept: a read never
///   deletes, so it cannot delete a valid value another instance wrote meanwhile.
/// - **Invalidations.** Every set and removal publishes a message on
///   `<prefix>:invalidate:<n>:<namespace>` naming this instance, which ignores its own
///   messages; ``invalidations(in:)`` delivers the others'. ``write(_:)`` announces the
///   keys one round trip changes in a namespace in one message.
///   With ``Configuration/serverAssistedInvalidation`` the server also reports
///   writes by every client, this instance included (`CLIENT TRACKING … BCAST
///   PREFIX`): a value set or deleted with `redis-cli` drops the key from every
///   instance's memory tier.
/// - **Connections.** Commands go over at most ``Configuration/maximumConnections``
///   connections, opened when first needed, each shared by up to
///   ``Configuration/pipeliningLimit`` operations with their commands pipelined: an
///   operation writes its commands without waiting for the replies of earlier ones,
///   and the commands of operations that arrive together leave in one write. A
///   lost connection is replaced on the next operation, with exponential backoff
///   between failed attempts; every command has a timeout. No event loop thread
///   ever blocks. The pool's connections all run on ``eventLoop``; tasks that prefer
///   ``taskExecutor`` run there too, and their operations cost no thread hop.
/// - **Redis Cluster.** With ``Configuration/clusterSeeds`` (or a
///   `redis+cluster://` URL) each command goes to the primary of its key's hash
///   slot, over a pool per node; `MOVED` and `ASK` redirections are followed, a
///   bounded number of times. Keys spread over every slot: ``entries(for:in:)``
///   sends one `MGET` per slot and ``removeAll(in:)`` scans every primary.
///   Invalidations are published with `PUBLISH`, which reaches the subscribers of
///   every node.
/// - **Errors.** Every failure of the server, the connection or the configuration is
///   a ``RedisError``. A write whose dates no store can keep (a stored date that is
///   NaN or infinite, an expiry that is NaN) is refused before anything is sent with
///   `HoardError` code `invalidArgument`, as every store of the package refuses it.
///
/// A store needs no explicit shutdown; ``shutdown()`` closes its connections at once
/// and finishes its invalidation streams.
public final class RedisStore: RemoteCacheStore {
    /// The configuration the store was created with.
    public let configuration: Configuration

    /// This instance's unique id, sent with every invalidation it publishes so that
    /// it can ignore its own.
    public let instanceID: UUID

    /// The event loop every connection of the store's pool runs on: the one thread
    /// that writes its commands, reads its replies and resumes the operations waiting
    /// for them. Chosen from `eventLoopGroup` when the store is created (pass a single
    /// `EventLoop` to choose it yourself); the pub/sub connection of
    /// ``invalidations(in:)`` may run on another loop of the group.
    public let eventLoop: any EventLoop

    /// An executor that runs tasks on ``eventLoop``, for callers that make many
    /// operations one after the other and want each to cost no thread hop.
    ///
    /// An operation called from an ordinary task costs two hand-offs between
    /// threads: the task hands its command to the event loop, and the event loop
    /// hands the reply back to the task's thread in the concurrency pool. Code that
    /// runs on the store's event loop hands nothing over: it writes the command and
    /// is resumed on the same thread that read the reply. To run there, prefer this
    /// executor; child tasks inherit the preference:
    ///
    /// ```swift
    /// let hits = try await withTaskExecutorPreference(store.taskExecutor) {
    ///     var hits = 0
    ///     for key in keys where try await store.entry(for: key, in: "profiles") != nil { hits += 1 }
    ///     return hits
    /// }
    /// Task(executorPreference: store.taskExecutor) { try await store.set(bytes, for: "k", in: "n", storedAt: .now, expiresAt: nil) }
    /// ```
    ///
    /// What it guarantees: nonisolated code of a task that prefers it, the store's
    /// operations included, runs on ``eventLoop``, one job at a time, in the order the
    /// jobs became ready; actor-isolated code still runs on its actor. Everything such
    /// a task does between two awaits holds up the store's I/O (and that of any other
    /// channel on the loop), so keep it short and never block in it; send CPU-heavy
    /// work elsewhere. It pays most for one operation at a time and for many
    /// concurrent single-key operations, each of which would otherwise be resumed on
    /// another thread; for many keys at once, ``entries(for:in:)`` and ``write(_:)``
    /// cost one round trip and no task per key either way. The event loop group must
    /// outlive the tasks that prefer this executor: a shut-down loop runs nothing.
    /// Jobs that become ready together (the operations one read of replies resumes)
    /// run one after the other in one event loop task.
    public var taskExecutor: any TaskExecutor { executor }

    let keyspace: _RedisKeyspace
    /// The pool of the configured server (of the first seed, for a cluster).
    let pool: _RedisConnectionPool
    /// The slot map and the pools of every node, for a Redis Cluster.
    let cluster: _RedisCluster?
    private let executor: EventLoopTaskExecutor
    let hub: _InvalidationHub
    let subscriber: _RedisSubscriber
    /// The tracking connections of a cluster with server-assisted invalidation.
    private let tracker: _RedisClusterTracker?
    let clock: any CacheClock
    /// Where the store reports what happens outside a caller's view.
    let log: _RedisLog

    /// Creates a store. It connects when it is first used.
    ///
    /// - Parameters:
    ///   - configuration: The server, credentials, key prefix, pool size and timeouts.
    ///   - clock: Where the store reads the time, to turn an expiry date into a `PX`
    ///     lifetime and to check the expiry of what it reads. Defaults to
    ///     `SystemClock`.
    ///   - eventLoopGroup: Where its connections run: the pool's on one loop of the
    ///     group (``eventLoop``), the pub/sub connection on any. Defaults to SwiftNIO's
    ///     shared `MultiThreadedEventLoopGroup.singleton`.
    /// - Throws: ``RedisError/Code/invalidConfiguration`` when a setting is out of range.
    public init(
        configuration: Configuration,
        clock: any CacheClock = SystemClock(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(RedisError) {
        try configuration.validate()
        self.configuration = configuration
        self.clock = clock
        instanceID = UUID()
        keyspace = _RedisKeyspace(
            prefix: configuration.keyPrefix, namespaceTagged: configuration.keepsNamespaceInOneSlot)
        eventLoop = eventLoopGroup.next()
        executor = EventLoopTaskExecutor(eventLoop: eventLoop)
        let connectionSettings = configuration.connectionSettings
        let log = _RedisLog(logger: configuration.logger, endpoint: connectionSettings.endpoint)
        self.log = log
        let poolSettings = _RedisConnectionPool.Settings(
            connection: connectionSettings,
            maximumConnections: configuration.maximumConnections,
            pipeliningLimit: configuration.pipeliningLimit,
            connectionWaitTimeout: configuration.connectionWaitTimeout,
            initialReconnectDelay: configuration.initialReconnectDelay,
            maximumReconnectDelay: configuration.maximumReconnectDelay,
            log: log)
        var subscriberEndpoints = [connectionSettings]
        let hub = _InvalidationHub(
            instanceID: instanceID.uuidString,
            trackedKeyspace: configuration.serverAssistedInvalidation ? keyspace : nil)
        self.hub = hub
        if configuration.clusterSeeds.isEmpty {
            cluster = nil
            tracker = nil
            pool = _RedisConnectionPool(settings: poolSettings, group: eventLoop)
        } else {
            let seeds = configuration.clusterSeeds
            var tracker: _RedisClusterTracker?
            if configuration.serverAssistedInvalidation {
                let prefix = configuration.keyPrefix
                let initialDelay = configuration.initialReconnectDelay
                let maximumDelay = configuration.maximumReconnectDelay
                let pingInterval = configuration.invalidationPingInterval
                let pingTimeout = configuration.invalidationPingTimeout
                tracker = _RedisClusterTracker { address, reportsGap, onTrouble in
                    var settings = connectionSettings
                    settings.host = address.host
                    settings.port = address.port
                    return _RedisSubscriber(
                        endpoints: [settings], trackedPrefix: prefix, tracksOnly: true,
                        reportsGapOnFirstConnection: reportsGap, onConnectionTrouble: onTrouble,
                        group: eventLoopGroup, hub: hub,
                        initialReconnectDelay: initialDelay, maximumReconnectDelay: maximumDelay,
                        pingInterval: pingInterval, pingTimeout: pingTimeout,
                        log: _RedisLog(logger: configuration.logger, endpoint: address.description))
                }
            }
            self.tracker = tracker
            var onPrimariesChanged: (@Sendable ([_RedisCluster.Address]) -> Void)?
            if let tracker {
                onPrimariesChanged = { primaries in Task { await tracker.reconcile(primaries) } }
            }
            let cluster = _RedisCluster(
                seeds: seeds, template: poolSettings, group: eventLoop, onPrimariesChanged: onPrimariesChanged)
            self.cluster = cluster
            pool = cluster.pool(for: seeds[0])
            subscriberEndpoints = seeds.map { seed in
                var settings = connectionSettings
                settings.host = seed.host
                settings.port = seed.port
                return settings
            }
        }
        subscriber = _RedisSubscriber(
            endpoints: subscriberEndpoints,
            trackedPrefix: configuration.serverAssistedInvalidation && configuration.clusterSeeds.isEmpty
                ? configuration.keyPrefix : nil,
            group: eventLoopGroup, hub: hub,
            initialReconnectDelay: configuration.initialReconnectDelay,
            maximumReconnectDelay: configuration.maximumReconnectDelay,
            pingInterval: configuration.invalidationPingInterval, pingTimeout: configuration.invalidationPingTimeout,
            log: log)
    }

    deinit {
        Task { [pool, cluster, tracker, subscriber] in
            await pool.shutdown()
            await cluster?.shutdown()
            await tracker?.shutdown()
            await subscriber.shutdown()
        }
    }

    /// Closes every connection and finishes every invalidation stream. Operations
    /// after it fail with ``RedisError/Code/shutdown``.
    public func shutdown() async {
        await pool.shutdown()
        await cluster?.shutdown()
        await tracker?.shutdown()
        await subscriber.shutdown()
    }

    // MARK: Reading

    /// The entry stored for `key` in `namespace`, if there is a live one: one `GET`.
    ///
    /// - Returns: The entry; `nil` when there is none, it has expired by the store's
    ///   clock, or its value is not in the store's format (such a value is kept, and
    ///   reported through ``Configuration/logger``).
    /// - Throws: ``RedisError`` when the server cannot answer.
    public func entry(for key: String, in namespace: String) async throws(RedisError) -> StoredEntry? {
        var writer = _RESPCommandWriter(
            capacity: 48 + keyspace.prefix.utf8.count + namespace.utf8.count + key.utf8.count)
        writer.command("GET", argumentCount: 1)
        keyspace.writeKey(key, in: namespace, to: &writer)
        let command = _RedisCommand(name: "GET", encoded: writer.buffer)
        let reply: _RESPValue
        if let cluster {
            let slot = _RedisHashSlot.slot(of: keyspace.key(key, in: namespace))
            do {
                reply = try await cluster.send(command, slot: slot)
            } catch {
                throw error.with(key: key)
            }
        } else {
            reply = try await run(key: key) { connection throws(RedisError) in try await connection.send(command) }
        }
        return try await liveEntry(in: reply, key: key, namespace: namespace, command: "GET", now: clock.now())
    }

    /// The live entries for many keys of one namespace: one `MGET`, one round trip.
    ///
    /// - Returns: The entries found, by key; expired entries and values in another
    ///   format (which are kept, and reported) are absent.
    /// - Throws: ``RedisError`` when the server cannot answer.
    public func entries(for keys: [String], in namespace: String) async throws(RedisError) -> [String: StoredEntry] {
        guard !keys.isEmpty else { return [:] }
        if let cluster { return try await clusterEntries(for: keys, in: namespace, cluster: cluster) }
        let perKey = keyspace.prefix.utf8.count + namespace.utf8.count + 32
        var writer = _RESPCommandWriter(capacity: 32 + keys.reduce(0) { $0 + perKey + $1.utf8.count })
        writer.command("MGET", argumentCount: keys.count)
        for key in keys { keyspace.writeKey(key, in: namespace, to: &writer) }
        let command = _RedisCommand(name: "MGET", encoded: writer.buffer)
        let reply = try await run(key: nil) { connection throws(RedisError) in try await connection.send(command) }
        try Self.check(reply, command: "MGET")
        guard let values = reply.elements, values.count == keys.count else {
            throw RedisError(
                .protocolError, "MGET of \(keys.count) keys was answered with \(reply.elements?.count ?? 0) values.",
                command: "MGET")
        }
        let now = clock.now()
        var entries: [String: StoredEntry] = [:]
        entries.reserveCapacity(keys.count)
        for index in keys.indices {
            if let entry = try await liveEntry(
                in: values[index], key: keys[index], namespace: namespace, command: "MGET", now: now)
            {
                entries[keys[index]] = entry
            }
        }
        return entries
    }

    // MARK: Invalidations

    /// Keys other instances changed or removed in `namespace`, for cross-instance
    /// invalidation. This instance's own writes are left out, except with
    /// ``Configuration/serverAssistedInvalidation``, where the server reports every
    /// write under the key prefix, this instance's included.
    ///
    /// The first stream of a namespace subscribes to its channel on the store's
    /// dedicated pub/sub connection, which is opened on first use and reopened, with
    /// backoff, whenever it is lost. After a resubscription every stream of the
    /// namespace receives `RemoteInvalidation.missed`: changes made while the
    /// connection was down may have been missed. So it does when the first
    /// subscription comes only after failed attempts to connect (the server was
    /// down when the stream started). Changes made while the first attempt is under
    /// way, before the server confirmed the subscription, are not reported. A
    /// subscription the server refuses (an ACL user without the channel's
    /// permission, a proxy without pub/sub) is logged at `warning` with the server's
    /// message and asked for again on a new connection, with backoff, until the
    /// server accepts it (then `RemoteInvalidation.missed`). The stream buffers
    /// without limit and ends when the consumer stops iterating or the store shuts
    /// down.
    ///
    /// - Parameter namespace: The namespace to watch.
    /// - Returns: A stream of `RemoteInvalidation`s.
    public func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        let channel = keyspace.channel(for: namespace)
        guard let id = hub.add(continuation, channel: channel) else { return stream }
        let hub = self.hub
        let subscriber = self.subscriber
        let tracker = self.tracker
        let cluster = self.cluster
        continuation.onTermination = { _ in
            hub.remove(id: id, channel: channel)
            Task {
                await subscriber.sync()
                if let tracker, let cluster { await tracker.sync(cluster: cluster) }
            }
        }
        Task {
            await subscriber.sync()
            if let tracker, let cluster { await tracker.sync(cluster: cluster) }
        }
        return stream
    }

    // MARK: Helpers

    /// Sends raw commands, for tests.
    func command(_ arguments: String...) async throws(RedisError) -> _RESPValue {
        let command = _RedisCommand(arguments[0], arguments: arguments.dropFirst().map { .string($0) })
        return try await pool.withConnection { connection throws(RedisError) in try await connection.send(command) }
    }

    func run<T: Sendable>(
        key: String?, _ body: (_RedisConnection) async throws(RedisError) -> T
    ) async throws(RedisError) -> T {
        do {
            return try await pool.withConnection(body)
        } catch {
            throw key.map { error.with(key: $0) } ?? error
        }
    }

    /// The live entry a `GET` or `MGET` reply holds. A value in another format is a
    /// miss, reported at `warning`, and stays: the read saw it at one moment, and
    /// deleting it afterwards could delete a valid value another instance wrote in
    /// between.
    func liveEntry(
        in reply: _RESPValue, key: String, namespace: String, command: String, now: Date
    ) async throws(RedisError) -> StoredEntry? {
        try Self.check(reply, command: command, key: key)
        switch reply {
        case .bulkString(nil), .null:
            return nil
        case .bulkString(let value?):
            guard let entry = _RedisEntryFormat.decode(value) else {
                // Damaged, or from another format version: a miss, kept. A Cache
                // fetches the value and writes it over this one.
                log.log(
                    .warning,
                    "a value not in the store's format (\(value.readableBytes) bytes) was read as a miss and kept",
                    operation: command, metadata: ["hoard.namespace": "\(namespace)", "hoard.key": "\(key)"])
                return nil
            }
            if let expiresAt = entry.expiresAt, expiresAt <= now { return nil }
            return entry
        default:
            throw RedisError(
                .protocolError, "\(command) was answered with \(reply), not a string.", command: command, key: key)
        }
    }

    /// Throws the server's error reply as a ``RedisError``.
    static func check(_ reply: _RESPValue, command: String, key: String? = nil) throws(RedisError) {
        if let message = reply.errorMessage {
            throw RedisError(
                .serverError, "Redis answered \(command) with an error: \(message)", command: command, key: key,
                serverMessage: message)
        }
    }
}
#endif
