import Synchronization

/// The subscribers of one cache: event streams and per-key update streams.
///
/// ``MemoryCache`` shards publish while holding their own lock (lock order: shard,
/// then this), which keeps every key's updates in the order the changes happened.
/// Yielding to an `AsyncStream` only enqueues; it never runs subscriber code.
///
/// A stream's `onTermination` never waits for this lock: it only notes the stream
/// in ``terminated``, and the next change of the state drops it. When a consuming
/// task is cancelled, the runtime runs `onTermination` while holding that task's
/// status lock, and a yield to the same stream resumes the task, which takes that
/// status lock: waiting for this lock there deadlocked with a publisher yielding
/// under it.
@usableFromInline
final class _Observers<Key: Hashable & Sendable, Value: Sendable, Event: Sendable>: Sendable {
    struct State {
        var nextID = 0
        var events: [Int: AsyncStream<Event>.Continuation] = [:]
        var updates: [Key: Streams] = [:]
    }

    /// The update streams of one key.
    struct Streams {
        var continuations: [Int: AsyncStream<Value?>.Continuation] = [:]
        /// How many values were sent to them: a starting value read after a stream
        /// was registered is sent only if none was sent since.
        var published: UInt64 = 0

        /// Sends `value` to every stream.
        mutating func yield(_ value: Value?) {
            published &+= 1
            for continuation in continuations.values { continuation.yield(value) }
        }
    }

    /// A stream whose consumer went away, still to be dropped from the state.
    enum Termination: Sendable {
        case events(id: Int)
        case updates(key: Key, id: Int)
    }

    /// Number of live subscriptions; publishing is skipped entirely at zero.
    @usableFromInline let subscriptions = Atomic<Int>(0)
    private let state = Mutex(State())
    /// Streams that ended and are not dropped yet; taken only briefly, never while
    /// yielding, so `onTermination` can always take it (lock order: `state`, then
    /// this).
    private let terminated = Mutex<[Termination]>([])
    /// How many terminations wait in ``terminated``: a change looks there only then.
    private let terminatedCount = Atomic<Int>(0)

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
        withState { state in
            for continuation in state.events.values { continuation.yield(event) }
            state.updates[key]?.yield(value)
        }
    }

    /// Sends `event` to every event stream and `value` to the update streams of
    /// `keys` (of every key when `nil`): a change of many keys at once.
    @usableFromInline
    func publish(_ event: Event, keys: [Key]?, value: Value?) {
        withState { state in
            for continuation in state.events.values { continuation.yield(event) }
            if let keys {
                for key in keys { state.updates[key]?.yield(value) }
            } else {
                for key in state.updates.keys { state.updates[key]?.yield(value) }
            }
        }
    }

    /// The keys that have update streams.
    @usableFromInline
    var updatedKeys: [Key] {
        withState { Array($0.updates.keys) }
    }

    /// Sends an event with no per-key update.
    @usableFromInline
    func publish(_ event: Event) {
        withState { state in
            for continuation in state.events.values { continuation.yield(event) }
        }
    }

    /// Sends `value` to the update streams of `key` only.
    @usableFromInline
    func publishUpdate(key: Key, value: Value?) {
        withState { state in
            state.updates[key]?.yield(value)
        }
    }

    func addEvents(_ continuation: AsyncStream<Event>.Continuation) -> Int {
        subscriptions.add(1, ordering: .relaxed)
        return withState { state in
            let id = state.nextID
            state.nextID += 1
            state.events[id] = continuation
            return id
        }
    }

    func addUpdates(for key: Key, _ continuation: AsyncStream<Value?>.Continuation) -> Int {
        addUpdatesAwaitingStart(for: key, continuation).id
    }

    /// Adds an update stream for `key` whose starting value is read after it is
    /// registered, outside this lock (a read that may wait on a store): returns its
    /// id and the count to hand ``yieldStartingValue(_:for:id:ifNothingPublishedSince:)``.
    func addUpdatesAwaitingStart(
        for key: Key, _ continuation: AsyncStream<Value?>.Continuation
    ) -> (id: Int, published: UInt64) {
        subscriptions.add(1, ordering: .relaxed)
        return withState { state in
            let id = state.nextID
            state.nextID += 1
            state.updates[key, default: Streams()].continuations[id] = continuation
            return (id, state.updates[key]?.published ?? 0)
        }
    }

    /// Sends `value` to the stream `id` of `key` as its starting value, unless a
    /// value was published for `key` since the stream was registered (`published`):
    /// the stream already has that one, which is newer than any starting value.
    func yieldStartingValue(_ value: Value?, for key: Key, id: Int, ifNothingPublishedSince published: UInt64) {
        withState { state in
            guard let streams = state.updates[key], streams.published == published,
                let continuation = streams.continuations[id]
            else { return }
            continuation.yield(value)
        }
    }

    /// Called by an event stream's `onTermination`: notes the stream, which the next
    /// change of the state drops (see the type's documentation for why not now).
    func removeEvents(_ id: Int) {
        noteTermination(.events(id: id))
    }

    /// Called by an update stream's `onTermination`, like ``removeEvents(_:)``.
    func removeUpdates(for key: Key, _ id: Int) {
        noteTermination(.updates(key: key, id: id))
    }

    private func noteTermination(_ termination: Termination) {
        terminated.withLock { $0.append(termination) }
        terminatedCount.add(1, ordering: .releasing)
    }

    /// Runs `body` on the state under its lock, after dropping the streams that
    /// ended.
    private func withState<R>(_ body: (inout State) -> R) -> R {
        state.withLock { state in
            if terminatedCount.load(ordering: .acquiring) > 0 { dropTerminated(&state) }
            return body(&state)
        }
    }

    private func dropTerminated(_ state: inout State) {
        let ended = terminated.withLock { terminated in
            defer { terminated = [] }
            return terminated
        }
        terminatedCount.subtract(ended.count, ordering: .relaxed)
        var removed = 0
        for termination in ended {
            switch termination {
            case .events(let id):
                if state.events.removeValue(forKey: id) != nil { removed += 1 }
            case .updates(let key, let id):
                if state.updates[key]?.continuations.removeValue(forKey: id) != nil { removed += 1 }
                if state.updates[key]?.continuations.isEmpty == true { state.updates[key] = nil }
            }
        }
        if removed > 0 { subscriptions.subtract(removed, ordering: .relaxed) }
    }

    /// Ends every stream; called when the cache goes away.
    func finishAll() {
        let (events, updates) = state.withLock { state in
            let taken = (Array(state.events.values), state.updates.values.flatMap(\.continuations.values))
            state.events = [:]
            state.updates = [:]
            return taken
        }
        // Outside the lock: finishing runs each stream's onTermination.
        for continuation in events { continuation.finish() }
        for continuation in updates { continuation.finish() }
    }
}
