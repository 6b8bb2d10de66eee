import Foundation
import Hoard
import Synchronization
import Testing

/// A write, a removal or a clear that returned never comes back undone: not after
/// another change of its batch was refused, not after a value failed to encode, not
/// when a fetch or a promotion races it.
@Suite("Cache: acknowledged changes are never undone", .timeLimit(.minutes(3)))
struct CacheAcknowledgedWriteTests {
    /// A key that cannot be rebuilt from its string, as URL-like and custom keys.
    struct OpaqueKey: CacheKey {
        var id: Int
        var cacheKeyString: String { "opaque-\(id)" }
    }

    /// Collects the failures a cache reports.
    final class FailureLog: Sendable {
        private let failures = Mutex<[CacheFailure]>([])
        func record(_ failure: CacheFailure) { failures.withLock { $0.append(failure) } }
        var all: [CacheFailure] { failures.withLock { $0 } }
    }

    @Test("A change the store refuses fails alone: the rest of its batch is applied, in order")
    func refusedChangeFailsAlone() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory, configuration: .init(byteLimit: 64 << 10))
            let gated = GatedStore(disk)
            let failures = FailureLog()
            var configuration = Cache<String, Data>.Configuration(name: "poison")
            configuration.localStores = .stores([gated])
            configuration.onError = { failures.record($0) }
            let cache = try Cache<String, Data>(configuration: configuration)
            try await cache.set(Data("old-x".utf8), for: "x")
            try await cache.set(Data("old-y".utf8), for: "y")

            // Held at the store, so that the changes below reach it in one batch.
            gated.close()
            cache["w"] = Data("w".utf8)
            cache["x"] = nil
            cache["y"] = Data("new-y".utf8)
            cache["big"] = Data(count: 100 << 10)
            cache["z"] = Data("z".utf8)
            gated.release()
            await cache.flush()

            #expect(try disk.entry(for: "x", in: "poison") == nil, "the removal reached the store")
            #expect(try disk.entry(for: "y", in: "poison")?.data == Data("new-y".utf8))
            #expect(try disk.entry(for: "z", in: "poison")?.data == Data("z".utf8))
            #expect(try disk.entry(for: "w", in: "poison")?.data == Data("w".utf8))
            #expect(try disk.entry(for: "big", in: "poison") == nil)
            // Once memory lets go, the removed and replaced values stay gone.
            let fresh = try Cache<String, Data>(configuration: configuration)
            #expect(fresh.cachedValue(for: "x") == nil)
            #expect(fresh.cachedValue(for: "y") == Data("new-y".utf8))

            let reported = failures.all
            #expect(reported.map(\.key) == ["big"], "only the refused change is reported, by its key")
            #expect((reported.first?.error as? HoardError)?.code == .valueTooLarge)
        }
    }

    @Test(
        "A value the store refuses removes the older value there, unless a later change of the key in the batch was applied"
    )
    func refusedValueRemovesTheOlderOne() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory, configuration: .init(byteLimit: 64 << 10))
            let gated = GatedStore(disk)
            let failures = FailureLog()
            var configuration = Cache<String, Data>.Configuration(name: "poison")
            configuration.localStores = .stores([gated])
            configuration.onError = { failures.record($0) }
            let cache = try Cache<String, Data>(configuration: configuration)
            try await cache.set(Data("old-big".utf8), for: "big")
            try await cache.set(Data("old-later".utf8), for: "later")

            gated.close()
            cache["big"] = Data(count: 100 << 10)
            cache["later"] = Data(count: 100 << 10)
            cache["later"] = Data("new-later".utf8)
            gated.release()
            await cache.flush()

            #expect(try disk.entry(for: "big", in: "poison") == nil, "the value the refused one replaced is gone")
            #expect(try disk.entry(for: "later", in: "poison")?.data == Data("new-later".utf8))
            let fresh = try Cache<String, Data>(configuration: configuration)
            #expect(fresh.cachedValue(for: "big") == nil, "no older value comes back once memory lets go")
            #expect(fresh.cachedValue(for: "later") == Data("new-later".utf8))
            #expect(failures.all.map(\.key) == ["big", "later"], "each refused change is reported once")
            #expect(failures.all.allSatisfy { $0.operation == .write })
        }
    }

    @Test("A value a remote store refuses removes the older value there")
    func remoteRefusedValueRemovesTheOlderOne() async throws {
        let remote = RefusingRemoteStore(refusing: "big")
        try await remote.inner.set(Data("old-big".utf8), for: "big", in: "poison", storedAt: Date(), expiresAt: nil)
        var configuration = Cache<String, Data>.Configuration(name: "poison")
        configuration.localStores = .none
        configuration.remoteStores = [remote]
        let failures = FailureLog()
        configuration.onError = { failures.record($0) }
        let cache = try Cache<String, Data>(configuration: configuration)

        cache["big"] = Data("new-big".utf8)
        cache["other"] = Data("other".utf8)
        await cache.flush()

        #expect(try await remote.inner.entry(for: "big", in: "poison") == nil)
        #expect(try await remote.inner.entry(for: "other", in: "poison")?.data == Data("other".utf8))
        #expect(failures.all.map(\.key) == ["big"])
    }

    @Test("A store that can neither take a value nor remove the older one reports the key as a failed removal too")
    func staleValueLeftIsReported() async throws {
        let remote = RefusingRemoteStore(refusing: "big", removals: true)
        try await remote.inner.set(Data("old-big".utf8), for: "big", in: "poison", storedAt: Date(), expiresAt: nil)
        var configuration = Cache<String, Data>.Configuration(name: "poison")
        configuration.localStores = .none
        configuration.remoteStores = [remote]
        let failures = FailureLog()
        configuration.onError = { failures.record($0) }
        let cache = try Cache<String, Data>(configuration: configuration)

        cache["big"] = Data("new-big".utf8)
        await cache.flush()

        #expect(failures.all.map(\.key) == ["big", "big"])
        #expect(failures.all.map(\.operation) == [.write, .remove])
    }

    @Test(
        "A read that begins after a removal or a clear does not receive a value fetched before it",
        arguments: [false, true])
    func readAfterChangeDoesNotJoinAnOlderFetch(clears: Bool) async throws {
        let probe = FetchProbe(open: false)
        let started = Mutex(0)
        let configuration: Cache<String, Int>.Configuration = CacheTest.configuration()
        // Each fetch answers its own number.
        let cache = try Cache<String, Int>(configuration: configuration) { _ in
            let number = started.withLock { count in
                count += 1
                return count
            }
            await probe.enter()
            return number
        }
        let first = Task { try await cache.value(for: "k") }
        #expect(await CacheTest.eventually { probe.calls == 1 })
        if clears {
            try await cache.clear()
        } else {
            try await cache.removeValue(for: "k")
        }
        let second = Task { try await cache.value(for: "k") }
        #expect(await CacheTest.eventually { probe.calls == 2 }, "the second read fetches anew")
        probe.open()
        #expect(try await second.value == 2, "not the value fetched before the change")
        #expect(try await first.value == 1, "the first read receives its own fetch")
        #expect(cache.cachedValue(for: "k") == 2, "only the newer fetch is stored")
    }

    @Test("A refused write is thrown to its caller; the other writes of its batch succeed")
    func refusedWriteThrowsAlone() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory, configuration: .init(byteLimit: 1 << 10))
            let gated = GatedStore(disk)
            var configuration = Cache<String, Data>.Configuration(name: "poison")
            configuration.localStores = .stores([gated])
            let cache = try Cache<String, Data>(configuration: configuration)

            gated.close()
            cache["w"] = Data("w".utf8)
            let big = Task { try await cache.set(Data(count: 4 << 10), for: "big") }
            let small = Task { try await cache.set(Data("small".utf8), for: "small") }
            #expect(
                await CacheTest.eventually {
                    cache.cachedValue(for: "small") != nil && cache.cachedValue(for: "big") != nil
                })
            gated.release()
            await #expect(throws: HoardError.self) { try await big.value }
            try await small.value
            #expect(try disk.entry(for: "small", in: "poison")?.data == Data("small".utf8))
        }
    }

    @Test("A value that fails to encode removes the older value from every store")
    func unencodableValueRemovesOlder() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let server = InMemoryRemoteStore()
            let failures = FailureLog()
            var configuration: Cache<String, Double>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [server]
            configuration.onError = { failures.record($0) }
            let cache = try Cache<String, Double>(configuration: configuration)
            cache["k"] = 1.0
            await cache.flush()
            #expect(try disk.entry(for: "k", in: "test") != nil)

            // Another instance sees the removal announced.
            let other = server.anotherInstance()
            var invalidations = other.invalidations(in: "test").makeAsyncIterator()
            cache["k"] = .nan  // JSON cannot encode NaN
            await cache.flush()

            #expect(try disk.entry(for: "k", in: "test") == nil)
            #expect(try await server.entry(for: "k", in: "test") == nil)
            #expect(await invalidations.next() == .key("k"))
            #expect(failures.all.contains { $0.key == "k" && $0.operation == .encode })
            let fresh = try Cache<String, Double>(configuration: configuration)
            #expect(fresh.cachedValue(for: "k") == nil, "the older value is gone once memory lets go")
            await #expect(throws: (any Error).self) { try await cache.set(.infinity, for: "k") }
        }
    }

    @Test("A value promoted from a remote store lives no longer than localExpiry on disk")
    func promotionKeepsLocalExpiry() async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let clock = ManualClock()
            let disk = try DiskStore(directory: directory, clock: clock)
            let server = InMemoryRemoteStore(clock: clock)
            try await server.set(
                Data("1".utf8), for: "k", in: "test", storedAt: clock.now(),
                expiresAt: clock.now().addingTimeInterval(86_400))
            try await server.set(Data("2".utf8), for: "forever", in: "test", storedAt: clock.now(), expiresAt: nil)
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [server]
            configuration.defaultExpiry = .hours(24)
            configuration.localExpiry = .seconds(60)
            let cache = try Cache<String, String>(configuration: configuration, clock: clock)

            #expect(try await cache.value(for: "k") == "1")
            #expect(try await cache.value(for: "forever") == "2")
            await cache.flush()
            let limit = clock.now().addingTimeInterval(60)
            #expect(try disk.entry(for: "k", in: "test")?.expiresAt == limit)
            #expect(try disk.entry(for: "forever", in: "test")?.expiresAt == limit)

            // An entry written as it is keeps to the tiers' lifetimes too.
            try await cache.set(
                CacheEntry(value: "3", storedAt: clock.now(), expiresAt: clock.now().addingTimeInterval(86_400)),
                for: "entry")
            #expect(try disk.entry(for: "entry", in: "test")?.expiresAt == limit)
        }
    }

    @Test("Memory only: a fetch that began while a set was writing memory does not overwrite it")
    func memoryOnlyFetchAgainstSet() async throws {
        let clock = HoldingClock()
        let probe = FetchProbe(open: false)
        let cache = try Cache<String, Int>(configuration: CacheTest.configuration(), clock: clock) { _ in
            await probe.enter()
            return 1
        }
        // The set checks that no read is in flight, then stops at the clock, before
        // it writes memory; the read begins there and misses.
        clock.arm()
        let setDone = DispatchSemaphore(value: 0)
        let thread = Thread {
            clock.holdsThisThread()
            cache["k"] = 2
            clock.finished()
            setDone.signal()
        }
        thread.start()
        await clock.waitUntilHeld()
        #expect(clock.hasHeld)
        let read = Task { try await cache.value(for: "k") }
        #expect(await CacheTest.eventually { probe.calls == 1 })
        clock.release()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                setDone.wait()
                continuation.resume()
            }
        }
        probe.open()
        #expect(try await read.value == 1, "the read began before the set wrote memory")
        #expect(cache["k"] == 2, "the fetched value does not land over the set")
        #expect(cache.statistics.droppedPromotions == 1)
    }

    @Test(
        "An invalidation of a key this instance cannot name drops a promotion of that key only",
        arguments: [(invalidated: 2, dropsPromotion: false), (invalidated: 1, dropsPromotion: true)])
    func unnamedInvalidation(invalidated: Int, dropsPromotion: Bool) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            for id in 1...2 {
                try disk.set(Data("\(id)".utf8), for: "opaque-\(id)", in: "test", storedAt: Date(), expiresAt: nil)
            }
            let gated = ReadGatedStore(disk)
            let server = InMemoryRemoteStore()
            var configuration: Cache<OpaqueKey, String>.Configuration = CacheTest.configuration()
            configuration.localStores = .stores([gated])
            configuration.remoteStores = [server]
            let cache = try Cache<OpaqueKey, String>(configuration: configuration)

            // A read of key 1 has found its value and is about to promote it…
            gated.gate.close()
            let read = Task { try await cache.value(for: OpaqueKey(id: 1)) }
            await gated.gate.arrival()
            // …when another instance changes a key this one never held: it can only
            // drop it from its local stores by its string.
            let keyString = "opaque-\(invalidated)"
            try await server.anotherInstance().set(
                Data("3".utf8), for: keyString, in: "test", storedAt: Date(), expiresAt: nil)
            while (try? disk.contains(keyString, in: "test")) != false { await Task.yield() }
            gated.gate.open()
            #expect(try await read.value == "1")
            await cache.flush()

            #expect(cache.statistics.droppedPromotions == (dropsPromotion ? 1 : 0))
            #expect(cache.memoryCount == (dropsPromotion ? 0 : 1))
        }
    }
}

