import Foundation
import Hoard

/// The disk-tier part of the demo: a store in the user's cache directory that the
/// next run finds again.
struct DiskDemo {
    /// What the demo remembers between runs.
    struct Visits: Codable, Sendable {
        var count: Int
        var lastRun: Date
    }

    /// The demo's store directory; `nil` for the default location of "hoard-demo".
    var directory: URL?
    let output: (String) -> Void

    func run() throws {
        let store = try directory.map { try DiskStore(directory: $0) } ?? DiskStore(named: "hoard-demo")
        let namespace = "demo"
        output("== Disk tier: DiskStore at \(store.directory.path), namespace \"\(namespace)\" ==")

        let previous = try store.value(for: "visits", as: Visits.self, in: namespace)
        if let previous {
            output(
                "found visits = \(previous.count), stored by an earlier run at \(StoreFormat.date(previous.lastRun))")
        } else {
            output("found nothing: this is the first run (run the demo again to see the disk tier remember)")
        }
        let visits = Visits(count: (previous?.count ?? 0) + 1, lastRun: Date())
        try store.set(visits, for: "visits", in: namespace)
        output("set   visits = \(visits.count)")

        let notes = Data((0..<(48 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try store.set(notes, for: "notes/large", in: namespace)
        let readBack = try store.value(for: "notes/large", as: Data.self, in: namespace)
        let inFile = try store.entries(in: namespace).first { $0.key == "notes/large" }?.isInFile == true
        output(
            "set   notes/large = 48 KiB, \(inFile ? "in its own file under blobs/ (over the 32 KiB spill threshold)" : "inline")"
        )
        output("get   notes/large -> \(readBack == notes ? "48 KiB, intact" : "wrong bytes!")")

        // A second instance on the same directory, with a clock the demo moves.
        let clock = ManualClock(start: Date())
        let timed = try DiskStore(directory: store.directory, clock: clock)
        try timed.set("short-lived", for: "token", expires: .seconds(30), in: namespace)
        output("set   token = short-lived, expires in 30 s (through a second instance with a manual clock)")
        output("get   token -> \(try timed.value(for: "token", as: String.self, in: namespace) ?? "miss")")
        clock.advance(by: 31)
        output("      ... 31 seconds later (manual clock)")
        output(
            "get   token -> \(try timed.value(for: "token", as: String.self, in: namespace) ?? "miss")   (expired, and removed)"
        )

        output("usage \(try store.usage(in: namespace))")
        output("look inside: hoard ls \(store.directory.path)")
    }
}
