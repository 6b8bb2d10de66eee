import Benchmark
import Foundation
import Hoard
import HoardRedis
import NIOCore

/// `RedisStore` against a raw RESP client measured in the same run, on the server
/// `HOARD_REDIS_URL` names; without it every benchmark is skipped with a message.
/// `Benchmarks/scripts/redis-vs-redis-benchmark` starts a throwaway server, runs
/// `redis-benchmark` against it with the same client count and pipelining depth, then
/// this target, and prints the ratios.
///
/// Every benchmark has its own key prefix; its setup writes 1,000 keys of 1 KiB values
/// (GET and MGET always hit) and its teardown removes them. Keys are read and written in
/// turn. The metric `requests/s` counts Redis commands as `redis-benchmark` does (one
/// RedisStore `set` is one `SET`; its invalidation `PUBLISH` rides in the same write and
/// is not counted); its median is the figure to quote.
///
/// - `c1 P1` (`redis-benchmark -c 1 -P 1`): one connection, one request in flight: the
///   next starts when the previous has its reply. 200 requests per iteration.
/// - `c1 P16` (`redis-benchmark -c 1 -P 16`): redis-benchmark writes 16 commands on its
///   one connection, waits for all 16 replies, then writes the next 16. An application
///   pipelines single-key calls by making them from concurrent tasks, which the pool
///   puts on one connection (`maximumConnections = 1`) without waiting for earlier
///   replies, and whose commands leave in one write. So one batch is 16 concurrent `entry` (or
///   `set`) calls in a task group, all awaited before the next batch starts; the raw
///   client writes the 16 commands with one `write(2)` and reads the 16 replies. 50
///   batches (800 requests) per iteration.
/// - `on its event loop`: the same calls from a task that prefers
///   `RedisStore.taskExecutor` (its child tasks inherit the preference), so the
///   operations cost no thread hop: the path for latency-sensitive callers.
/// - `P16: RedisStore batch write`: the store's own batch call for `-P 16` SETs: one
///   `write(_:)` of 16 sets, their 16 `SET`s and one `PUBLISH` naming the 16 keys in
///   one write, 50 batches per iteration; `requests/s` counts sets. (The raw client's
///   `P16` SET row sends a `PUBLISH` per `SET`, as 16 concurrent `set` calls do.)
/// - `mget 16` and `mget 100`: `entries(for:in:)` of 16 (or 100) keys, one `MGET`,
///   one round trip; 100 (or 20) per iteration, `requests/s` counting MGETs. The
///   script compares `mget 16` with `redis-benchmark` sending `MGET` of 16 keys, and
///   (as keys per second) with `redis-benchmark -P 16` GETs.
/// - The batch calls also run `on its event loop`, as above.

