#if Redis
import Foundation
import Hoard
import NIOCore

/// The operations of a ``RedisStore`` on a Redis Cluster that touch more than one
/// key: split by hash slot, each slot's commands sent to its primary, the slots in
/// parallel.
///
/// Key layout: by default an entry's key (`<prefix>:<n>:<namespace>:<key>`) has no
/// hash tag of Hoard's making, so the keys of one namespace spread over every slot
/// and primary: the load of a busy namespace is shared by the whole cluster. The
/// price is paid by the operations on many keys: ``RedisStore/entries(for:in:)``
/// sends one `MGET` per slot, and ``RedisStore/removeAll(in:)`` scans every primary.
/// ``RedisStore/Configuration/keepsNamespaceInOneSlot`` makes the namespace a hash
/// tag instead: one slot per namespace, one `MGET`, one round trip per batch, and all
/// of that namespace on one primary. (``RedisStore/removeAll(in:)`` still scans every
/// primary: during a migration of the slot, some of its keys are on another node.)
/// Keys of a namespace whose name holds a `{tag}` share the tag's slot, as the server
/// decides.
extension RedisStore {
    /// ``entries(for:in:)`` on a cluster: one `MGET` per slot, all in parallel.
    func clusterEntries(
        for keys: [String], in namespace: String, cluster: _RedisCluster
    ) async throws(RedisError) -> [String: StoredEntry] {
        var bySlot: [Int: [String]] = [:]
        for key in keys {
            bySlot[_RedisHashSlot.slot(of: keyspace.key(key, in: namespace)), default: []].append(key)
        }
        let groups = Array(bySlot)
        let now = clock.now()
        let results = await withTaskGroup(of: Result<[String: StoredEntry], RedisError>.self) { group in
            for (slot, keys) in groups {
                group.addTask {
                    do throws(RedisError) {
                        let command = _RedisCommand(
                            "MGET", arguments: keys.map { .bytes(self.keyspace.key($0, in: namespace)) })
                        let reply = try await cluster.send(command, slot: slot)
                        try Self.check(reply, command: "MGET")
                        guard let values = reply.elements, values.count == keys.count else {
                            throw RedisError(
                                .protocolError,
                                "MGET of \(keys.count) keys was answered with \(reply.elements?.count ?? 0) values.",
                                command: "MGET")
                        }
                        var entries: [String: StoredEntry] = [:]
                        for index in keys.indices {
                            if let entry = try await self.liveEntry(
                                in: values[index], key: keys[index], namespace: namespace, command: "MGET", now: now)
                            {
                                entries[keys[index]] = entry
                            }
                        }
                        return .success(entries)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var all: [Result<[String: StoredEntry], RedisError>] = []
            for await result in group { all.append(result) }
            return all
        }
        var entries: [String: StoredEntry] = [:]
        entries.reserveCapacity(keys.count)
        for result in results {
            switch result {
            case .success(let found): entries.merge(found) { first, _ in first }
            case .failure(let error): throw error
            }
        }
        return entries
    }

    /// One round of ``write(_:)`` on a cluster: the changes grouped by slot, in their
    /// order within each slot, each slot's group pipelined to its primary, the slots
    /// in parallel; then one `PUBLISH` per namespace (a cluster delivers a `PUBLISH`
    /// to the subscribers of every node). When every change is in one slot, the
    /// `PUBLISH`es go in the same round trip, after the changes; when that round
    /// trip fails they are sent again on their own, since some of the changes may
    /// have been applied.
    ///
    /// - Returns: The first error reply or failed round trip, if any, and the
    ///   changes that were not applied or may not have been (those the server
    ///   refused, and every change of a slot whose round trip failed), in order.
    func clusterWrite(
        _ run: ArraySlice<CacheStoreWrite>, cluster: _RedisCluster
    ) async -> (error: RedisError?, unapplied: [CacheStoreWrite]) {
        var bySlot: [Int: [(command: _RedisCommand, key: String, position: Int)]] = [:]
        var changed = _ChangedKeys()
        let now = clock.now()
        for (position, change) in zip(run.indices, run) {
            let namespace: String
            let key: String
            let command: _RedisCommand
            switch change {
            case .set(let data, let changedKey, let changedNamespace, let storedAt, let expiresAt):
                (namespace, key) = (changedNamespace, changedKey)
                command = setCommand(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt, now: now)
            case .removeValue(let changedKey, let changedNamespace):
                (namespace, key) = (changedNamespace, changedKey)
                command = _RedisCommand("UNLINK", .bytes(keyspace.key(key, in: namespace)))
            case .removeAll:
                preconditionFailure("a run of changes holds no removeAll")
            }
            bySlot[_RedisHashSlot.slot(of: keyspace.key(key, in: namespace)), default: []].append(
                (command, key, position))
            changed.append(key, in: namespace)
        }
        let announcements = changed.byNamespace.map { namespace, keys in
            var writer = _RESPCommandWriter(capacity: 256)
            writePublish(keys, in: namespace, to: &writer)
            return _RedisCommand(name: "PUBLISH", encoded: writer.buffer)
        }
        /// Sends one slot's commands (with `trailing` after them) and checks the
        /// replies: the first error, and the positions in `run` not applied.
        @Sendable func send(
            _ slot: Int, _ commands: [(command: _RedisCommand, key: String, position: Int)],
            trailing: [_RedisCommand]
        ) async -> (error: RedisError?, unapplied: [Int]) {
            let replies: [_RESPValue]
            do {
                replies = try await cluster.send(commands.map(\.command), slot: slot, trailing: trailing)
            } catch {
                return (error, commands.map(\.position))
            }
            var firstError: RedisError?
            var unapplied: [Int] = []
            for (index, reply) in replies.enumerated() {
                do throws(RedisError) {
                    if index < commands.count {
                        try Self.check(reply, command: commands[index].command.name, key: commands[index].key)
                    } else {
                        try Self.check(reply, command: "PUBLISH")
                    }
                } catch {
                    if firstError == nil { firstError = error }
                    if index < commands.count { unapplied.append(commands[index].position) }
                }
            }
            return (firstError, unapplied)
        }
        var firstError: RedisError?
        var unapplied: [Int] = []
        if bySlot.count == 1, let (slot, commands) = bySlot.first {
            // One slot (every single-key write): the announcements ride in the same
            // round trip, after the changes, on the same connection.
            (firstError, unapplied) = await send(slot, commands, trailing: announcements)
            if firstError == nil || unapplied.count < commands.count {
                return (firstError, unapplied.map { run[$0] })
            }
        } else {
            let groups = Array(bySlot)
            let results = await withTaskGroup(of: (error: RedisError?, unapplied: [Int]).self) { group in
                for (slot, commands) in groups {
                    group.addTask { await send(slot, commands, trailing: []) }
                }
                var results: [(error: RedisError?, unapplied: [Int])] = []
                for await result in group { results.append(result) }
                return results
            }
            for result in results {
                if firstError == nil { firstError = result.error }
                unapplied += result.unapplied
            }
        }
        // Announced even after a failure: some of the changes may have been applied.
        do {
            let replies = try await clusterPublish(announcements, cluster: cluster)
            for reply in replies { try Self.check(reply, command: "PUBLISH") }
        } catch {
            if firstError == nil { firstError = error }
        }
        return (firstError, unapplied.sorted().map { run[$0] })
    }

    /// Sends `PUBLISH` commands to any primary that answers.
    func clusterPublish(_ commands: [_RedisCommand], cluster: _RedisCluster) async throws(RedisError) -> [_RESPValue] {
        guard !commands.isEmpty else { return [] }
        var lastError: RedisError?
        for address in try await cluster.primaries() {
            do {
                return try await cluster.pool(for: address).withConnection { connection throws(RedisError) in
                    try await connection.send(commands)
                }
            } catch {
                lastError = error
            }
        }
        throw lastError ?? RedisError(.clusterDown, "No node of the Redis cluster is known.", command: "PUBLISH")
    }

    /// ``removeAll(in:)`` on a cluster: `SCAN` on every primary, each key found
    /// removed with an `UNLINK` of its own (a multi-key `UNLINK` must stay within one
    /// slot), then the announcement.
    func clusterRemoveAll(in namespace: String, cluster: _RedisCluster) async throws(RedisError) {
        let pattern = keyspace.namespacePattern(namespace)
        for address in try await cluster.primaries() {
            var cursor = "0"
            repeat {
                let scan = Self.scanCommand(cursor: cursor, pattern: pattern)
                let (next, keys) = try Self.scanPage(
                    try await cluster.pool(for: address).withConnection { connection throws(RedisError) in
                        try await connection.send(scan)
                    })
                var bySlot: [Int: [_RedisCommand]] = [:]
                for key in keys {
                    bySlot[_RedisHashSlot.slot(of: key), default: []].append(_RedisCommand("UNLINK", .bytes(key)))
                }
                for (slot, unlinks) in bySlot {
                    for reply in try await cluster.send(unlinks, slot: slot) {
                        try Self.check(reply, command: "UNLINK")
                    }
                }
                cursor = next
            } while cursor != "0"
        }
        for reply in try await clusterPublish([publish(hub.messageAll(), in: namespace)], cluster: cluster) {
            try Self.check(reply, command: "PUBLISH")
        }
    }
}
#endif
