import Synchronization

/// The subscribers of one cache: event streams and per-key update streams.
///
/// ``MemoryCache`` shards publish while holding their own lock (lock order: shard,
/// then this), which keeps every key's updates in the order the changes happened.
/// Yielding to an `AsyncStream` only enqueues; it never runs subscriber code.
@usableFromInline
final class _Observers<Key: Hashable & Sendable, Value: Sendable, Event: Sendable>: Sendable {
    struct State {
        var nextID = 0
        var events: [Int: AsyncStream<Event>.Continuation] = [:]
        var updates: [Key: [Int: AsyncStream<Value?>.Continuation]] = [:]
    }

    /// Number of live subscriptions; publishing is skipped entirely at zero.
    @usableFromInline let subscriptions = Atomic<Int>(0)
    private let state = Mutex(State())

    init() {}

    /// `self` when anyone is subscribed, otherwise `nil`: shards take this so that a
    /// cache nobody observes pays one atomic load per write.
    ///
    /// A ``MemoryCache`` writer reads it while holding the shard's lock, under which
    /// `updates(for:)` registers: the lock orders the load after any registration
    /// that came first, so the relaxed load sees it and the write is published.
    @inlinable
    var ifActive: _Observers? {
        subscriptions.load(ordering: .relaxed) > 0 ? self : nil
    }

    /// Sends `event` to every event stream and `value` to the update streams of `key`.
    @usableFromInline
    func publish(_ event: Event, key: Key, value: Value?) {
        state.withLock { state in
            for continuation in state.events.values { continuation.yield(event) }
            if let streams = state.updates[key] {
                for continuation in streams.values { continuation.yield(value) }
            }
        }
    }

    /// Sends an event with no per-key update.
    @usableFromInline
    func publish(_ event: Event) {
        state.withLock { state in
            for continuation in state.events.values { continuation.yield(event) }
        }
    }

    /// Sends `value` to the update streams of `key` only.
    @usableFromInline
    func publishUpdate(key: Key, value: Value?) {
        state.withLock { state in
            if let streams = state.updates[key] {
                for continuation in streams.values { continuation.yield(value) }
            }
        }
    }

    func addEvents(_ continuation: AsyncStream<Event>.Continuation) -> Int {
        subscriptions.add(1, ordering: .relaxed)
        return state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.events[id] = continuation
            return id
        }
    }

    func addUpdates(for key: Key, _ continuation: AsyncStream<Value?>.Continuation) -> Int {
        subscriptions.add(1, ordering: .relaxed)
        return state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.updates[key, default: [:]][id] = continuation
            return id
        }
    }

    func removeEvents(_ id: Int) {
        let removed = state.withLock { $0.events.removeValue(forKey: id) != nil }
        if removed { subscriptions.subtract(1, ordering: .relaxed) }
    }

    func removeUpdates(for key: Key, _ id: Int) {
        let removed = state.withLock { state in
            let removed = state.updates[key]?.removeValue(forKey: id) != nil
            if state.updates[key]?.isEmpty == true { state.updates[key] = nil }
            return removed
        }
        if removed { subscriptions.subtract(1, ordering: .relaxed) }
    }

    /// Ends every stream; called when the cache goes away.
    func finishAll() {
        let (events, updates) = state.withLock { state in
            let taken = (Array(state.events.values), state.updates.values.flatMap(\.values))
            state.events = [:]
            state.updates = [:]
            return taken
        }
        // Outside the lock: finishing runs each stream's onTermination, which
        // takes the lock again.
        for continuation in events { continuation.finish() }
        for continuation in updates { continuation.finish() }
    }
}
