import Foundation

/// Standard output and standard error, written with `write(2)` so that a failed write is
/// seen: `FileHandle.write(_:)` traps on one (a closed pipe while `SIGPIPE` is ignored, a
/// closed descriptor, a full disk), and `Swift.print` drops it and lets the command exit 0.
enum StandardOutput {
    /// Writes `data` to standard output. When it cannot be written, says so on standard
    /// error and exits with status 1: what was to be printed is lost, so the command has
    /// not done what it was asked. (With `SIGPIPE` at its default, a closed pipe ends the
    /// process by that signal before the write returns, as it ends any other tool.)
    static func write(_ data: Data) {
        if let failure = writeAll(data, to: STDOUT_FILENO) {
            StandardError.write("hoard: cannot write to standard output: \(String(cString: strerror(failure)))\n")
            exit(EXIT_FAILURE)
        }
    }

    /// Writes all of `data` to `descriptor`, retrying after a signal; the `errno` of a
    /// write that failed, or `nil`.
    static func writeAll(_ data: Data, to descriptor: Int32) -> Int32? {
        data.withUnsafeBytes { buffer -> Int32? in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }
}

/// Standard error: a message that cannot be written there is dropped, as there is
/// nowhere left to say so (instead of the trap of `FileHandle.write(_:)`).
enum StandardError {
    static func write(_ data: Data) {
        _ = StandardOutput.writeAll(data, to: STDERR_FILENO)
    }

    static func write(_ text: String) {
        write(Data(text.utf8))
    }
}

/// `Swift.print` for this tool: the same text, through ``StandardOutput/write(_:)``, so
/// that output that cannot be written is an error and exit status 1.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    var text = ""
    Swift.print(items.map { "\($0)" }.joined(separator: separator), terminator: terminator, to: &text)
    StandardOutput.write(Data(text.utf8))
}
