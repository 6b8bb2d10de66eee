import Synchronization

/// Runs the operations on one key one at a time, in the order they asked, across
/// tasks and without blocking a thread: the read-modify-write of the variants an
/// ``HTTPResponseCache`` stores under one URL, so that concurrent stores of two
/// variants both survive.
final class _HTTPKeyedLock: Sendable {
    /// For each key held, the operations waiting for it, first come first.
    private let held = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Runs `body` once no other operation on `key` runs, and before any that asks
    /// later.
    func withLock<T>(_ key: String, _ body: () async throws -> T) async rethrows -> T {
        await lock(key)
        defer { unlock(key) }
        return try await body()
    }

    /// How many operations on `key` wait for the one running.
    func waiting(for key: String) -> Int {
        held.withLock { $0[key]?.count ?? 0 }
    }

    private func lock(_ key: String) async {
        await withCheckedContinuation { continuation in
            let acquired = held.withLock { held -> Bool in
                guard held[key] != nil else {
                    held[key] = []
                    return true
                }
                held[key, default: []].append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    /// Hands the key to the first waiting operation, or frees it.
    private func unlock(_ key: String) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var waiting = held[key], !waiting.isEmpty else {
                held[key] = nil
                return nil
            }
            let first = waiting.removeFirst()
            held[key] = waiting
            return first
        }
        next?.resume()
    }
}

/// The work of an ``HTTPResponseCache`` that ends in a write (a response being
/// stored, a background revalidation), so that ``HTTPResponseCache/flush()`` can
/// wait for what began before it.
final class _HTTPPendingWork: Sendable {
    private struct State {
        var nextID = 0
        var running: Set<Int> = []
        /// Each waiter with the work it still waits for.
        var waiters: [(work: Set<Int>, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Notes that work begins; returns its identifier for ``end(_:)``.
    func begin() -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            state.running.insert(state.nextID)
            return state.nextID
        }
    }

    /// Notes that the work `id` ended, and resumes the waiters it was the last for.
    func end(_ id: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running.remove(id)
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters = state.waiters.compactMap { waiter in
                var waiter = waiter
                waiter.work.remove(id)
                guard waiter.work.isEmpty else { return waiter }
                ready.append(waiter.continuation)
                return nil
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once every work begun before the call has ended (work begun later
    /// is not waited for).
    func waitForRunning() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                guard !state.running.isEmpty else { return true }
                state.waiters.append((state.running, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }
}