/// One key identity in every tier.
@Suite("Cache: Unicode-equal keys are one key in every tier")
struct CacheKeyNormalizationTests {
    static let composed = "caf\u{E9}"  // "café", precomposed (NFC)
    static let decomposed = "cafe\u{301}"  // "café", e + combining acute (NFD)

    /// A remote store that records the bytes of the keys and namespaces it is
    /// given (a Swift dictionary would not tell NFC from NFD; Redis does).
    final class ByteRecordingStore: ForwardingRemoteStore {
        let inner = InMemoryRemoteStore()
        private let received = Mutex<[[UInt8]]>([])
        var keys: [[UInt8]] { received.withLock { $0 } }
        private func note(_ key: String, _ namespace: String) {
            received.withLock { $0.append(Array(namespace.utf8) + [0] + Array(key.utf8)) }
        }

        func entry(for key: String, in namespace: String) async throws -> StoredEntry? {
            note(key, namespace)
            return try await inner.entry(for: key, in: namespace)
        }
        func entries(for keys: [String], in namespace: String) async throws -> [String: StoredEntry] {
            for key in keys { note(key, namespace) }
            return try await inner.entries(for: keys, in: namespace)
        }
        func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) async throws {
            note(key, namespace)
            try await inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
        }
        func removeValue(for key: String, in namespace: String) async throws {
            note(key, namespace)
            try await inner.removeValue(for: key, in: namespace)
        }
        func write(_ batch: [CacheStoreWrite]) async throws {
            for change in batch {
                switch change {
                case .set(_, let key, let namespace, _, _), .removeValue(let key, let namespace): note(key, namespace)
                case .removeAll: break
                }
            }
            try await inner.write(batch)
        }
    }

    @Test("Stores receive every key and namespace in NFC, whichever form the caller used")
    func storesReceiveComposedKeys() async throws {
        #expect(Self.composed == Self.decomposed, "Swift considers the two equal")
        try await DiskTest.withTemporaryDirectory { directory in
            let remote = ByteRecordingStore()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(
                "r\u{E9}sume\u{301}s", disk: try DiskStore(directory: directory))
            configuration.remoteStores = [remote]
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("1", for: Self.decomposed)
            cache[Self.composed] = "2"
            try await cache.removeValue(for: Self.decomposed)
            _ = try await Cache<String, String>(configuration: configuration).value(for: Self.decomposed)

            let expected = Array("r\u{E9}sum\u{E9}s".utf8) + [0] + Array(Self.composed.utf8)
            #expect(remote.keys.count >= 4)
            #expect(remote.keys.allSatisfy { $0 == expected }, "\(remote.keys)")
        }
    }

    @Test("Another instance's change of the composed key invalidates the decomposed key this one holds")
    func invalidationAcrossForms() async throws {
        let server = InMemoryRemoteStore()
        var configuration = Cache<String, String>.Configuration(name: "words")
        configuration.localStores = .none
        configuration.remoteStores = [server]
        let cache = try Cache<String, String>(configuration: configuration)
        try await cache.set("1", for: Self.decomposed)

        var events = cache.events.makeAsyncIterator()
        try await server.anotherInstance().set(
            Data("2".utf8), for: Self.composed, in: "words", storedAt: Date(), expiresAt: nil)
        while let event = await events.next() {
            if case .invalidated = event { break }
        }
        #expect(cache.memoryCount == 0)
        #expect(try await cache.value(for: Self.decomposed) == "2")
    }
}

