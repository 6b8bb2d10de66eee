#if Postgres
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardPostgres

/// Keys whose row PostgreSQL's primary-key index cannot hold (an index row is at
/// most 2,704 bytes) are the change's own failure, as a value over a disk store's
/// limit is: refused with `valueTooLarge`, and no other change is lost.
@Suite(
    "PostgresStore refuses a key its index cannot hold, alone",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(3)))
struct PostgresLongKeyTests {
    /// A key of 3,700 bytes that compression does not shrink below the index's limit.
    static let longKey = (0..<100).map { _ in UUID().uuidString }.joined()

    @Test("set and a write of one change: HoardError valueTooLarge naming the key; the store goes on")
    func refusedAlone() async throws {
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        for attempt in [
            { try await store.set(Data([1]), for: Self.longKey, in: "ns", storedAt: .now, expiresAt: nil) },
            { try await store.write([.set(Data([1]), for: Self.longKey, in: "ns", storedAt: .now, expiresAt: nil)]) },
        ] {
            do {
                try await attempt()
                Issue.record("a key the index cannot hold was stored")
            } catch let error as HoardError {
                #expect(error.code == .valueTooLarge, "\(error)")
                #expect(error.key == Self.longKey)
            } catch {
                Issue.record("not a HoardError: \(error)")
            }
        }
        #expect(try await store.entry(for: Self.longKey, in: "ns") == nil)
        try await store.removeValue(for: Self.longKey, in: "ns")
        try await store.set(Data([2]), for: "short", in: "ns", storedAt: .now, expiresAt: nil)
        #expect(try await store.entry(for: "short", in: "ns")?.data == Data([2]))
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }

    @Test("A Cache batch with such a key: that change fails alone, the changes after it reach the store")
    func cacheBatchLosesNothingElse() async throws {
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        let held = HeldFirstWrite(store)
        let failures = FailureLog()
        var cacheConfiguration = Cache<String, String>.Configuration(name: "ns")
        cacheConfiguration.remoteStores = [held]
        cacheConfiguration.onError = { failures.append($0) }
        let cache = try Cache<String, String>(configuration: cacheConfiguration)

        // While the first write is held, the next ones queue up: one batch.
        cache["first"] = "1"
        await held.firstWriteStarted()
        cache[Self.longKey] = "long"
        cache["after"] = "2"
        held.release()
        await cache.flush()

        #expect(try await store.entry(for: "first", in: "ns") != nil)
        #expect(try await store.entry(for: "after", in: "ns") != nil, "the change after the refused one was lost")
        let failed = failures.all.filter { $0.tier == .remote(0) && $0.operation == .write }
        let failedKeys = failed.map { $0.key == Self.longKey ? "the long key" : $0.key }
        #expect(failedKeys == ["the long key"])
        #expect((failed.first?.error as? HoardError)?.code == .valueTooLarge)
        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }
}

/// A remote store that holds its first `write` until ``release()``, so that the
/// writes a cache takes in meanwhile reach the store as one batch.
private final class HeldFirstWrite: RemoteCacheStore {
    private let base: PostgresStore
    private let started: AsyncStream<Void>
    private let startedContinuation: AsyncStream<Void>.Continuation
    private let gate: AsyncStream<Void>
    private let gateContinuation: AsyncStream<Void>.Continuation
    private let isFirst = Locked(true)

    init(_ base: PostgresStore) {
        self.base = base
        (started, startedContinuation) = AsyncStream.makeStream()
        (gate, gateContinuation) = AsyncStream.makeStream()
    }

    /// Waits until the first write has started (and is held).
    func firstWriteStarted() async {
        for await _ in started { return }
    }

    /// Lets the first write go on.
    func release() { gateContinuation.finish() }

    func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
        try await base.entry(for: key, in: namespace)
    }

    func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry] {
        try await base.entries(for: keys, in: namespace)
    }

    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws {
        try await write([.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)])
    }

    func removeValue(for key: String, in namespace: String) async throws {
        try await write([.removeValue(for: key, in: namespace)])
    }

    func removeAll(in namespace: String) async throws {
        try await base.removeAll(in: namespace)
    }

    func write(_ batch: [CacheStoreWrite]) async throws {
        let first = isFirst.withLock { first in
            defer { first = false }
            return first
        }
        if first {
            startedContinuation.yield()
            for await _ in gate {}
        }
        try await base.write(batch)
    }

    func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
        base.invalidations(in: namespace)
    }
}
#endif
