import Foundation
import HoardRedis

/// A benchmark that cannot go on: the server is away or answered something else.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What every Redis benchmark shares: the server, the keys, the 1 KiB value, and the
/// exact bytes RedisStore puts on the wire for them, so the raw baseline sends the
/// same commands.
struct Fixture: Sendable {
    /// How many distinct keys the benchmarks cycle through.
    static let keyCount = 1_000
    /// The size of a cached value, as `redis-benchmark -d 1024`.
    static let valueSize = 1_024
    /// The namespace every benchmark key lives in.
    static let namespace = "bench"

    let configuration: RedisStore.Configuration
    let keys: [String]
    let value: Data

    init(url: String) throws {
        var configuration = try RedisStore.Configuration(url: url)
        configuration.keyPrefix = "hoard-bench-\(UUID().uuidString.prefix(8))"
        // One connection, as `redis-benchmark -c 1`; room for 16 pipelined operations.
        configuration.maximumConnections = 1
        configuration.pipeliningLimit = 64
        self.configuration = configuration
        keys = (0..<Self.keyCount).map { "key-\($0)" }
        value = Data((0..<Self.valueSize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    }

    func makeStore() throws -> RedisStore { try RedisStore(configuration: configuration) }

    func makeRawClient() throws -> RawRESPClient {
        try RawRESPClient(host: configuration.host, port: configuration.port)
    }

    /// Writes every key through a store, so that GET and MGET always hit.
    func populate(_ store: RedisStore) async throws {
        for start in stride(from: 0, to: keys.count, by: 100) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for key in keys[start..<min(start + 100, keys.count)] {
                    group.addTask {
                        try await store.set(value, for: key, in: Self.namespace, storedAt: .now, expiresAt: nil)
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Removes the benchmark's keys and closes the store.
    func cleanUp(_ store: RedisStore) async throws {
        try await store.removeAll(in: Self.namespace)
        await store.shutdown()
    }

    // MARK: Wire bytes, as RedisStore encodes them (see RedisStore's documentation)

    /// `<prefix>:<namespace byte count>:<namespace>:<key>`.
    func redisKey(_ key: String) -> [UInt8] {
        Array("\(configuration.keyPrefix):\(Self.namespace.utf8.count):\(Self.namespace):\(key)".utf8)
    }

    /// The stored value: version 1, `storedAt` as big-endian milliseconds, "never"
    /// (`Int64.min`) as `expiresAt`, then the bytes.
    func storedValue() -> [UInt8] {
        var bytes: [UInt8] = [1]
        let milliseconds = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        withUnsafeBytes(of: milliseconds.bigEndian) { bytes += $0 }
        withUnsafeBytes(of: Int64.min.bigEndian) { bytes += $0 }
        return bytes + value
    }

    /// `GET key` for each key.
    func getCommands() -> [[UInt8]] {
        keys.map { Self.command([Array("GET".utf8), redisKey($0)]) }
    }

    /// What one `RedisStore.set` sends in one write: `SET key value` and the
    /// invalidation `PUBLISH <prefix>:invalidate:<n>:<namespace> "<instance> k<key>"`.
    func setCommands() -> [[UInt8]] {
        let channel = Array("\(configuration.keyPrefix):invalidate:\(Self.namespace.utf8.count):\(Self.namespace)".utf8)
        let instance = UUID().uuidString
        let value = storedValue()
        return keys.map { key in
            Self.command([Array("SET".utf8), redisKey(key), value])
                + Self.command([Array("PUBLISH".utf8), channel, Array("\(instance) k\(key)".utf8)])
        }
    }

    /// `MGET` of `count` consecutive keys starting at each multiple of `count`.
    func mgetCommands(count: Int) -> [[UInt8]] {
        stride(from: 0, to: keys.count - count + 1, by: count).map { start in
            Self.command([Array("MGET".utf8)] + keys[start..<start + count].map(redisKey))
        }
    }

    /// A RESP array of bulk strings.
    static func command(_ arguments: [[UInt8]]) -> [UInt8] {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.count)\r\n".utf8)
            bytes += argument
            bytes += [0x0D, 0x0A]
        }
        return bytes
    }
}