/// A remote store's reconnect is no reason to go back to the origin for everything.
@Suite("Cache: a missed-invalidations signal drops memory, not bounded local copies")
struct CacheMissedInvalidationTests {
    /// A remote store whose invalidations the test sends.
    final class SignalingRemoteStore: ForwardingRemoteStore {
        let inner = InMemoryRemoteStore()
        private let continuations = Mutex<[AsyncStream<RemoteInvalidation>.Continuation]>([])

        func send(_ invalidation: RemoteInvalidation) {
            for continuation in continuations.withLock({ $0 }) { continuation.yield(invalidation) }
        }
        func invalidations(in namespace: String) -> AsyncStream<RemoteInvalidation> {
            let (stream, continuation) = AsyncStream<RemoteInvalidation>.makeStream()
            continuations.withLock { $0.append(continuation) }
            return stream
        }
    }

    @Test(
        "After .missed, memory is emptied; the local copies stay when localExpiry bounds them",
        arguments: [Expiry?.some(.hours(1)), nil])
    func missedKeepsBoundedLocalCopies(localExpiry: Expiry?) async throws {
        try await DiskTest.withTemporaryDirectory { directory in
            let disk = try DiskStore(directory: directory)
            let remote = SignalingRemoteStore()
            var configuration: Cache<String, String>.Configuration = CacheTest.configuration(disk: disk)
            configuration.remoteStores = [remote]
            configuration.localExpiry = localExpiry
            let cache = try Cache<String, String>(configuration: configuration)
            try await cache.set("1", for: "k")
            #expect(cache.memoryCount == 1)

            var events = cache.events.makeAsyncIterator()
            remote.send(.missed)
            while let event = await events.next() {
                if case .invalidated(nil) = event { break }
            }
            await cache.flush()
            #expect(cache.memoryCount == 0)
            let kept = try disk.entry(for: "k", in: "test") != nil
            #expect(kept == (localExpiry != nil))
            #expect(try await cache.value(for: "k") == "1", "from the local copy, or else the remote store")
        }
    }
}

/// A remote store that refuses, as too large, every batch that sets one key (and,
/// when `removals`, every batch that removes it), and applies every other batch.
final class RefusingRemoteStore: ForwardingRemoteStore {
    let inner = InMemoryRemoteStore()
    let refused: String
    let refusesRemovals: Bool

    init(refusing key: String, removals: Bool = false) {
        refused = key
        refusesRemovals = removals
    }

    func write(_ batch: [CacheStoreWrite]) async throws {
        for write in batch {
            switch write {
            case .set(_, let key, _, _, _) where key == refused:
                throw HoardError(.valueTooLarge, "refused: \(key)")
            case .removeValue(let key, _) where key == refused && refusesRemovals:
                throw HoardError(.valueTooLarge, "refused: \(key)")
            default: continue
            }
        }
        try await inner.write(batch)
    }
}
