#if Redis || Postgres
import Foundation
import Hoard
import Synchronization

/// A `HoardRemoteWriter` child process: a Cache on a remote store in a process of
/// its own, driven line by line, for the two-process invalidation tests of the Redis
/// and PostgreSQL stores.
///
/// Its stdout is read on a thread of its own (blocking reads stay off the
/// cooperative pool); ``nextLine(timeout:)`` waits for a line for a bounded time.
public final class RemoteWriterProcess: Sendable {
    /// Why the child could not be started or did not answer.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    private enum Answer: Sendable {
        case line(String)
        case exited
        case timedOut
    }

    private struct Lines {
        var buffered: [String] = []
        var isFinished = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Answer, Never>)?
        var nextWaiterID: UInt64 = 0
    }

    private let process: Process
    private let input: FileHandle
    private let lines = Mutex(Lines())
    private let errors: Pipe

    /// Starts `HoardRemoteWriter URL NAME [TABLE]` and waits for its `ready` line.
    public init(url: String, cacheName: String, table: String?, timeout: Duration = .seconds(60)) async throws {
        process = Process()
        process.executableURL = try Self.executable()
        process.arguments = [url, cacheName] + (table.map { [$0] } ?? [])
        let stdin = Pipe()
        let stdout = Pipe()
        errors = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = errors
        input = stdin.fileHandleForWriting
        try process.run()
        let reader = Thread { [self] in
            var buffer = Data()
            let handle = stdout.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    deliver(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            deliver(nil)
        }
        reader.start()
        let first = try await nextLine(timeout: timeout)
        guard first == "ready" else { throw Failure("HoardRemoteWriter answered \(first) instead of ready") }
    }

    /// Sends one command line and waits for its answer line.
    @discardableResult
    public func send(_ command: String, timeout: Duration = .seconds(60)) async throws -> String {
        input.write(Data((command + "\n").utf8))
        return try await nextLine(timeout: timeout)
    }

    /// The next line of the child's stdout, waited for at most `timeout`.
    public func nextLine(timeout: Duration) async throws -> String {
        let answer = await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
            let waiterID = lines.withLock { lines -> UInt64? in
                if !lines.buffered.isEmpty {
                    continuation.resume(returning: .line(lines.buffered.removeFirst()))
                    return nil
                }
                if lines.isFinished {
                    continuation.resume(returning: .exited)
                    return nil
                }
                let id = lines.nextWaiterID
                lines.nextWaiterID += 1
                lines.waiter = (id, continuation)
                return id
            }
            guard let waiterID else { return }
            Task { [self] in
                try? await Task.sleep(for: timeout)
                let expired = lines.withLock { lines -> CheckedContinuation<Answer, Never>? in
                    guard let waiter = lines.waiter, waiter.id == waiterID else { return nil }
                    lines.waiter = nil
                    return waiter.continuation
                }
                expired?.resume(returning: .timedOut)
            }
        }
        switch answer {
        case .line(let line): return line
        case .exited: throw Failure("HoardRemoteWriter exited: \(standardError())")
        case .timedOut: throw Failure("HoardRemoteWriter did not answer within \(timeout)")
        }
    }

    /// Hands a line (`nil`: end of output) to the waiting reader, or buffers it.
    private func deliver(_ line: String?) {
        let waiter = lines.withLock { lines -> CheckedContinuation<Answer, Never>? in
            guard let waiter = lines.waiter else {
                if let line { lines.buffered.append(line) } else { lines.isFinished = true }
                return nil
            }
            lines.waiter = nil
            if line == nil { lines.isFinished = true }
            return waiter.continuation
        }
        waiter?.resume(returning: line.map { .line($0) } ?? .exited)
    }

    /// Asks the child to quit and waits for it; kills it if it does not.
    public func stop() async {
        input.write(Data("quit\n".utf8))
        let process = self.process
        let exited = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiter = Thread {
                let deadline = Date().addingTimeInterval(30)
                while process.isRunning, Date() < deadline { usleep(10_000) }
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus == 0)
            }
            waiter.start()
        }
        _ = exited
    }

    private func standardError() -> String {
        String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
    }

    private static func executable() throws -> URL {
        var candidates: [URL] = []
        let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        candidates.append(argument0.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles { candidates.append(bundle.bundleURL.deletingLastPathComponent()) }
        for directory in candidates {
            let url = directory.appendingPathComponent("HoardRemoteWriter")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw Failure("HoardRemoteWriter not found next to the tests (looked in \(candidates.map(\.path)))")
    }
}

/// Waits for the first event of `events` that `matches`, for at most `timeout`;
/// `nil` when none came in time.
public func firstEvent<Key: Hashable & Sendable>(
    in events: AsyncStream<CacheEvent<Key>>, timeout: Duration = .seconds(30),
    where matches: @escaping @Sendable (CacheEvent<Key>) -> Bool
) async -> CacheEvent<Key>? {
    await withTaskGroup(of: CacheEvent<Key>?.self) { group in
        group.addTask {
            for await event in events where matches(event) { return event }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
#endif