///
/// RedisStore writes with `expiresAt: nil` (no `PX`), as `redis-benchmark` does.
///
/// GET also runs through ``NIOFloorClient`` (`reference bare NIO`): a SwiftNIO client
/// called from tasks that does nothing but hop, write and count reply bytes. It splits
/// RedisStore's distance from the raw client into what the task-plus-event-loop
/// architecture costs and what RedisStore itself adds.
///
/// With `HOARD_REDIS_CLUSTER_URL` (a `redis+cluster://` URL), the same RedisStore rows
/// also run on a Redis Cluster (`redis cluster …`), one connection per node;
/// `Benchmarks/scripts/redis-cluster-vs-redis-benchmark` starts a single server and a
/// cluster, runs `redis-benchmark --cluster` beside this target, and prints the
/// ratios, the cost of routing among them (single-server RedisStore ÷ cluster).
let benchmarks: @Sendable () -> Void = {
    if let clusterURL = ProcessInfo.processInfo.environment["HOARD_REDIS_CLUSTER_URL"], !clusterURL.isEmpty {
        registerStore("redis cluster get 1KiB c1 P1: RedisStore", url: clusterURL) { try await $0.get(count: 200) }
        registerStore("redis cluster set 1KiB c1 P1: RedisStore", url: clusterURL) { try await $0.set(count: 200) }
        registerStore("redis cluster get 1KiB c1 P16: RedisStore", url: clusterURL) {
            try await $0.getPipelined(batches: 50, depth: 16)
        }
        registerStore("redis cluster set 1KiB c1 P16: RedisStore", url: clusterURL) {
            try await $0.setPipelined(batches: 50, depth: 16)
        }
        registerStore("redis cluster mget 16x1KiB c1: RedisStore", url: clusterURL) {
            try await $0.multiGet(count: 100, keys: 16)
        }
    }
    guard let url = ProcessInfo.processInfo.environment["HOARD_REDIS_URL"], !url.isEmpty else {
        print(
            "RedisStoreBenchmarks: skipped, HOARD_REDIS_URL is not set "
                + "(Benchmarks/scripts/redis-vs-redis-benchmark starts a server and sets it).")
        return
    }
    registerStore("redis get 1KiB c1 P1: RedisStore", url: url) { try await $0.get(count: 200) }
    registerRaw("redis get 1KiB c1 P1: baseline raw RESP", url: url, commands: { $0.getCommands() }) {
        try $0.run(count: 200, depth: 1, expected: Fixture.valueSize + 17)
    }
    registerNIO("redis get 1KiB c1 P1: reference bare NIO", url: url) { try await $0.get(count: 200, depth: 1) }
    registerStore("redis set 1KiB c1 P1: RedisStore", url: url) { try await $0.set(count: 200) }
    registerRaw("redis set 1KiB c1 P1: baseline raw RESP", url: url, commands: { $0.setCommands() }) {
        try $0.run(count: 200, depth: 1, repliesPerCommand: 2, expected: 0)
    }
    registerStore("redis get 1KiB c1 P1: RedisStore on its event loop", url: url) { subject in
        try await withTaskExecutorPreference(subject.store.taskExecutor) { try await subject.get(count: 200) }
    }
    registerStore("redis set 1KiB c1 P1: RedisStore on its event loop", url: url) { subject in
        try await withTaskExecutorPreference(subject.store.taskExecutor) { try await subject.set(count: 200) }
    }
    registerStore("redis get 1KiB c1 P16: RedisStore on its event loop", url: url) { subject in
        try await withTaskExecutorPreference(subject.store.taskExecutor) {
            try await subject.getPipelined(batches: 50, depth: 16)
        }
    }
    registerStore("redis set 1KiB c1 P16: RedisStore on its event loop", url: url) { subject in
        try await withTaskExecutorPreference(subject.store.taskExecutor) {
            try await subject.setPipelined(batches: 50, depth: 16)
        }
    }
    registerStore("redis set 1KiB c1 P16: RedisStore batch write", url: url) {
        try await $0.setBatched(batches: 50, depth: 16)
    }
    registerStore("redis set 1KiB c1 P16: RedisStore batch write on its event loop", url: url) { subject in
        try await withTaskExecutorPreference(subject.store.taskExecutor) {
            try await subject.setBatched(batches: 50, depth: 16)
        }
    }
    registerStore("redis get 1KiB c1 P16: RedisStore", url: url) { try await $0.getPipelined(batches: 50, depth: 16) }
    registerRaw("redis get 1KiB c1 P16: baseline raw RESP", url: url, commands: { $0.getCommands() }) {
        try $0.run(count: 800, depth: 16, expected: Fixture.valueSize + 17)
    }
    registerNIO("redis get 1KiB c1 P16: reference bare NIO", url: url) { try await $0.get(count: 800, depth: 16) }
    registerStore("redis set 1KiB c1 P16: RedisStore", url: url) { try await $0.setPipelined(batches: 50, depth: 16) }
    registerRaw("redis set 1KiB c1 P16: baseline raw RESP", url: url, commands: { $0.setCommands() }) {
        try $0.run(count: 800, depth: 16, repliesPerCommand: 2, expected: 0)
    }
    registerStore("redis mget 16x1KiB c1: RedisStore", url: url) { try await $0.multiGet(count: 100, keys: 16) }
    registerStore("redis mget 16x1KiB c1: RedisStore on its event loop", url: url) { subject in
        try await withTaskExecutorPreference(subject.store.taskExecutor) {
            try await subject.multiGet(count: 100, keys: 16)
        }
    }
    registerRaw("redis mget 16x1KiB c1: baseline raw RESP", url: url, commands: { $0.mgetCommands(count: 16) }) {
        try $0.run(count: 100, depth: 1, expected: 16 * (Fixture.valueSize + 17))
    }
    registerStore("redis mget 100x1KiB c1: RedisStore", url: url) { try await $0.multiGet(count: 20, keys: 100) }
    registerRaw("redis mget 100x1KiB c1: baseline raw RESP", url: url, commands: { $0.mgetCommands(count: 100) }) {
        try $0.run(count: 20, depth: 1, expected: 100 * (Fixture.valueSize + 17))
    }
}

