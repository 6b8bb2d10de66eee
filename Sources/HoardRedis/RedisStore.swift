import Foundation
import Hoard
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
///   lifetime, so the server drops it by itself. A value in another format is a miss
///   and is removed.
/// - **Invalidations.** Every set and removal publishes a message on
///   `<prefix>:invalidate:<n>:<namespace>` naming this instance, which ignores its own
///   messages; ``invalidations(in:)`` delivers the others'.
/// - **Connections.** Commands go over at most ``Configuration/maximumConnections``
///   connections, opened when first needed, each shared by up to
///   ``Configuration/pipeliningLimit`` operations with their commands pipelined: an
///   operation writes its commands without waiting for the replies of earlier ones,
///   and the commands of operations that arrive together leave in one write. A
///   lost connection is replaced on the next operation, with exponential backoff
///   between failed attempts; every command has a timeout. No event loop thread
///   ever blocks.
/// - **Errors.** Every failure is a ``RedisError``.
///
/// A store needs no explicit shutdown; ``shutdown()`` closes its connections at once
/// and finishes its invalidation streams.
public final class RedisStore: RemoteCacheStore {
    /// The configuration the store was created with.
    public let configuration: Configuration

    /// This instance's unique id, sent with every invalidation it publishes so that
    /// it can ignore its own.
    public let instanceID: UUID

    let keyspace: _RedisKeyspace
    let pool: _RedisConnectionPool
    private let hub: _InvalidationHub
    private let subscriber: _RedisSubscriber
    private let clock: any CacheClock

