#if Postgres
import Foundation
import Hoard
import PostgresNIO

extension PostgresStore {
    /// Stores `data` for `key` in `namespace` with one upsert
    /// (`INSERT … ON CONFLICT (namespace, key) DO UPDATE`) that also notifies the change.
    ///
    /// An entry whose `expiresAt` is not after the store's clock is not stored, and
    /// any older value for the key is removed (as ``removeValue(for:in:)`` does).
    ///
    /// - Throws: `HoardError` with code `invalidArgument`, naming `key`, when
    ///   `storedAt` is not a finite date (NaN or infinite) or `expiresAt` is NaN:
    ///   then nothing is sent, and any older value for the key stays, as
    ///   `DiskStore` and `InMemoryRemoteStore` refuse such a write. `HoardError`
    ///   with code `valueTooLarge`, naming `key`, when the table's primary-key index
    ///   cannot hold the row's namespace and key (an index row is at most 2,704
    ///   bytes, after compression): nothing was stored, and any older value stays.
    ///   ``PostgresStoreError`` when the server cannot answer, or when the
    ///   maintenance this write started fails; the value may or may not have been stored.
    public func set(
        _ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?
    ) async throws {
        try HoardError.checkWriteDates(storedAt: storedAt, expiresAt: expiresAt, key: key)
        if let expiresAt, expiresAt <= clockNow() {
            try await removeValue(for: key, in: namespace)
            return
        }
        var binds = PostgresBindings(capacity: 7)
        binds.append(ByteBuffer(string: namespace))
        binds.append(ByteBuffer(string: key))
        binds.append(ByteBuffer(bytes: data))
        binds.append(_PostgresTimestamp(storedAt))
        binds.append(expiresAt.map(_PostgresTimestamp.init))
        binds.append(channel)
        binds.append(hub.payload(key: key, in: namespace))
        try await upsert("set", key: key, statements.set, binds)
        try await countWrites(1)
    }

    /// Removes the entry for `key` in `namespace` with one `DELETE` that also
    /// notifies the change.
    ///
    /// - Throws: ``PostgresStoreError`` when the server cannot answer, or when the
    ///   maintenance this write started fails.
    public func removeValue(for key: String, in namespace: String) async throws(PostgresStoreError) {
        var binds = PostgresBindings(capacity: 4)
        binds.append(ByteBuffer(string: namespace))
        binds.append(ByteBuffer(string: key))
        binds.append(channel)
        binds.append(hub.payload(key: key, in: namespace))
        try await execute("remove", key: key, statements.remove, binds)
        try await countWrites(1)
    }

    /// Removes every entry of `namespace` and no other with one `DELETE`, which also
    /// notifies `RemoteInvalidation.all`; it is atomic, as every statement is.
    ///
    /// - Throws: ``PostgresStoreError`` when the server cannot answer; then nothing was removed.
    public func removeAll(in namespace: String) async throws(PostgresStoreError) {
        var binds = PostgresBindings(capacity: 3)
        binds.append(ByteBuffer(string: namespace))
        binds.append(channel)
        binds.append(hub.payloadAll(in: namespace))
        try await execute("clear", key: nil, statements.clear, binds)
    }

    /// Applies many changes in order, up to ``batchLimit`` of them (and at most about
    /// ``batchByteLimit`` bytes of values) in one statement: one round trip and one
    /// transaction, so each such round is applied whole or not at all. A
    /// `CacheStoreWrite.removeAll(in:)` waits for the changes before it and
    /// runs as ``removeAll(in:)`` does.
    ///
    /// Within a round only the last change to each key is sent: a set followed by a
    /// removal of the same key is the removal, as running them in order would leave
    /// it. Each key a round changes is notified once, in the same transaction, as
    /// ``set(_:for:in:storedAt:expiresAt:)`` and ``removeValue(for:in:)`` notify; an
    /// entry whose `expiresAt` is not after the store's clock is removed, not stored.
    /// Every change counts toward ``Configuration/maintenanceInterval``.
    ///
    /// A set whose `storedAt` is not a finite date (NaN or infinite) or whose
    /// `expiresAt` is NaN ends the batch, as the first error ends a batch applied one
    /// change at a time (`InMemoryRemoteStore`'s): the changes before it are applied
    /// as above, and neither it nor any change after it is sent.
    ///
    /// - Throws: The first ``PostgresStoreError``; the rounds before it were applied,
    ///   the failing round may or may not have been, and later ones were not tried.
    ///   When the changes before a set with such dates were all applied: `HoardError`
    ///   with code `invalidArgument`, naming the set's key; the key keeps any older
    ///   value, and the changes from that set on were not sent. When a round of one
    ///   set fails because the primary-key index cannot hold its row (see
    ///   ``set(_:for:in:storedAt:expiresAt:)``): `HoardError` with code
    ///   `valueTooLarge`, naming the key, as for the failing round otherwise (a round
    ///   of several changes fails with the ``PostgresStoreError``, whose
    ///   ``PostgresStoreError/sqlState`` is `54000`).
    public func write(_ batch: [CacheStoreWrite]) async throws {
        guard let refused = HoardError.firstRefusedWrite(in: batch) else { return try await apply(batch) }
        try await apply(Array(batch[..<refused.position]))
        throw refused.error
    }

    /// Applies `batch`, whose sets all have dates the store can keep, as ``write(_:)``
    /// says.
    private func apply(_ batch: [CacheStoreWrite]) async throws {
        let rounds = CacheStoreWrite.rounds(
            of: batch, maximumChanges: Self.batchLimit, maximumBytes: Self.batchByteLimit)
        for round in rounds {
            switch round {
            case .removeAll(let namespace):
                try await removeAll(in: namespace)
            case .changes(let changes):
                var round = _PostgresWriteRound()
                let now = clockNow()
                for change in changes { round.add(change, now: now) }
                try await upsert(
                    "write", key: round.onlyKey, statements.writeMany,
                    round.bindings(channel: channel, payload: hub.payload(key:in:)))
                try await countWrites(changes.count)
            }
        }
    }

