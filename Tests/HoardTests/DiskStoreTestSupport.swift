import Foundation
import Hoard
import Synchronization
import Testing

/// Every DiskStore suite, nested so that they run one test at a time. They are
/// I/O-bound and start child processes; run side by side they would hold every
/// thread of the cooperative pool (two on a two-core machine) for seconds and
/// starve the suites that await streams.
@Suite("DiskStore", .serialized)
enum DiskStoreSuites {}

/// Helpers shared by the disk store's tests: a fresh temporary directory per test,
/// an event recorder, and the `HoardCrashWriter` child process.
enum DiskTest {
    /// A path for a new store that does not exist yet, in a fresh parent directory.
    /// The parent is removed when `body` returns.
    static func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
        let parent = try makeParent()
        defer { removeTree(parent) }
        return try body(parent.appendingPathComponent("store", isDirectory: true))
    }

    /// The `async` form of ``withTemporaryDirectory(_:)``.
    static func withTemporaryDirectory<R>(_ body: (URL) async throws -> R) async throws -> R {
        let parent = try makeParent()
        defer { removeTree(parent) }
        return try await body(parent.appendingPathComponent("store", isDirectory: true))
    }

    /// Writes a 10-byte entry for each of `keys` in namespace `ns` of the store at
    /// `url`, in order, `clock` advancing 10 seconds after each; then reads
    /// `reading`, if given, and closes the store (writing the read's access time).
    static func writeInOrder(_ keys: [String], at url: URL, clock: ManualClock, reading: String? = nil) throws {
        let store = try DiskStore(directory: url, clock: clock)
        for key in keys {
            try store.set(Data(count: 10), for: key, in: "ns", storedAt: clock.now(), expiresAt: nil)
            clock.advance(by: 10)
        }
        if let reading { #expect(try store.entry(for: reading, in: "ns") != nil) }
    }

    private static func makeParent() throws -> URL {
        let parent = FileManager.default.temporaryDirectory
            .appendingPathComponent("hoard-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        return parent
    }

    /// Removes a directory tree, restoring write permission first where a test took
    /// it away.
    static func removeTree(_ url: URL) {
        if let enumerator = FileManager.default.enumerator(atPath: url.path) {
            for case let name as String in enumerator {
                _ = chmod(url.appendingPathComponent(name).path, 0o700)
            }
        }
        try? FileManager.default.removeItem(at: url)
    }

    /// Every file and directory under `url`, relative paths, sorted.
    static func tree(_ url: URL) -> [String] {
        (FileManager.default.enumerator(atPath: url.path)?.allObjects as? [String] ?? []).sorted()
    }

    /// The POSIX permission bits of a path.
    static func mode(_ url: URL) -> Int {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return -1 }
        return Int(info.st_mode & 0o777)
    }

    /// The names in the store's `blobs/` directory.
    static func blobFiles(_ store: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: store.appendingPathComponent("blobs").path)) ?? [])
            .sorted()
    }

    /// Bytes of a given size whose content depends on `seed`.
    static func bytes(_ count: Int, seed: Int = 0) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ 1) })
    }

    /// A value that names its key and write, with filler derived from both (the
    /// same format `HoardCrashWriter` writes), so a reader can tell an intact value
    /// of the right key from any other bytes.
    static let filler: [UInt8] = {
        // A 4 KiB block, doubled up to 1 MiB + 256 bytes: cheap even in a debug build.
        var bytes = [UInt8](repeating: 0, count: 4_096)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 131 &+ (i >> 9)) }
        while bytes.count < (1 << 20) + 256 { bytes += bytes }
        return bytes
    }()

    static func payload(key: String, sequence: Int, size: Int) -> Data {
        var data = Data("HOARD|\(key)|\(sequence)|\(size)|".utf8)
        let header = data.count
        if size > header {
            let offset = (sequence &* 7) & 255
            filler.withUnsafeBufferPointer { data.append(contentsOf: $0[offset..<(offset + size - header)]) }
        }
        return data
    }

    /// The write sequence of an intact value for `key`, or `nil` for any other bytes.
    static func check(_ data: Data, key: String) -> Int? {
        let bytes = [UInt8](data)
        var fields: [String] = []
        var start = 0
        var index = 0
        while fields.count < 4, index < bytes.count {
            if bytes[index] == UInt8(ascii: "|") {
                fields.append(String(decoding: bytes[start..<index], as: UTF8.self))
                start = index + 1
            }
            index += 1
        }
        guard fields.count == 4, fields[0] == "HOARD", fields[1] == key,
            let sequence = Int(fields[2]), let size = Int(fields[3])
        else { return nil }
        return payload(key: key, sequence: sequence, size: size) == data ? sequence : nil
    }

    // MARK: Child process

    /// The `HoardCrashWriter` executable, built next to the test bundle.
    static func childExecutable() throws -> URL {
        try executable(named: "HoardCrashWriter")
    }

    /// An executable of this package, built next to the test bundle.
    static func executable(named executableName: String) throws -> URL {
        var candidates: [URL] = []
        let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        candidates.append(argument0.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let url = directory.appendingPathComponent(executableName)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw ChildError("\(executableName) not found next to the tests (looked in \(candidates.map(\.path)))")
    }

    final class ErrorOutput: Sendable {
        let data = Mutex(Data())
    }

    struct ChildError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs the child to completion and returns its stdout lines.
    static func runChild(_ arguments: [String]) throws -> (status: Int32, lines: [String]) {
        let (status, output, _) = try run(childExecutable(), arguments)
        return (status, output.split(separator: "\n").map(String.init))
    }

    /// Runs an executable to completion and returns its status, stdout and stderr.
    /// With `input`, its standard input is those bytes, then end of file.
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil
    ) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = executable
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let inputPipe = input.map { _ in Pipe() }
        if let inputPipe { process.standardInput = inputPipe }
        try process.run()
        if let inputPipe, let input {
            // Small inputs only: a pipe buffers 64 KiB, so this write never blocks.
            inputPipe.fileHandleForWriting.write(input)
            try inputPipe.fileHandleForWriting.close()
        }
        // Stderr on another thread, so that neither pipe fills while the other is read.
        let errorData = ErrorOutput()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            errorData.data.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() }
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        group.wait()
        return (
            process.terminationStatus, String(decoding: data, as: UTF8.self),
            String(decoding: errorData.data.withLock { $0 }, as: UTF8.self)
        )
    }

    /// Runs blocking work on its own thread, so that tests waiting on child
    /// processes do not hold one of the few cooperative threads.
    static func onThread<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try work() })
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
    }
}

