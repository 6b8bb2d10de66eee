import NIOCore

/// A bounded set of pipelining connections to one server, opened on demand.
///
/// - **Bounded.** At most `maximumConnections` connections, each shared by at most
///   `pipeliningLimit` operations at once (their commands pipelined). An operation
///   takes an idle connection if there is one, else opens a new connection while
///   under the maximum, else shares the least busy connection with room. When every
///   connection is full, it waits in a first-in first-out queue, for at most
///   `connectionWaitTimeout`, then fails with ``RedisError/Code/poolExhausted``.
/// - **Reconnects with exponential backoff.** A connection that closes (the server
///   went away, a command timed out) leaves the pool; the next operation opens a new
///   one. After a failed attempt the pool waits `initialReconnectDelay`, doubled after
///   each further failure up to `maximumReconnectDelay`, before it tries again; in
///   between, operations that have no open connection to use fail at once with
///   ``RedisError/Code/connectionFailed`` instead of piling up, so a cache can fall
///   back to a miss. A successful connection resets the delay.
/// - **Never blocks a thread.** State lives in this actor; connecting and waiting
///   suspend.
actor _RedisConnectionPool {
    struct Settings: Sendable {
        var connection: _RedisConnection.Settings
        var maximumConnections: Int
        var pipeliningLimit: Int
        var connectionWaitTimeout: Duration
        var initialReconnectDelay: Duration
        var maximumReconnectDelay: Duration
    }

    private struct Slot {
        let connection: _RedisConnection
        var leases: Int
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<_RedisConnection, any Error>
        let timeout: Task<Void, Never>
    }

    nonisolated let settings: Settings
    private nonisolated let group: any EventLoopGroup
    private var slots: [Slot] = []
    private var connecting = 0
    private var waiters: [Waiter] = []
    private var nextWaiterID: UInt64 = 0
    private var isShutdown = false
    private var consecutiveFailures = 0
    private var retryAt: ContinuousClock.Instant?
    private var lastFailure: RedisError?

    init(settings: Settings, group: any EventLoopGroup) {
        self.settings = settings
        self.group = group
    }

    /// Runs `body` with a connection of the pool, then gives the connection back.
    nonisolated func withConnection<T: Sendable>(
        _ body: (_RedisConnection) async throws(RedisError) -> T
    ) async throws(RedisError) -> T {
        let connection = try await lease()
        do {
            let result = try await body(connection)
            await release(connection)
            return result
        } catch {
            await release(connection)
            throw error
        }
    }

    /// The number of open connections, and of operations using them, for tests.
    var load: (connections: Int, operations: Int, waiters: Int) {
        (slots.count, slots.reduce(0) { $0 + $1.leases }, waiters.count)
    }

    /// Closes every connection and fails every waiting operation; later operations
    /// fail with ``RedisError/Code/shutdown``.
    func shutdown() {
        isShutdown = true
        for slot in slots { slot.connection.close() }
        slots.removeAll()
        let error = RedisError(.shutdown, "The Redis store was shut down.")
        for waiter in waiters {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: error)
        }
        waiters.removeAll()
    }

    // MARK: Leasing

    private func lease() async throws(RedisError) -> _RedisConnection {
        guard !isShutdown else { throw RedisError(.shutdown, "The Redis store was shut down.") }
        dropClosedConnections()
        if let index = slots.firstIndex(where: { $0.leases == 0 }) {
            slots[index].leases += 1
            return slots[index].connection
        }
        if slots.count + connecting < settings.maximumConnections {
            if let retryAt, ContinuousClock.now < retryAt {
                // Backing off: share a busy connection if there is one, else fail fast.
                if let connection = leaseLeastBusy() { return connection }
                if slots.isEmpty && connecting == 0 { throw backoffError(until: retryAt) }
            } else {
                return try await openConnection(leasing: true)
            }
        }
        if let connection = leaseLeastBusy() { return connection }
        return try await waitForConnection()
    }

    private func release(_ connection: _RedisConnection) {
        if let index = slots.firstIndex(where: { $0.connection === connection }) {
            slots[index].leases -= 1
        }
        serveWaiters()
    }

    private func leaseLeastBusy() -> _RedisConnection? {
        var best: Int?
        for index in slots.indices where slots[index].leases < settings.pipeliningLimit {
            if best.map({ slots[index].leases < slots[$0].leases }) ?? true { best = index }
        }
        guard let best else { return nil }
        slots[best].leases += 1
        return slots[best].connection
    }

    private func dropClosedConnections() {
        slots.removeAll { !$0.connection.isActive }
    }

    // MARK: Connecting

    /// Opens a connection and adds it to the pool, leased once to the caller when
    /// `leasing`; waiters get the rest of its room.
    private func openConnection(leasing: Bool) async throws(RedisError) -> _RedisConnection {
        connecting += 1
        let connection: _RedisConnection
        do {
            connection = try await _RedisConnection.connect(settings: settings.connection, group: group)
        } catch {
            connecting -= 1
            consecutiveFailures += 1
            lastFailure = error
            retryAt = ContinuousClock.now + reconnectDelay(afterFailures: consecutiveFailures)
            if slots.isEmpty && connecting == 0 { failWaiters(error) }
            throw error
        }
        connecting -= 1
        consecutiveFailures = 0
        retryAt = nil
        guard !isShutdown else {
            connection.close()
            throw RedisError(.shutdown, "The Redis store was shut down.")
        }
        slots.append(Slot(connection: connection, leases: leasing ? 1 : 0))
        connection.closeFuture.whenComplete { _ in
            Task { await self.connectionClosed(connection) }
        }
        serveWaiters()
        return connection
    }

    private func connectionClosed(_ connection: _RedisConnection) {
        slots.removeAll { $0.connection === connection }
        serveWaiters()
    }

    /// The delay before the next attempt after `failures` failed ones in a row.
    private func reconnectDelay(afterFailures failures: Int) -> Duration {
        var delay = settings.initialReconnectDelay
        for _ in 1..<max(1, min(failures, 40)) {
            delay *= 2
            if delay >= settings.maximumReconnectDelay { return settings.maximumReconnectDelay }
        }
        return min(delay, settings.maximumReconnectDelay)
    }

    private func backoffError(until retryAt: ContinuousClock.Instant) -> RedisError {
        let remaining = (retryAt - ContinuousClock.now).components
        let milliseconds = remaining.seconds * 1000 + remaining.attoseconds / 1_000_000_000_000_000
        return RedisError(
            .connectionFailed,
            "Redis at \(settings.connection.endpoint) is unreachable (\(consecutiveFailures) failed attempts in a row); "
                + "the next attempt is in \(max(0, milliseconds)) ms.",
            underlying: lastFailure)
    }

    // MARK: Waiting

    private func waitForConnection() async throws(RedisError) -> _RedisConnection {
        let id = nextWaiterID
        nextWaiterID += 1
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<_RedisConnection, any Error>) in
                    guard !Task.isCancelled else {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    let wait = settings.connectionWaitTimeout
                    let timeout = Task {
                        try? await Task.sleep(for: wait)
                        guard !Task.isCancelled else { return }
                        self.expireWaiter(id)
                    }
                    waiters.append(Waiter(id: id, continuation: continuation, timeout: timeout))
                }
            } onCancel: {
                Task { await self.cancelWaiter(id) }
            }
        } catch let error as RedisError {
            throw error
        } catch {
            throw RedisError(
                .cancelled, "The operation was cancelled while it waited for a connection; nothing was sent.",
                underlying: error)
        }
    }

    private func serveWaiters() {
        while !waiters.isEmpty, !isShutdown {
            dropClosedConnections()
            if let connection = leaseLeastBusy() {
                let waiter = waiters.removeFirst()
                waiter.timeout.cancel()
                waiter.continuation.resume(returning: connection)
                continue
            }
            let backingOff = retryAt.map { ContinuousClock.now < $0 } ?? false
            if slots.count + connecting < settings.maximumConnections, !backingOff {
                // Room for another connection: open one for the waiters.
                connecting += 1
                Task {
                    await self.openConnectionForWaiters()
                }
            }
            return
        }
    }

    private func openConnectionForWaiters() async {
        connecting -= 1  // openConnection counts it again
        _ = try? await openConnection(leasing: false)
    }

    private func expireWaiter(_ id: UInt64) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        let seconds = Double(settings.connectionWaitTimeout.components.seconds)
            + Double(settings.connectionWaitTimeout.components.attoseconds) / 1e18
        waiter.continuation.resume(
            throwing: RedisError(
                .poolExhausted,
                "All \(slots.count) connections to \(settings.connection.endpoint) stayed busy for \(seconds) s "
                    + "(\(settings.pipeliningLimit) operations each); raise maximumConnections or pipeliningLimit, "
                    + "or connectionWaitTimeout."))
    }

    private func cancelWaiter(_ id: UInt64) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.timeout.cancel()
        waiter.continuation.resume(throwing: CancellationError())
    }

    private func failWaiters(_ error: RedisError) {
        for waiter in waiters {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: error)
        }
        waiters.removeAll()
    }
}