    /// Runs a statement that stores rows: the set of `key`, or a round of
    /// ``write(_:)`` (`key` names its one change, if it has only one).
    ///
    /// - Throws: `HoardError` with code `valueTooLarge`, naming `key`, when PostgreSQL
    ///   refuses the row as larger than its primary-key index can hold (SQLSTATE
    ///   `54000`, program_limit_exceeded): the key's own failure, so that a batch of
    ///   a `Cache` goes on with its other changes. ``PostgresStoreError`` otherwise.
    private func upsert(
        _ operation: String, key: String?, _ statement: _PostgresPreparedStatement.Text, _ binds: PostgresBindings
    ) async throws {
        do {
            try await execute(operation, key: key, statement, binds)
        } catch {
            guard let key, error.sqlState == "54000" else { throw error }
            throw HoardError(
                .valueTooLarge,
                "PostgreSQL cannot hold this key's row: \(error.serverMessage ?? error.message)", key: key,
                underlying: error)
        }
    }

    /// The most changes ``write(_:)`` sends in one statement.
    public static var batchLimit: Int { 1_000 }

    /// About the most value bytes ``write(_:)`` sends in one statement: a round ends
    /// once its values reach this, so it may pass it by one value (a round always
    /// holds at least one change).
    public static var batchByteLimit: Int { 8 << 20 }

    /// Counts `count` writes, and runs maintenance when they pass a multiple of
    /// ``Configuration/maintenanceInterval``.
    private func countWrites(_ count: Int) async throws(PostgresStoreError) {
        let interval = configuration.maintenanceInterval
        guard interval > 0, count > 0 else { return }
        let total = writes.add(count, ordering: .relaxed).newValue
        if total / interval != (total - count) / interval {
            _ = try await maintain()
        }
    }
}

/// The changes of one round of ``PostgresStore/write(_:)``: the last change to each
/// key, as the arrays of the `hoard_write_many` statement.
private struct _PostgresWriteRound {
    private struct Change {
        var namespace: String
        var key: String
        /// The value and its times; `nil` for a removal.
        var set: (data: Data, storedAt: Date, expiresAt: Date?)?
    }

    /// A row's namespace and key as the table holds them: their UTF-8 bytes.
    /// `String` equality would take canonically equivalent text ("é" and "e" with
    /// a combining accent) for one key, while they are two rows: a batch setting
    /// both would drop one set and report success.
    private struct Place: Hashable {
        var namespace: [UInt8]
        var key: [UInt8]
    }

    private var changes: [Change] = []
    /// Where each key's change sits in `changes`.
    private var positions: [Place: Int] = [:]

    /// The key of the one change, when the round holds one (for error messages).
    var onlyKey: String? { changes.count == 1 ? changes[0].key : nil }

    /// Adds a set or a removal; a set whose `expiresAt` is not after `now` is a removal.
    mutating func add(_ change: CacheStoreWrite, now: Date) {
        switch change {
        case .set(let data, let key, let namespace, let storedAt, let expiresAt):
            if let expiresAt, expiresAt <= now {
                record(Change(namespace: namespace, key: key, set: nil))
            } else {
                record(Change(namespace: namespace, key: key, set: (data, storedAt, expiresAt)))
            }
        case .removeValue(let key, let namespace):
            record(Change(namespace: namespace, key: key, set: nil))
        case .removeAll:
            preconditionFailure("a run of changes holds no removeAll")
        }
    }

    private mutating func record(_ change: Change) {
        let place = Place(namespace: Array(change.namespace.utf8), key: Array(change.key.utf8))
        if let position = positions[place] {
            changes[position] = change
        } else {
            positions[place] = changes.count
            changes.append(change)
        }
    }

    /// The statement's parameters: rows to upsert, rows to delete, the channel and one
    /// notification payload per key.
    func bindings(channel: String, payload: (String, String) -> String) -> PostgresBindings {
        var namespaces: [ByteBuffer] = []
        var keys: [ByteBuffer] = []
        var values: [ByteBuffer] = []
        var storedAts: [_PostgresTimestamp] = []
        var expiresAts: [_PostgresTimestamp] = []
        var expires: [Bool] = []
        var goneNamespaces: [ByteBuffer] = []
        var goneKeys: [ByteBuffer] = []
        var payloads: [String] = []
        payloads.reserveCapacity(changes.count)
        for change in changes {
            payloads.append(payload(change.key, change.namespace))
            guard let set = change.set else {
                goneNamespaces.append(ByteBuffer(string: change.namespace))
                goneKeys.append(ByteBuffer(string: change.key))
                continue
            }
            namespaces.append(ByteBuffer(string: change.namespace))
            keys.append(ByteBuffer(string: change.key))
            values.append(ByteBuffer(bytes: set.data))
            storedAts.append(_PostgresTimestamp(set.storedAt))
            // Any time will do where `expires` is false: the statement stores NULL.
            expiresAts.append(_PostgresTimestamp(set.expiresAt ?? set.storedAt))
            expires.append(set.expiresAt != nil)
        }
        var binds = PostgresBindings(capacity: 10)
        binds.append(namespaces)
        binds.append(keys)
        binds.append(values)
        binds.append(storedAts)
        binds.append(expiresAts)
        binds.append(expires)
        binds.append(goneNamespaces)
        binds.append(goneKeys)
        binds.append(channel)
        binds.append(payloads)
        return binds
    }
}
#endif
