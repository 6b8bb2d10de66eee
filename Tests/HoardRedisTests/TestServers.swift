import Foundation
import Hoard
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HoardRedis

/// The Redis server the server tests use: the one `HOARD_REDIS_URL` names.
///
/// `scripts/test` starts a throwaway server and sets the variable. Without it the
/// tests that need a server are skipped, and say how to run them.
enum RedisTestServer {
    static let url = ProcessInfo.processInfo.environment["HOARD_REDIS_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// Whether a server was given.
    static var isAvailable: Bool { url != nil }

    /// A configuration for the server with a prefix no other test uses.
    static func configuration(prefix: String = "hoard-test-\(UUID().uuidString.prefix(8))") throws -> RedisStore.Configuration {
        var configuration = try RedisStore.Configuration(url: url ?? "redis://127.0.0.1:6379/0")
        configuration.keyPrefix = prefix
        return configuration
    }
}

/// A redis-server child process of the test, on a free loopback port, that a test
/// may stop and start again.
final class RedisChildServer: Sendable {
    /// The redis-server executable: `HOARD_REDIS_SERVER`, or the first on `PATH`.
    static let executable: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["HOARD_REDIS_SERVER"], FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        for directory in (environment["PATH"] ?? "/usr/bin:/usr/local/bin").split(separator: ":") {
            let path = "\(directory)/redis-server"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    static var isAvailable: Bool { executable != nil }

    let port: Int
    private let arguments: [String]
    private let process = Mutex<Process?>(nil)
    private let directory: URL

    init(arguments: [String] = []) async throws {
        port = try await freePort()
        self.arguments = arguments
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await start()
    }

    /// Starts the server and returns once it accepts connections.
    func start() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable!)
        process.arguments =
            ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", directory.path]
            + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process.withLock { $0 = process }
        let started = await eventually(timeout: .seconds(60)) {
            guard let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            else { return false }
            channel.close(promise: nil)
            return true
        }
        guard started else {
            // Never leave a server behind, also when the test was cancelled.
            try? await stop()
            throw RedisError(.connectionFailed, "redis-server did not start on port \(port)")
        }
    }

    /// Kills the server (SIGKILL: the test process blocks SIGTERM, and its children
    /// inherit that) and returns once it has exited.
    func stop() async throws {
        guard let process = self.process.withLock({ $0 }) else { return }
        kill(process.processIdentifier, SIGKILL)
        self.process.withLock { $0 = nil }
        _ = await eventually(timeout: .seconds(60), every: .milliseconds(10)) { !process.isRunning }
    }

    /// Stops the server and removes its directory.
    func shutdown() async {
        try? await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` with a new server, and stops the server afterwards, also when
    /// `body` throws.
    static func with<T>(arguments: [String] = [], _ body: (RedisChildServer) async throws -> T) async throws -> T {
        let server = try await RedisChildServer(arguments: arguments)
        do {
            let result = try await body(server)
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }

    func configuration(prefix: String = "child") -> RedisStore.Configuration {
        RedisStore.Configuration(port: port, keyPrefix: prefix)
    }
}

/// A TCP server on a loopback port that accepts connections, reads and never answers;
/// or, with `closesAtOnce`, closes every connection as soon as it has accepted it.
/// It counts the connections it accepted.
final class SilentServer: Sendable {
    let channel: any Channel
    private let acceptedCount: Locked<Int>
    var port: Int { channel.localAddress!.port! }

    /// How many connections the server has accepted so far.
    var accepted: Int { acceptedCount.withLock { $0 } }

    init(closesAtOnce: Bool = false) async throws {
        let acceptedCount = Locked(0)
        self.acceptedCount = acceptedCount
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                acceptedCount.withLock { $0 += 1 }
                if closesAtOnce { child.close(promise: nil) }
                return child.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// A port nothing listens on right now.
func freePort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress!.port!
    try await channel.close()
    return port
}

/// Watches every command the server receives (`MONITOR`), keeping those that
/// mention `marker`.
final class CommandMonitor: Sendable {
    private let lines = Locked<[String]>([])
    private let connection: _RedisConnection

    init(configuration: RedisStore.Configuration, marker: String) async throws {
        let lines = self.lines
        connection = try await _RedisConnection.connect(
            settings: configuration.connectionSettings, group: MultiThreadedEventLoopGroup.singleton,
            onPush: { value in
                if case .simpleString(let line) = value, line.contains(marker) {
                    lines.withLock { $0.append(line) }
                }
            })
        let reply = try await connection.send(_RedisCommand("MONITOR"))
        #expect(reply == .simpleString("OK"))
    }

    /// The commands seen so far that mention the marker, as MONITOR prints them
    /// (`1700000000.123456 [0 127.0.0.1:50000] "MGET" "…"`).
    var seen: [String] { lines.withLock { $0 } }

    func close() { connection.close() }
}

/// Polls `condition` until it holds, or until `timeout` has passed and it has been
/// polled `timeout / interval` times.
///
/// Counting polls as well as time keeps a test from failing on a machine so busy that
/// its tasks do not run for a while (a long synchronous test can hold every thread of
/// the concurrency pool): the time runs out only while the polls get to run.
func eventually(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    let minimumPolls = Int(timeout / interval)
    var polls = 0
    while ContinuousClock.now < deadline || polls < minimumPolls {
        if try await condition() { return true }
        polls += 1
        if Task.isCancelled { return false }
        try? await Task.sleep(for: interval)
    }
    return false
}

/// Collects what an invalidation stream yields, so tests can poll it.
final class InvalidationRecorder: Sendable {
    private let received = Locked<[RemoteInvalidation]>([])
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<RemoteInvalidation>) {
        let received = self.received
        task = Task {
            for await invalidation in stream { received.withLock { $0.append(invalidation) } }
        }
    }

    /// Everything received so far, in order.
    var all: [RemoteInvalidation] { received.withLock { $0 } }

    /// Waits until at least `count` invalidations arrived; returns them all.
    func wait(forCount count: Int, timeout: Duration = .seconds(30)) async -> [RemoteInvalidation] {
        _ = await eventually(timeout: timeout) { self.all.count >= count }
        return all
    }

    func cancel() { task.cancel() }
}

/// A value behind a `Mutex`, shareable between closures.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}

/// The outcome of an operation that throws ``RedisError``, as a value.
func outcome<T: Sendable>(_ body: () async throws(RedisError) -> T) async -> Result<T, RedisError> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
