#if Redis
import Foundation
import Hoard
import NIOCore

extension RedisStore {
    /// Stores `data` for `key` in `namespace` with `SET … PX`, and publishes the change,
    /// in one round trip.
    ///
    /// An entry whose `expiresAt` is not after the store's clock is not stored, and
    /// any older value for the key is removed (as ``removeValue(for:in:)`` does).
    ///
    /// - Throws: `HoardError` with code `invalidArgument`, naming `key`, when
    ///   `storedAt` is not a finite date (NaN or infinite) or `expiresAt` is NaN:
    ///   then nothing is sent, and any older value for the key stays, as
    ///   `DiskStore` and `InMemoryRemoteStore` refuse such a write. ``RedisError``
    ///   when the server cannot answer; the value may or may not have been stored.
    public func set(
        _ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?
    ) async throws {
        try await write([.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)])
    }

    /// Removes the entry for `key` in `namespace` with `UNLINK`, and publishes the
    /// change, in one round trip.
    ///
    /// - Throws: ``RedisError`` when the server cannot answer.
    public func removeValue(for key: String, in namespace: String) async throws(RedisError) {
        try await apply([.removeValue(for: key, in: namespace)])
    }

    /// Applies many changes in order, pipelined: the `SET … PX`/`UNLINK` commands of
    /// up to ``pipelineLimit`` changes, then one `PUBLISH` per namespace they touch,
    /// go out in one write on one connection, and their replies are awaited together.
    /// A `CacheStoreWrite.removeAll(in:)` waits for the changes before it and
    /// runs as ``removeAll(in:)`` does.
    ///
    /// Each change is the one ``set(_:for:in:storedAt:expiresAt:)`` or
    /// ``removeValue(for:in:)`` would make; the server runs the commands of one
    /// connection in order, so the last change to a key wins. Other instances learn of
    /// every changed key through ``invalidations(in:)``, after the changes of its
    /// round trip are applied: the keys a round trip changes in one namespace are
    /// announced in one message, so a batch of sets costs the server one command per
    /// set, not two.
    ///
    /// A failure does not end the batch: every round trip is attempted, in order.
    /// The changes of a round trip that failed may have been applied, so once every
    /// round trip has been attempted they are announced again (as is a namespace
    /// whose `removeAll` failed part of the way).
    ///
    /// A set whose `storedAt` is not a finite date (NaN or infinite) or whose
    /// `expiresAt` is NaN ends the batch, as the first error ends a batch applied one
    /// change at a time (`InMemoryRemoteStore`'s): the changes before it are applied
    /// as above, and neither it nor any change after it is sent.
    ///
    /// - Throws: The first ``RedisError`` (a reply that was an error, or a round
    ///   trip that failed), whose ``RedisError/unappliedChanges`` names every change
    ///   of the batch that was not applied or may not have been (after a set with
    ///   such dates, every change from that set on); every other change was applied.
    ///   When the changes before such a set were all applied: `HoardError` with code
    ///   `invalidArgument`, naming the set's key; the key keeps any older value.
    public func write(_ batch: [CacheStoreWrite]) async throws {
        guard let refused = HoardError.firstRefusedWrite(in: batch) else { return try await apply(batch) }
        do {
            try await apply(Array(batch[..<refused.position]))
        } catch {
            throw error.with(unappliedChanges: error.unappliedChanges + batch[refused.position...])
        }
        throw refused.error
    }

    /// Applies `batch`, whose sets all have dates the store can keep, as ``write(_:)``
    /// says.
    private func apply(_ batch: [CacheStoreWrite]) async throws(RedisError) {
        var firstError: RedisError?
        var unapplied: [CacheStoreWrite] = []
        /// The keys of round trips that failed, and the namespaces whose removeAll
        /// failed: maybe changed, maybe not announced.
        var unannounced = _ChangedKeys()
        var unannouncedNamespaces: [String] = []
        for round in CacheStoreWrite.rounds(of: batch, maximumChanges: Self.pipelineLimit) {
            switch round {
            case .removeAll(let namespace):
                do {
                    try await removeAll(in: namespace)
                } catch {
                    if firstError == nil { firstError = error }
                    unapplied.append(.removeAll(in: namespace))
                    unannouncedNamespaces.append(namespace)
                }
            case .changes(let run):
                if let cluster {
                    let (error, failed) = await clusterWrite(run, cluster: cluster)
                    if firstError == nil { firstError = error }
                    unapplied += failed
                    continue
                }
                let (encoded, changes, announcements) = encode(run)
                let replies: [_RESPValue]
                do {
                    replies = try await self.run(key: changes.count == 1 ? changes[0].key : nil) {
                        connection throws(RedisError) in
                        try await connection.send(
                            encoded: encoded, count: changes.count + announcements, name: changes[0].command)
                    }
                } catch {
                    if firstError == nil { firstError = error }
                    unapplied += run
                    for change in run {
                        if let (key, namespace) = change.changedKey { unannounced.append(key, in: namespace) }
                    }
                    continue
                }
                for (index, change) in changes.enumerated() {
                    do {
                        try Self.check(replies[index], command: change.command, key: change.key)
                    } catch {
                        if firstError == nil { firstError = error }
                        unapplied.append(run[run.startIndex + index])
                    }
                }
                for reply in replies[changes.count...] {
                    do {
                        try Self.check(reply, command: "PUBLISH")
                    } catch {
                        if firstError == nil { firstError = error }
                    }
                }
            }
        }
        guard let firstError else { return }
        var note: String?
        do {
            try await announce(unannounced, clearedNamespaces: unannouncedNamespaces)
        } catch {
            note = "Announcing the changes that may have been applied to other instances failed too: \(error)"
        }
        throw firstError.with(unappliedChanges: unapplied, note: note)
    }

    /// Announces, in one round trip, that `changed` may have changed and that every
    /// key of `clearedNamespaces` may have been removed: after a failed round trip of
    /// ``write(_:)``, whose own announcements may not have gone out.
    private func announce(_ changed: _ChangedKeys, clearedNamespaces: [String]) async throws(RedisError) {
        guard !changed.byNamespace.isEmpty || !clearedNamespaces.isEmpty else { return }
        let commands =
            changed.byNamespace.map { namespace, keys in
                var writer = _RESPCommandWriter(capacity: 256)
                writePublish(keys, in: namespace, to: &writer)
                return _RedisCommand(name: "PUBLISH", encoded: writer.buffer)
            } + clearedNamespaces.map { publish(hub.messageAll(), in: $0) }
        let replies: [_RESPValue]
        if let cluster {
            replies = try await clusterPublish(commands, cluster: cluster)
        } else {
            replies = try await run(key: nil) { connection throws(RedisError) in try await connection.send(commands) }
        }
        for reply in replies { try Self.check(reply, command: "PUBLISH") }
    }

    /// The commands of one round trip of ``write(_:)``: each change's `SET … PX` or
    /// `UNLINK`, then one `PUBLISH` per namespace they change, encoded into one buffer.
    /// `changes` names the command and key of each change, in order, for its reply;
    /// `announcements` is how many `PUBLISH` replies follow theirs.
    private func encode(
        _ run: ArraySlice<CacheStoreWrite>
    ) -> (encoded: ByteBuffer, changes: [(command: String, key: String)], announcements: Int) {
        var writer = _RESPCommandWriter(capacity: encodedSize(of: run))
        var changes: [(command: String, key: String)] = []
        changes.reserveCapacity(run.count)
        var changed = _ChangedKeys()
        let now = clock.now()
        for change in run {
            switch change {
            case .set(let data, let key, let namespace, let storedAt, let expiresAt):
                let command = writeSet(
                    data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt, now: now, to: &writer)
                changes.append((command, key))
                changed.append(key, in: namespace)
            case .removeValue(let key, let namespace):
                writeUnlink(key: key, in: namespace, to: &writer)
                changes.append(("UNLINK", key))
                changed.append(key, in: namespace)
            case .removeAll:
                preconditionFailure("a run of changes holds no removeAll")
            }
        }
        for (namespace, keys) in changed.byNamespace {
            writePublish(keys, in: namespace, to: &writer)
        }
        return (writer.buffer, changes, changed.byNamespace.count)
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
    /// `RemoteInvalidation.all`.
    ///
    /// It walks the keyspace with `SCAN … MATCH` on the namespace's key pattern
    /// (glob characters escaped) and removes each page of keys with `UNLINK`, which
    /// frees memory on a background thread of the server; it never uses `KEYS`, so
    /// the server is never blocked. It is not atomic: a value written to the
    /// namespace while the walk runs may survive it. On a Redis Cluster every
    /// primary is walked.
    ///
    /// - Complexity: O(keys in the database), in pages of about 1,000 keys.
    /// - Throws: ``RedisError`` when the server cannot answer; some entries may have
    ///   been removed.
    public func removeAll(in namespace: String) async throws(RedisError) {
        if let cluster { return try await clusterRemoveAll(in: namespace, cluster: cluster) }
        let pattern = keyspace.namespacePattern(namespace)
        let announcement = publish(hub.messageAll(), in: namespace)
        try await run(key: nil) { connection throws(RedisError) in
            var cursor = "0"
            repeat {
                let (next, redisKeys) = try Self.scanPage(
                    try await connection.send(Self.scanCommand(cursor: cursor, pattern: pattern)))
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

    /// Appends `PUBLISH` of the message announcing that `keys` changed in `namespace`.
    func writePublish(_ keys: [String], in namespace: String, to writer: inout _RESPCommandWriter) {
        writer.command("PUBLISH", argumentCount: 2)
        keyspace.writeChannel(for: namespace, to: &writer)
        hub.writeMessage(keys: keys, to: &writer)
    }

    /// `SCAN <cursor> MATCH <pattern> COUNT 1000`, one page of ``removeAll(in:)``'s walk.
    static func scanCommand(cursor: String, pattern: ByteBuffer) -> _RedisCommand {
        _RedisCommand("SCAN", .string(cursor), "MATCH", .bytes(pattern), "COUNT", "1000")
    }

    /// The next cursor and the keys of a `SCAN` reply.
    ///
    /// - Throws: The server's error reply, or ``RedisError/Code/protocolError`` for a
    ///   reply of another shape.
    static func scanPage(_ reply: _RESPValue) throws(RedisError) -> (next: String, keys: [ByteBuffer]) {
        try check(reply, command: "SCAN")
        guard let page = reply.elements, page.count == 2, let next = page[0].string, let keys = page[1].elements
        else {
            throw RedisError(.protocolError, "SCAN was answered with an unexpected reply.", command: "SCAN")
        }
        return (next, keys.compactMap(\.bytes))
    }

    func publish(_ message: ByteBuffer, in namespace: String) -> _RedisCommand {
        _RedisCommand("PUBLISH", .bytes(keyspace.channel(for: namespace)), .bytes(message))
    }

    /// The command ``write(_:)`` sends for one set, on its own (for a cluster).
    func setCommand(
        _ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?, now: Date
    ) -> _RedisCommand {
        let size = encodedSize(of: [.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)])
        var writer = _RESPCommandWriter(capacity: size)
        let name = writeSet(
            data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt, now: now, to: &writer)
        return _RedisCommand(name: name, encoded: writer.buffer)
    }

    /// Appends the command of one set: `SET … PX`, or `UNLINK` for an entry that has
    /// already expired by `now` (not stored, and any older value removed).
    ///
    /// - Returns: The command's name.
    private func writeSet(
        _ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?, now: Date,
        to writer: inout _RESPCommandWriter
    ) -> String {
        var lifetime: Int64?
        if let expiresAt {
            let milliseconds = (expiresAt.timeIntervalSince(now) * 1000).rounded(.up)
            if milliseconds <= 0 {
                writeUnlink(key: key, in: namespace, to: &writer)
                return "UNLINK"
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
        return "SET"
    }

    /// Appends `UNLINK <key>`.
    private func writeUnlink(key: String, in namespace: String, to writer: inout _RESPCommandWriter) {
        writer.command("UNLINK", argumentCount: 1)
        keyspace.writeKey(key, in: namespace, to: &writer)
    }
}

extension CacheStoreWrite {
    /// The key and namespace a set or a removal changes; `nil` for a `removeAll`.
    var changedKey: (key: String, namespace: String)? {
        switch self {
        case .set(_, let key, let namespace, _, _), .removeValue(let key, let namespace): (key, namespace)
        case .removeAll: nil
        }
    }
}

/// The keys one round trip of ``RedisStore/write(_:)`` changes, by namespace, in the
/// order each namespace first appears, for one `PUBLISH` per namespace.
///
/// Namespaces are told apart by their UTF-8 bytes, as their keys and channels are:
/// `String` equality would take canonically equivalent text ("é" and "e" with a
/// combining accent) for one namespace and announce a change on the other's channel.
struct _ChangedKeys {
    private(set) var byNamespace: [(namespace: String, keys: [String])] = []
    /// Where each namespace (by its bytes) sits in `byNamespace`, built only once a
    /// round touches a second namespace (most rounds touch one).
    private var positions: [[UInt8]: Int] = [:]

    mutating func append(_ key: String, in namespace: String) {
        if let last = byNamespace.indices.last, byNamespace[last].namespace.utf8.elementsEqual(namespace.utf8) {
            byNamespace[last].keys.append(key)
            return
        }
        if byNamespace.isEmpty {
            byNamespace.append((namespace, [key]))
            return
        }
        if positions.isEmpty { positions[Array(byNamespace[0].namespace.utf8)] = 0 }
        let bytes = Array(namespace.utf8)
        if let position = positions[bytes] {
            byNamespace[position].keys.append(key)
        } else {
            positions[bytes] = byNamespace.count
            byNamespace.append((namespace, [key]))
        }
    }
}
#endif
