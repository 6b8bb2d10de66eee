import Synchronization

/// The read connections of a ``DiskStore``: up to
/// ``DiskStore/Configuration/readerCount`` SQLite connections that only read
/// (`PRAGMA query_only`), beside the one write connection in ``_DiskState``.
///
/// In WAL mode any number of connections read at once, each from the last commit
/// when its statement began, while one connection writes; so readers never take the
/// writer's lock and never wait for a write. Each connection sits behind a lock of
/// its own. A reader takes the first connection free now, starting from a rotating
/// position; when every one is in use it waits for one of them.
final class _DiskReaders: Sendable {
    /// One connection and the lock it is used under.
    private final class Slot: Sendable {
        let index: Mutex<_DiskIndex>

        init(_ index: consuming sending _DiskIndex) {
            self.index = Mutex(index)
        }
    }

    private let slots: [Slot]
    private let next = _RoundRobin()
    private let busyTimeout: Double
    /// For tests: called while a connection holds the row it found.
    private let gate: (@Sendable () -> Void)?

    /// Opens `count` read connections to the index at `path`, all at once: a
    /// process that gives up its privileges after opening the store keeps reading.
    ///
    /// - Throws: ``HoardError`` when a connection cannot be opened; those opened
    ///   are closed.
    init(
        path: String, count: Int, busyTimeout: Double, pageCacheBytes: Int, lengthLimit: Int?,
        gate: (@Sendable () -> Void)?
    ) throws(HoardError) {
        var slots: [Slot] = []
        do throws(HoardError) {
            for _ in 0..<max(1, count) {
                let index = try _DiskIndex(
                    readerAt: path, busyTimeout: busyTimeout, pageCacheBytes: pageCacheBytes, lengthLimit: lengthLimit)
                slots.append(Slot(index))
            }
        } catch {
            for slot in slots { slot.index.withLock { $0.close() } }
            throw error
        }
        self.slots = slots
        self.busyTimeout = busyTimeout
        self.gate = gate
    }

    /// The busy timeout in SQLite's milliseconds.
    private var busyMilliseconds: Int { Int(min(busyTimeout * 1000, Double(Int32.max))) }

    /// The row for `key` in `namespace` (as ``_DiskIndex/lookup(namespace:key:)``
    /// reads it), read on a connection free now or, when all are in use, on the
    /// first to come free.
    ///
    /// - Throws: ``HoardError`` when a connection cannot be opened or the read fails.
    func lookup(namespace: String, key: String) throws(HoardError) -> _DiskIndex.Row? {
        let start = next.advance(modulo: slots.count)
        for offset in 0..<slots.count {
            let slot = slots[(start + offset) % slots.count]
            let found = try slot.index.withLockIfAvailable { (index) throws(HoardError) -> _DiskIndex.Row? in
                try lookup(namespace: namespace, key: key, on: index)
            }
            if let found { return found }
        }
        return try slots[start].index.withLock { (index) throws(HoardError) -> _DiskIndex.Row? in
            try lookup(namespace: namespace, key: key, on: index)
        }
    }

    /// The row for `key` read without waiting: on a connection free now, which
    /// does not wait for a lock another process holds. `nil` when it would wait
    /// (every connection is in use, or SQLite reports the database busy).
    ///
    /// - Throws: ``HoardError`` when a connection cannot be opened or the read
    ///   fails for another reason than a busy lock.
    func lookupWithoutWaiting(namespace: String, key: String) throws(HoardError) -> _DiskIndex.Row?? {
        let start = next.advance(modulo: slots.count)
        for offset in 0..<slots.count {
            let slot = slots[(start + offset) % slots.count]
            let found = try slot.index.withLockIfAvailable { (index) throws(HoardError) -> _DiskIndex.Row?? in
                let reader = index
                try reader.connection.setBusyTimeout(milliseconds: 0)
                defer { try? reader.connection.setBusyTimeout(milliseconds: busyMilliseconds) }
                do throws(HoardError) {
                    return .some(try lookup(namespace: namespace, key: key, on: reader))
                } catch  where error.code == .busy {
                    return .none
                }
            }
            if let found { return found }
        }
        return nil
    }

    /// Whether `namespace` holds a live entry for `key` at `now`.
    func contains(namespace: String, key: String, now: Double) throws(HoardError) -> Bool {
        try slots[next.advance(modulo: slots.count)].index.withLock { (index) throws(HoardError) -> Bool in
            try index.contains(namespace: namespace, key: key, now: now)
        }
    }

    private func lookup(namespace: String, key: String, on reader: _DiskIndex) throws(HoardError) -> _DiskIndex.Row? {
        let row = try reader.lookup(namespace: namespace, key: key)
        if row != nil { gate?() }
        return row
    }

    /// Closes every connection (waiting for reads in progress); later reads throw.
    func close() {
        for slot in slots { slot.index.withLock { $0.close() } }
    }
}
