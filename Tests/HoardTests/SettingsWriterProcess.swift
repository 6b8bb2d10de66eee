import Foundation
import Testing

/// A `HoardSettingsWriter` child process: it opens a settings namespace, says
/// "ready", waits for the signal to start on its standard input, writes its keys
/// and says "done".
///
/// Its pipes are made close-on-exec, so that no other child started meanwhile
/// inherits them (a writer's standard input held open by another child would never
/// end, nor would its output).
final class SettingsWriterProcess {
    private let process = Process()
    private let input: FileHandle
    private let output: FileHandle
    private let errors: FileHandle
    /// What the child printed on standard output so far, not yet taken as lines.
    private var pending = Data()

    /// Starts a writer of `count` keys `prefix-i` into `namespace` of the suite
    /// domain `domain`.
    init(domain: String, namespace: String, prefix: String, count: Int) throws {
        let stdin = try Self.pipe()
        let stdout = try Self.pipe()
        let stderr = try Self.pipe()
        process.executableURL = try DiskTest.executable(named: "HoardSettingsWriter")
        process.arguments = [domain, namespace, prefix, "\(count)"]
        process.standardInput = stdin.read
        process.standardOutput = stdout.write
        process.standardError = stderr.write
        try process.run()
        // The child has its own copies now; the parent's must go, or the pipes
        // never report the end of the child's output.
        try stdin.read.close()
        try stdout.write.close()
        try stderr.write.close()
        input = stdin.write
        output = stdout.read
        errors = stderr.read
    }

    /// A one-way channel whose two descriptors are close-on-exec from the start: on
    /// Linux a socket pair made with `SOCK_CLOEXEC` (Glibc does not export
    /// `pipe2`), elsewhere a pipe marked right after it is made.
    private static func pipe() throws -> (read: FileHandle, write: FileHandle) {
        var fds: [Int32] = [-1, -1]
        #if os(Linux)
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw DiskTest.ChildError("socketpair: errno \(errno)") }
        #else
        guard Darwin.pipe(&fds) == 0 else { throw DiskTest.ChildError("pipe: errno \(errno)") }
        for fd in fds where fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 {
            throw DiskTest.ChildError("fcntl(F_SETFD): errno \(errno)")
        }
        #endif
        return (
            FileHandle(fileDescriptor: fds[0], closeOnDealloc: true),
            FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
        )
    }

    /// The next line the child prints, waiting for it; `nil` once its output ended.
    func nextLine() -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[(newline + 1)...])
                return line
            }
            let chunk = output.availableData
            if chunk.isEmpty { return pending.isEmpty ? nil : String(decoding: pending, as: UTF8.self) }
            pending.append(chunk)
        }
    }

    /// Tells the child to start writing.
    func start() throws {
        try input.write(contentsOf: Data("go\n".utf8))
        try input.close()
    }

    /// Waits until the child ends: its remaining output lines, what it printed on
    /// standard error, and its exit status.
    func finish() -> (lines: [String], errors: String, status: Int32) {
        var lines: [String] = []
        while let line = nextLine() { lines.append(line) }
        let errorText = String(decoding: errors.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (lines, errorText, process.terminationStatus)
    }
}
