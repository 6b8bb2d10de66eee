import Foundation
import Hoard

// The child process of the two-process settings tests: several of it write one
// settings namespace at the same time.
//
//   HoardSettingsWriter DOMAIN NAMESPACE PREFIX COUNT
//
// Opens NAMESPACE in the suite domain DOMAIN, prints "ready", waits for a line on
// standard input (the test sends one to every writer once all are ready, so their
// writes overlap), then sets COUNT keys PREFIX-0 … PREFIX-(COUNT-1), each to the
// value "PREFIX-i", and prints "done". Any error is printed on standard error and
// exits 1.

/// Prints `line` on standard error and exits 1.
func fail(_ line: String) -> Never {
    FileHandle.standardError.write(Data((line + "\n").utf8))
    exit(1)
}

/// Prints `line` on standard output at once (the test waits for it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[4]), count >= 0 else {
    fail("usage: HoardSettingsWriter DOMAIN NAMESPACE PREFIX COUNT")
}
let prefix = arguments[3]
do {
    let settings = try SettingsStore<String>(
        namespace: arguments[2], codec: .cacheValue,
        configuration: .init(itemLimit: 100_000, suiteDomain: arguments[1]))
    say("ready")
    guard readLine() != nil else { fail("standard input ended before the signal to start") }
    for i in 0..<count {
        try settings.set("\(prefix)-\(i)", for: "\(prefix)-\(i)")
    }
    say("done")
} catch {
    fail("settings: \(error)")
}
