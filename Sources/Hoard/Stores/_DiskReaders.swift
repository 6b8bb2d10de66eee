import Synchronization

/// The read connections of a ``DiskStore``: up to
/// ``DiskStore/Configuration/readerCount`` SQLite connections that only read
/// (`PRAGMA query_only`), beside the one write connection in ``_DiskState``.
///
/// In WAL mode any number of connections read at once, each from the last commit
/// when its statement began, while one connection writes; so readers never take the
/// writer's lock and never wait for a write. Each connection sits behind a lock of
/// its own. A reader takes the first connection free now, starting from one its
/// thread prefers (chosen by a hash of the thread's identity): a thread that reads
/// alone keeps using one connection, whose page cache holds what it read before,
/// while threads that read at once mostly start from different connections. When
/// every one is in use it waits for the one its thread prefers.
final class _DiskReaders: Sendable {
    /// One connection and the lock it is used under.
    private final class Slot: Sendable {
        let index: Mutex<_DiskIndex>

        init(_ index: consuming sending _DiskIndex) {
            self.index = Mutex(index)
        }
    }

    private let slots: [Slot]
    private let busyTimeout: Double
    /// For tests: called, with the connection's position, while a connection holds
    /// the row it found.
    private let gate: (@Sendable (Int) -> Void)?

    /// Opens `count` read connections to the index at `path`, all at once: a
    /// process that gives up its privileges after opening the store keeps reading.
    ///
    /// - Throws: ``HoardError`` when a connection cannot be opened; those opened
    ///   are closed.
    init(
        path: String, count: Int, busyTimeout: Double, pageCacheBytes: Int, lengthLimit: Int?,
        gate: (@Sendable (Int) -> Void)?
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

    /// The row for `key` in `namespace` (as ``_DiskIndex/lookup(namespace:key:foundRow:)``
    /// reads it, calling `foundRow` with its id as soon as it is found), read on a
    /// connection free now or, when all are in use, on the first to come free.
    ///
    /// - Throws: ``HoardError`` when a connection cannot be opened or the read fails.
    func lookup(
        namespace: String, key: String, foundRow: @Sendable (_ id: Int64) -> Void = { _ in }
    ) throws(HoardError) -> _DiskIndex.Row? {
        let start = Self.preferredSlot(modulo: slots.count)
        for offset in 0..<slots.count {
            let position = (start + offset) % slots.count
            let found = try slots[position].index.withLockIfAvailable {
                (index) throws(HoardError) -> _DiskIndex.Row? in
                try lookup(namespace: namespace, key: key, on: index, at: position, foundRow: foundRow)
            }
            if let found { return found }
        }
        return try slots[start].index.withLock { (index) throws(HoardError) -> _DiskIndex.Row? in
            try lookup(namespace: namespace, key: key, on: index, at: start, foundRow: foundRow)
        }
    }

    /// The row for `key` read without waiting: on a connection free now, which
    /// does not wait for a lock another process holds (`foundRow` as in
    /// ``lookup(namespace:key:foundRow:)``). `nil` when it would wait (every
    /// connection is in use, or SQLite reports the database busy).
    ///
    /// - Throws: ``HoardError`` when a connection cannot be opened or the read
    ///   fails for another reason than a busy lock.
    func lookupWithoutWaiting(
        namespace: String, key: String, foundRow: @Sendable (_ id: Int64) -> Void = { _ in }
    ) throws(HoardError) -> _DiskIndex.Row?? {
        let start = Self.preferredSlot(modulo: slots.count)
        for offset in 0..<slots.count {
            let position = (start + offset) % slots.count
            let found = try slots[position].index.withLockIfAvailable {
                (index) throws(HoardError) -> _DiskIndex.Row?? in
                let reader = index
                try reader.connection.setBusyTimeout(milliseconds: 0)
                defer { try? reader.connection.setBusyTimeout(milliseconds: busyMilliseconds) }
                do throws(HoardError) {
                    return .some(
                        try lookup(namespace: namespace, key: key, on: reader, at: position, foundRow: foundRow))
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
        try slots[Self.preferredSlot(modulo: slots.count)].index.withLock { (index) throws(HoardError) -> Bool in
            try index.contains(namespace: namespace, key: key, now: now)
        }
    }

    /// The connection the calling thread tries first: a hash of the thread's
    /// identity, so that one thread keeps to one connection.
    static func preferredSlot(modulo count: Int) -> Int {
        guard count > 1 else { return 0 }
        let thread = UInt64(_POSIX.currentThread)
        // Thread identities are aligned addresses: mix every bit into the top ones.
        let mixed = (thread ^ (thread >> 29)) &* 0x9E37_79B9_7F4A_7C15
        return Int((mixed >> 32) % UInt64(count))
    }

    private func lookup(
        namespace: String, key: String, on reader: _DiskIndex, at position: Int,
        foundRow: @Sendable (_ id: Int64) -> Void
    ) throws(HoardError) -> _DiskIndex.Row? {
        let row = try reader.lookup(namespace: namespace, key: key, foundRow: foundRow)
        if row != nil { gate?(position) }
        return row
    }

    /// Closes every connection (waiting for reads in progress); later reads throw.
    func close() {
        for slot in slots { slot.index.withLock { $0.close() } }
    }
}
