import Foundation

/// Standard output and standard error, written with `FileHandle.write(contentsOf:)`,
/// which throws when a write fails: `FileHandle.write(_:)` traps on one (a closed pipe
/// while `SIGPIPE` is ignored, a closed descriptor, a full disk), and `Swift.print` drops
/// it and lets the command exit 0.
enum StandardOutput {
    /// Writes `data` to standard output. When it cannot be written, says so on standard
    /// error and exits with status 1: what was to be printed is lost, so the command has
    /// not done what it was asked. (With `SIGPIPE` at its default, a closed pipe ends the
    /// process by that signal before the write returns, as it ends any other tool.)
    static func write(_ data: Data) {
        do {
            try FileHandle.standardOutput.write(contentsOf: data)
        } catch {
            StandardError.write("hoard: cannot write to standard output: \(Self.reason(error))\n")
            exit(EXIT_FAILURE)
        }
    }

    /// What went wrong, in the words of the system (`strerror`) when the error carries
    /// an `errno`.
    static func reason(_ error: any Error) -> String {
        let error = error as NSError
        let posix = (error.userInfo[NSUnderlyingErrorKey] as? NSError) ?? error
        guard posix.domain == NSPOSIXErrorDomain else { return error.localizedDescription }
        return String(cString: strerror(Int32(posix.code)))
    }
}

/// Standard error: a message that cannot be written there is dropped, as there is
/// nowhere left to say so (instead of the trap of `FileHandle.write(_:)`).
enum StandardError {
    static func write(_ data: Data) {
        try? FileHandle.standardError.write(contentsOf: data)
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