/// Commands per second in one iteration; its median is the throughput to quote.
let requestsPerSecond = BenchmarkMetric.custom("requests/s", polarity: .prefersLarger, useScalingFactor: false)

private func configuration() -> Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .mallocCountTotal, requestsPerSecond],
        warmupIterations: 5,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 100_000
    )
}

private func record(_ benchmark: Benchmark, requests: Int, since start: ContinuousClock.Instant) {
    let elapsed = (ContinuousClock.now - start).components
    let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    benchmark.measurement(requestsPerSecond, Int((Double(requests) / seconds).rounded()))
}

/// Hands state from a benchmark's setup to its teardown.
final class Holder<T> {
    var value: T?
}

// MARK: RedisStore

/// A populated store on one connection, and where in the keys it is.
final class StoreSubject {
    let fixture: Fixture
    let store: RedisStore
    private var position = 0

    init(fixture: Fixture, store: RedisStore) {
        self.fixture = fixture
        self.store = store
    }

    private func nextKey() -> String {
        let key = fixture.keys[position]
        position = position + 1 == fixture.keys.count ? 0 : position + 1
        return key
    }

    /// `count` reads, one after the other. Returns the requests made.
    func get(count: Int) async throws -> Int {
        for _ in 0..<count {
            guard try await store.entry(for: nextKey(), in: Fixture.namespace)?.data.count == Fixture.valueSize else {
                throw BenchmarkFailure("RedisStore: a GET missed")
            }
        }
        return count
    }

    /// `count` writes, one after the other.
    func set(count: Int) async throws -> Int {
        for _ in 0..<count {
            try await store.set(fixture.value, for: nextKey(), in: Fixture.namespace, storedAt: .now, expiresAt: nil)
        }
        return count
    }

    /// `batches` times: `depth` concurrent reads, all awaited.
    func getPipelined(batches: Int, depth: Int) async throws -> Int {
        let store = self.store
        for _ in 0..<batches {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<depth {
                    let key = nextKey()
                    group.addTask { try await store.entry(for: key, in: Fixture.namespace)?.data.count ?? -1 }
                }
                for try await size in group where size != Fixture.valueSize {
                    throw BenchmarkFailure("RedisStore: a pipelined GET missed")
                }
            }
        }
        return batches * depth
    }

    /// `batches` times: `depth` concurrent writes, all awaited.
    func setPipelined(batches: Int, depth: Int) async throws -> Int {
        let store = self.store
        let value = fixture.value
        for _ in 0..<batches {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<depth {
                    let key = nextKey()
                    group.addTask {
                        try await store.set(value, for: key, in: Fixture.namespace, storedAt: .now, expiresAt: nil)
                    }
                }
                try await group.waitForAll()
            }
        }
        return batches * depth
    }

    /// `batches` times: one `write(_:)` of `depth` sets, one round trip.
    func setBatched(batches: Int, depth: Int) async throws -> Int {
        for _ in 0..<batches {
            var batch: [CacheStoreWrite] = []
            batch.reserveCapacity(depth)
            for _ in 0..<depth {
                batch.append(.set(fixture.value, for: nextKey(), in: Fixture.namespace, storedAt: .now, expiresAt: nil))
            }
            try await store.write(batch)
        }
        return batches * depth
    }

    /// `count` multi-gets of `keys` keys each (the next ones in turn), each one `MGET`.
    func multiGet(count: Int, keys: Int) async throws -> Int {
        var batch: [String] = []
        batch.reserveCapacity(keys)
        for _ in 0..<count {
            batch.removeAll(keepingCapacity: true)
            for _ in 0..<keys { batch.append(nextKey()) }
            let found = try await store.entries(for: batch, in: Fixture.namespace)
            guard found.count == keys else { throw BenchmarkFailure("RedisStore: an MGET missed") }
        }
        return count
    }
}

private func registerStore(_ name: String, url: String, run: @escaping (StoreSubject) async throws -> Int) {
    let held = Holder<StoreSubject>()
    Benchmark(
        name,
        configuration: configuration(),
        closure: { (benchmark: Benchmark, subject: StoreSubject) async throws in
            let start = ContinuousClock.now
            let requests = try await run(subject)
            record(benchmark, requests: requests, since: start)
        },
        setup: {
            let fixture = try Fixture(url: url)
            let store = try fixture.makeStore()
            try await fixture.populate(store)
            let subject = StoreSubject(fixture: fixture, store: store)
            held.value = subject
            return subject
        },
        teardown: {
            if let subject = held.value { try await subject.fixture.cleanUp(subject.store) }
            held.value = nil
        }
    )
}