    /// Creates a store. It connects when it is first used.
    ///
    /// - Parameters:
    ///   - configuration: The server, credentials, key prefix, pool size and timeouts.
    ///   - clock: Where the store reads the time, to turn an expiry date into a `PX`
    ///     lifetime and to check the expiry of what it reads. Defaults to
    ///     ``Hoard/SystemClock``.
    ///   - eventLoopGroup: The event loops its connections run on. Defaults to
    ///     SwiftNIO's shared `MultiThreadedEventLoopGroup.singleton`.
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
        keyspace = _RedisKeyspace(prefix: configuration.keyPrefix)
        let connectionSettings = configuration.connectionSettings
        pool = _RedisConnectionPool(
            settings: .init(
                connection: connectionSettings,
                maximumConnections: configuration.maximumConnections,
                pipeliningLimit: configuration.pipeliningLimit,
                connectionWaitTimeout: configuration.connectionWaitTimeout,
                initialReconnectDelay: configuration.initialReconnectDelay,
                maximumReconnectDelay: configuration.maximumReconnectDelay),
            group: eventLoopGroup)
        hub = _InvalidationHub(instanceID: instanceID.uuidString)
        subscriber = _RedisSubscriber(
            settings: connectionSettings, group: eventLoopGroup, hub: hub,
            initialReconnectDelay: configuration.initialReconnectDelay,
            maximumReconnectDelay: configuration.maximumReconnectDelay)
    }

    deinit {
        Task { [pool, subscriber] in
            await pool.shutdown()
            await subscriber.shutdown()
        }
    }

    /// Closes every connection and finishes every invalidation stream. Operations
    /// after it fail with ``RedisError/Code/shutdown``.
    public func shutdown() async {
        await pool.shutdown()
        await subscriber.shutdown()
    }

    // MARK: Reading

    /// The entry stored for `key` in `namespace`, if there is a live one: one `GET`.
    ///
    /// - Returns: The entry; `nil` when there is none, it has expired by the store's
    ///   clock, or its value is not in the store's format (such a value is removed).
    /// - Throws: ``RedisError`` when the server cannot answer.
    public func entry(for key: String, in namespace: String) async throws(RedisError) -> StoredEntry? {
        var writer = _RESPCommandWriter(capacity: 48 + keyspace.prefix.utf8.count + namespace.utf8.count + key.utf8.count)
        writer.command("GET", argumentCount: 1)
        keyspace.writeKey(key, in: namespace, to: &writer)
        let command = _RedisCommand(name: "GET", encoded: writer.buffer)
        let reply = try await run(key: key) { connection throws(RedisError) in try await connection.send(command) }
        return try await liveEntry(in: reply, key: key, namespace: namespace, command: "GET", now: clock.now())
    }

    /// The live entries for many keys of one namespace: one `MGET`, one round trip.
    ///
    /// - Returns: The entries found, by key; expired entries and values in another
    ///   format (which are removed) are absent.
    /// - Throws: ``RedisError`` when the server cannot answer.
    public func entries(for keys: [String], in namespace: String) async throws(RedisError) -> [String: StoredEntry] {
        guard !keys.isEmpty else { return [:] }
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

    // MARK: Writing

    /// Stores `data` for `key` in `namespace` with `SET … PX`, and publishes the change,
    /// in one round trip.
    ///
    /// An entry whose `expiresAt` is not after the store's clock is not stored, and
    /// any older value for the key is removed (as ``removeValue(for:in:)`` does).
    ///
    /// - Throws: ``RedisError`` when the server cannot answer; the value may or may
    ///   not have been stored.
    public func set(
        _ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?
    ) async throws(RedisError) {
        try await write([.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)])
    }

    /// Removes the entry for `key` in `namespace` with `UNLINK`, and publishes the
    /// change, in one round trip.
    ///
    /// - Throws: ``RedisError`` when the server cannot answer.
    public func removeValue(for key: String, in namespace: String) async throws(RedisError) {
        try await write([.removeValue(for: key, in: namespace)])
    }

    /// Applies many changes in order, pipelined: the `SET … PX`/`UNLINK` and
    /// `PUBLISH` commands of up to ``pipelineLimit`` changes go out in one write on
    /// one connection, and their replies are awaited together. A ``Hoard/CacheStoreWrite/removeAll(in:)``
    /// waits for the changes before it and runs as ``removeAll(in:)`` does.
    ///
    /// Each change is the one ``set(_:for:in:storedAt:expiresAt:)`` or
    /// ``removeValue(for:in:)`` would make, invalidation included; the server runs
    /// the commands of one connection in order, so the last change to a key wins.
    ///
    /// - Throws: The first ``RedisError``: a reply that was an error, or a round trip
    ///   that failed (then the changes of that round trip may or may not have been
    ///   applied).
    public func write(_ batch: [CacheStoreWrite]) async throws(RedisError) {
        var writer = _RESPCommandWriter(capacity: encodedSize(of: batch.prefix(Self.pipelineLimit)))
        // The command and key of each change in `writer`, for its two replies.
        var sent: [(command: String, key: String)] = []
        var firstError: RedisError?
        var next = 0
        func send() async throws(RedisError) {
            guard !sent.isEmpty else { return }
            let encoded = writer.buffer
            let changes = sent
            writer = _RESPCommandWriter(capacity: encodedSize(of: batch[next...].prefix(Self.pipelineLimit)))
            sent = []
            let replies = try await run(key: changes.count == 1 ? changes[0].key : nil) { connection throws(RedisError) in
                try await connection.send(encoded: encoded, count: 2 * changes.count, name: changes[0].command)
            }
            for (index, change) in changes.enumerated() where firstError == nil {
                do {
                    try Self.check(replies[2 * index], command: change.command, key: change.key)
                    try Self.check(replies[2 * index + 1], command: "PUBLISH", key: change.key)
                } catch {
                    firstError = error
                }
            }
        }
        for change in batch {
            next += 1
            switch change {
            case .set(let data, let key, let namespace, let storedAt, let expiresAt):
                var lifetime: Int64?
                if let expiresAt {
                    let milliseconds = (expiresAt.timeIntervalSince(clock.now()) * 1000).rounded(.up)
                    if milliseconds <= 0 {
                        // Already expired: not stored, and any older value removed.
                        writeUnlink(key: key, in: namespace, to: &writer)
                        sent.append(("UNLINK", key))
                        break
                    }
                    // Beyond ~30,000 years the server could overflow; such an entry is as good as eternal.
                    if milliseconds < 1e15 { lifetime = Int64(milliseconds) }
                }
                writer.command("SET", argumentCount: lifetime == nil ? 2 : 4)
                keyspace.writeKey(key, in: namespace, to: &writer)
                _RedisEntryFormat.write(data, storedAt: storedAt, expiresAt: expiresAt, to: &writer)
                if let lifetime {
                    writer.argument("PX")
                    writer.argument(String(lifetime))
                }
                writePublish(key: key, in: namespace, to: &writer)
                sent.append(("SET", key))
            case .removeValue(let key, let namespace):
                writeUnlink(key: key, in: namespace, to: &writer)
                sent.append(("UNLINK", key))
            case .removeAll(let namespace):
                try await send()
                try await removeAll(in: namespace)
            }
            if sent.count >= Self.pipelineLimit { try await send() }
        }
        try await send()
        if let firstError { throw firstError }
    }

    /// The most changes ``write(_:)`` sends in one round trip.
    public static var pipelineLimit: Int { 256 }

    /// About how many bytes the commands of `changes` take, so their buffer is
    /// allocated once.
    private func encodedSize(of changes: ArraySlice<CacheStoreWrite>) -> Int {
        let fixed = 160 + 2 * keyspace.prefix.utf8.count
        return changes.reduce(0) { total, change in
            switch change {
            case .set(let data, let key, let namespace, _, _):
                total + fixed + data.count + 2 * (namespace.utf8.count + key.utf8.count)
            case .removeValue(let key, let namespace):
                total + fixed + 2 * (namespace.utf8.count + key.utf8.count)
            case .removeAll:
                total
            }
        }
    }

    /// Removes every entry of `namespace` and no other, then publishes
    /// ``Hoard/RemoteInvalidation/all``.
    ///
    /// It walks the keyspace with `SCAN … MATCH <prefix>:<n>:<namespace>:*` (glob
    /// characters escaped) and removes each page of keys with `UNLINK`, which frees
    /// memory on a background thread of the server. `KEYS` is never used: `SCAN`
    /// does not block the server. The alternative, a per-namespace generation counter
    /// in every key, clears in O(1) but costs every read an extra lookup of the
    /// counter, and leaves the old generation's entries taking memory until they
    /// expire, forever for entries without a lifetime; a cache must not leak like
    /// that. The price of `SCAN` is a walk over the whole database, and no atomicity:
    /// a value written to the namespace while the walk runs may survive it.
    ///
    /// - Complexity: O(keys in the database), in pages of about 1,000 keys.
    /// - Throws: ``RedisError`` when the server cannot answer; some entries may have
    ///   been removed.
    public func removeAll(in namespace: String) async throws(RedisError) {
        let pattern = keyspace.namespacePattern(namespace)
        let announcement = publish(hub.messageAll(), in: namespace)
        try await run(key: nil) { connection throws(RedisError) in
            var cursor = "0"
            repeat {
                let reply = try await connection.send(
                    _RedisCommand("SCAN", .string(cursor), "MATCH", .bytes(pattern), "COUNT", "1000"))
                try Self.check(reply, command: "SCAN")
                guard let page = reply.elements, page.count == 2, let next = page[0].string,
                    let keys = page[1].elements
                else { throw RedisError(.protocolError, "SCAN was answered with an unexpected reply.", command: "SCAN") }
                let redisKeys = keys.compactMap(\.bytes)
                if !redisKeys.isEmpty {
                    let unlinked = try await connection.send(
                        _RedisCommand("UNLINK", arguments: redisKeys.map { .bytes($0) }))
                    try Self.check(unlinked, command: "UNLINK")
                }
                cursor = next
            } while cursor != "0"
            try Self.check(try await connection.send(announcement), command: "PUBLISH")
        }
    }

    // MARK: Invalidations

    /// Keys other instances changed or removed in `namespace` (never this instance's
    /// own writes), for cross-instance invalidation.
    ///
    /// The first stream of a namespace subscribes to its channel on the store's
    /// dedicated pub/sub connection, which is opened on first use and reopened, with
    /// backoff, whenever it is lost. After a resubscription every stream of the
    /// namespace receives ``Hoard/RemoteInvalidation/all``, since changes made while
    /// the connection was down were missed. Changes made before the server confirmed
    /// the first subscription are not reported. The stream buffers without limit
    /// and ends when the consumer stops iterating or the store shuts down.
    ///
    /// - Parameter namespace: The namespace to watch.
    /// - Returns: A stream of ``Hoard/RemoteInvalidation``s.
    public func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteInvalidation.self)
        let channel = keyspace.channel(for: namespace)
        guard let id = hub.add(continuation, channel: channel) else { return stream }
        let hub = self.hub
        let subscriber = self.subscriber
        continuation.onTermination = { _ in
            hub.remove(id: id, channel: channel)
            Task { await subscriber.sync() }
        }
        Task { await subscriber.sync() }
        return stream
    }

    // MARK: Helpers

    /// Sends raw commands, for tests.
    func command(_ arguments: String...) async throws(RedisError) -> _RESPValue {
        let command = _RedisCommand(arguments[0], arguments: arguments.dropFirst().map { .string($0) })
        return try await pool.withConnection { connection throws(RedisError) in try await connection.send(command) }
    }

    private func publish(_ message: ByteBuffer, in namespace: String) -> _RedisCommand {
        _RedisCommand("PUBLISH", .bytes(keyspace.channel(for: namespace)), .bytes(message))
    }

    /// Appends `UNLINK <key>` and its `PUBLISH`.
    private func writeUnlink(key: String, in namespace: String, to writer: inout _RESPCommandWriter) {
        writer.command("UNLINK", argumentCount: 1)
        keyspace.writeKey(key, in: namespace, to: &writer)
        writePublish(key: key, in: namespace, to: &writer)
    }

    /// Appends `PUBLISH <channel of namespace> <"key changed" message>`.
    private func writePublish(key: String, in namespace: String, to writer: inout _RESPCommandWriter) {
        writer.command("PUBLISH", argumentCount: 2)
        writer.argument(keyspace.channel(for: namespace))
        hub.writeMessage(key: key, to: &writer)
    }

    private func run<T: Sendable>(
        key: String?, _ body: (_RedisConnection) async throws(RedisError) -> T
    ) async throws(RedisError) -> T {
        do {
            return try await pool.withConnection(body)
        } catch {
            throw key.map { error.with(key: $0) } ?? error
        }
    }

    /// The live entry a `GET` or `MGET` reply holds, removing a value in another format.
    private func liveEntry(
        in reply: _RESPValue, key: String, namespace: String, command: String, now: Date
    ) async throws(RedisError) -> StoredEntry? {
        try Self.check(reply, command: command, key: key)
        switch reply {
        case .bulkString(nil), .null:
            return nil
        case .bulkString(let value?):
            guard let entry = _RedisEntryFormat.decode(value) else {
                // Damaged, or from another format version: a miss, and removed so it
                // does not come back on every read.
                let unlink = _RedisCommand("UNLINK", .bytes(keyspace.key(key, in: namespace)))
                _ = try? await pool.withConnection { connection throws(RedisError) in try await connection.send(unlink) }
                return nil
            }
            if let expiresAt = entry.expiresAt, expiresAt <= now { return nil }
            return entry
        default:
            throw RedisError(.protocolError, "\(command) was answered with \(reply), not a string.", command: command, key: key)
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