extension DiskTest {
    /// Runs `work(0)`, `work(1)`, … `work(count - 1)` at once, each on its own
    /// thread, and returns their results in order. Blocking I/O stays off the
    /// cooperative pool, which other suites need to make progress.
    static func onThreads<R: Sendable>(_ count: Int, _ work: @escaping @Sendable (Int) -> R) async throws -> [R] {
        try await withThrowingTaskGroup(of: (Int, R).self) { group in
            for i in 0..<count {
                group.addTask { (i, try await onThread { work(i) }) }
            }
            var results: [(Int, R)] = []
            for try await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}

/// Collects a store's events through its configuration's handler.
final class EventRecorder: Sendable {
    private let events = Mutex<[DiskStoreEvent]>([])

    /// The handler to put in ``DiskStore/Configuration/onEvent``.
    var handler: @Sendable (DiskStoreEvent) -> Void {
        { [self] event in events.withLock { $0.append(event) } }
    }

    /// Every event so far.
    var all: [DiskStoreEvent] { events.withLock { $0 } }

    /// The damage reported by reads so far.
    var damage: [StoreDamage] {
        all.compactMap { if case .removedDamaged(let damage) = $0 { damage } else { nil } }
    }

    /// The intact values typed reads could not decode so far (kept in place).
    var undecodable: [StoreDamage] {
        all.compactMap { if case .undecodable(let damage) = $0 { damage } else { nil } }
    }

    /// The failures reported so far.
    var failures: [String] {
        all.compactMap {
            if case .failed(let operation, _, _, let error) = $0 { "\(operation): \(error)" } else { nil }
        }
    }
}