// MARK: Raw RESP baseline

/// A raw client, the commands it sends, and where in them it is.
final class RawSubject {
    let client: RawRESPClient
    let commands: [[UInt8]]
    private var position = 0

    init(client: RawRESPClient, commands: [[UInt8]]) {
        self.client = client
        self.commands = commands
    }

    /// `count` commands, `depth` at a time written in one `write(2)`, then their
    /// replies read; every reply must carry `expected` payload bytes.
    func run(count: Int, depth: Int, repliesPerCommand: Int = 1, expected: Int) throws -> Int {
        var batch: [UInt8] = []
        for _ in 0..<(count / depth) {
            batch.removeAll(keepingCapacity: true)
            for _ in 0..<depth {
                batch += commands[position]
                position = position + 1 == commands.count ? 0 : position + 1
            }
            try client.write(batch)
            for _ in 0..<(depth * repliesPerCommand) {
                guard try client.readReply() == expected else { throw BenchmarkFailure("raw client: a reply missed") }
            }
        }
        return count
    }
}

private func registerRaw(
    _ name: String, url: String, commands: @escaping (Fixture) -> [[UInt8]], run: @escaping (RawSubject) throws -> Int
) {
    let held = Holder<(Fixture, RedisStore)>()
    Benchmark(
        name,
        configuration: configuration(),
        closure: { (benchmark: Benchmark, subject: RawSubject) throws in
            let start = ContinuousClock.now
            let requests = try run(subject)
            record(benchmark, requests: requests, since: start)
        },
        setup: {
            let fixture = try Fixture(url: url)
            let store = try fixture.makeStore()
            try await fixture.populate(store)
            held.value = (fixture, store)
            return RawSubject(client: try fixture.makeRawClient(), commands: commands(fixture))
        },
        teardown: {
            if let (fixture, store) = held.value { try await fixture.cleanUp(store) }
            held.value = nil
        }
    )
}

// MARK: Bare SwiftNIO reference

/// A bare NIO client, the GET commands it sends, and where in them it is.
final class NIOSubject {
    let client: NIOFloorClient
    let commands: [ByteBuffer]
    let replyLength: Int
    private var position = 0

    init(client: NIOFloorClient, commands: [ByteBuffer], replyLength: Int) {
        self.client = client
        self.commands = commands
        self.replyLength = replyLength
    }

    private func nextCommand() -> ByteBuffer {
        let command = commands[position]
        position = position + 1 == commands.count ? 0 : position + 1
        return command
    }

    /// `count` GETs, `depth` concurrent tasks at a time (one after the other for 1).
    func get(count: Int, depth: Int) async throws -> Int {
        let client = self.client
        let replyLength = self.replyLength
        for _ in 0..<(count / depth) {
            if depth == 1 {
                try await client.send(nextCommand(), replyLength: replyLength)
                continue
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<depth {
                    let command = nextCommand()
                    group.addTask { try await client.send(command, replyLength: replyLength) }
                }
                try await group.waitForAll()
            }
        }
        return count
    }
}

private func registerNIO(_ name: String, url: String, run: @escaping (NIOSubject) async throws -> Int) {
    let held = Holder<(Fixture, RedisStore, NIOFloorClient)>()
    Benchmark(
        name,
        configuration: configuration(),
        closure: { (benchmark: Benchmark, subject: NIOSubject) async throws in
            let start = ContinuousClock.now
            let requests = try await run(subject)
            record(benchmark, requests: requests, since: start)
        },
        setup: {
            let fixture = try Fixture(url: url)
            let store = try fixture.makeStore()
            try await fixture.populate(store)
            let client = try await NIOFloorClient.connect(
                host: fixture.configuration.host, port: fixture.configuration.port)
            held.value = (fixture, store, client)
            // A GET reply: "$1041\r\n", the stored value, "\r\n".
            let valueLength = Fixture.valueSize + 17
            return NIOSubject(
                client: client, commands: fixture.getCommands().map { ByteBuffer(bytes: $0) },
                replyLength: "$\(valueLength)\r\n".utf8.count + valueLength + 2)
        },
        teardown: {
            if let (fixture, store, client) = held.value {
                await client.close()
                try await fixture.cleanUp(store)
            }
            held.value = nil
        }
    )
}
