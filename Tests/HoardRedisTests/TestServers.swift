#if Redis
import Foundation
import Hoard
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HoardRemoteTestSupport
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
    static func configuration(prefix: String = "hoard-test-\(UUID().uuidString.prefix(8))") throws
        -> RedisStore.Configuration
    {
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

    /// Starts a server on a free port. A port another process takes between
    /// `freePort()` and the server's bind (tests open listeners and connections
    /// in parallel) makes the server exit; another port is tried then, up to
    /// five times.
    init(arguments: [String] = []) async throws {
        self.arguments = arguments
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var launched: (port: Int, process: Process)?
        for _ in 0..<5 {
            let candidate = try await freePort()
            if let process = try await Self.launch(port: candidate, arguments: arguments, directory: directory) {
                launched = (candidate, process)
                break
            }
        }
        guard let launched else {
            try? FileManager.default.removeItem(at: directory)
            throw RedisError(.connectionFailed, "redis-server could not listen on any of five free ports")
        }
        port = launched.port
        process.withLock { $0 = launched.process }
    }

    /// Starts the server again on its port and returns once it accepts connections.
    func start() async throws {
        guard let process = try await Self.launch(port: port, arguments: arguments, directory: directory) else {
            throw RedisError(.connectionFailed, "redis-server could not listen on port \(port) again: it is taken")
        }
        self.process.withLock { $0 = process }
    }

    /// Runs redis-server on `port` and returns it once its own log says it accepts
    /// connections; `nil` when it exited first (the port was taken).
    ///
    /// Its log, not a connection to the port, says when it is ready: a connection
    /// could reach another process's listener on a port taken meanwhile.
    private static func launch(port: Int, arguments: [String], directory: URL) async throws -> Process? {
        let log = directory.appendingPathComponent("redis-\(UUID().uuidString).log")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable!)
        process.arguments =
            [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", directory.path, "--logfile", log.path,
            ]
            + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let settled = await eventually(timeout: .seconds(60)) {
            !process.isRunning
                || ((try? String(contentsOf: log, encoding: .utf8))?.contains("Ready to accept connections") ?? false)
        }
        if !process.isRunning { return nil }
        guard settled else {
            // Never leave a server behind, also when the test was cancelled.
            kill(process.processIdentifier, SIGKILL)
            _ = await eventually(timeout: .seconds(60), every: .milliseconds(10)) { !process.isRunning }
            throw RedisError(.connectionFailed, "redis-server did not start on port \(port)")
        }
        return process
    }

    /// Kills the server (SIGKILL: the test process blocks SIGTERM, and its children
    /// inherit that) and returns once it has exited.
    func stop() async throws {
        guard let process = self.process.withLock({ $0 }) else { return }
        kill(process.processIdentifier, SIGKILL)
        self.process.withLock { $0 = nil }
        _ = await eventually(timeout: .seconds(60), every: .milliseconds(10)) { !process.isRunning }
    }

    /// Freezes the server (SIGSTOP): it answers nothing, while the kernel keeps its
    /// connections open and still accepts new ones, as with a server that hangs or a
    /// network path that drops packets without resetting connections.
    func freeze() throws {
        try signal(SIGSTOP, "SIGSTOP")
    }

    /// Lets a server frozen by ``freeze()`` run again (SIGCONT).
    func thaw() throws {
        try signal(SIGCONT, "SIGCONT")
    }

    private func signal(_ signal: Int32, _ name: String) throws {
        guard let process = self.process.withLock({ $0 }) else {
            throw RedisError(.connectionFailed, "redis-server on port \(port) is not running: no \(name) sent")
        }
        guard kill(process.processIdentifier, signal) == 0 else {
            throw RedisError(.connectionFailed, "\(name) to redis-server on port \(port) failed: errno \(errno)")
        }
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
#endif
