import Foundation
import Hoard
import Synchronization

/// Helpers for the tiered cache's tests.
enum CacheTest {
    /// A cache configuration with a disk store in `directory` (and the given clock).
    static func configuration<Key: CacheKey, Value: Codable & Sendable>(
        _ name: String = "test", disk: DiskStore? = nil, memoryLimit: Int = 1_000
    ) -> Cache<Key, Value>.Configuration {
        var configuration = Cache<Key, Value>.Configuration(name: name)
        configuration.memory = .init(countLimit: memoryLimit, lowWaterMark: 1.0)
        configuration.localStores = disk.map { .stores([$0]) } ?? .none
        return configuration
    }

    /// Waits (without sleeping) until `condition` holds, yielding to other tasks.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<200_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }
}

/// Counts how often a fetch ran and can hold every fetch until released.
final class FetchProbe: Sendable {
    private let state = Mutex<(calls: Int, open: Bool, waiters: [CheckedContinuation<Void, Never>])>((0, true, []))

    init(open: Bool = true) {
        state.withLock { $0.open = open }
    }

    var calls: Int { state.withLock { $0.calls } }

    /// Records a call, then waits until the probe is open.
    func enter() async {
        await withCheckedContinuation { continuation in
            let proceed = state.withLock { state -> Bool in
                state.calls += 1
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if proceed { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A local store that forwards to another one but holds every batch write until
/// released, or fails every call on demand.
final class GatedStore: CacheStore {
    let inner: any CacheStore
    private let gate = DispatchSemaphore(value: 0)
    private let state = Mutex<(gated: Bool, failure: HoardError?)>((false, nil))

    init(_ inner: any CacheStore) { self.inner = inner }

    func close() { state.withLock { $0.gated = true } }
    func release() {
        state.withLock { $0.gated = false }
        gate.signal()
    }
    func fail(with error: HoardError?) { state.withLock { $0.failure = error } }

    private func check() throws(HoardError) {
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        try check()
        return try inner.entry(for: key, in: namespace)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) throws(HoardError) {
        try check()
        try inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
        if state.withLock({ $0.gated }) { _ = gate.wait(timeout: .now() + 20) }
        try check()
        try inner.write(batch)
    }
    func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool {
        try check()
        return try inner.removeValue(for: key, in: namespace)
    }
    func removeAll(in namespace: String) throws(HoardError) -> Int { try inner.removeAll(in: namespace) }
    func keys(in namespace: String) throws(HoardError) -> [String] { try inner.keys(in: namespace) }
    func contains(_ key: String, in namespace: String) throws(HoardError) -> Bool { try inner.contains(key, in: namespace) }
    func usage(in namespace: String) throws(HoardError) -> StoreUsage { try inner.usage(in: namespace) }
    func totalUsage() throws(HoardError) -> StoreUsage { try inner.totalUsage() }
    func removeExpired() throws(HoardError) -> Int { try inner.removeExpired() }
    func trim(toBytes maxBytes: Int) throws(HoardError) -> Int { try inner.trim(toBytes: maxBytes) }
    func verify(repairing: Bool) throws(HoardError) -> VerificationReport { try inner.verify(repairing: repairing) }
}

struct FetchFailed: Error, Equatable {
    var attempt: Int
}
