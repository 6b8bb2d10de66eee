import ArgumentParser
import Foundation
import Hoard

/// What every store command takes: the store's directory.
struct StoreLocation: ParsableArguments {
    @Argument(help: "The store's directory (the one holding index.sqlite).")
    var path: String

    /// Opens the store without creating one and without collecting orphaned files
    /// (so that `verify` can report them).
    func open() throws -> DiskStore {
        let url = URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
        do {
            return try DiskStore(
                directory: url, configuration: .init(createsStore: false, collectsOrphansAtOpen: false))
        } catch where error.code == .notAStore {
            throw StoreCommandError("\(url.path) is not a Hoard store: \(error.message)")
        } catch {
            throw StoreCommandError("cannot open the store at \(url.path): \(error)")
        }
    }
}

/// An error a store command prints as it is.
struct StoreCommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Formatting shared by the store commands.
enum StoreFormat {
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func date(_ date: Date?) -> String {
        guard let date else { return "never" }
        return date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon))
    }

    /// A key or namespace as a quoted, escaped, shortened string: control
    /// characters, NUL and quotes are visible; nothing moves the cursor.
    static func quoted(_ text: String, limit: Int = 80) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if result.count >= limit {
                result += "…"
                break
            }
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format {
                    result += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return "\"" + result + "\""
    }

    /// Parses `1024`, `64K`, `10M`, `2G` (powers of 1024).
    static func parseSize(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).uppercased()
        let multipliers: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var digits = trimmed.hasSuffix("IB") ? String(trimmed.dropLast(2)) : trimmed
        if digits.hasSuffix("B") { digits.removeLast() }
        var multiplier = 1
        if let last = digits.last, let factor = multipliers[last] {
            multiplier = factor
            digits.removeLast()
        }
        guard let number = Int(digits), number >= 0 else { return nil }
        return number.multipliedReportingOverflow(by: multiplier).overflow ? nil : number * multiplier
    }
}

/// `hoard stats PATH`: totals per namespace and on disk.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Show a store's entries and bytes per namespace, and its size on disk.")

    @OptionGroup var location: StoreLocation

    func run() throws {
        let store = try location.open()
        let total = try store.totalUsage()
        let namespaces = try store.namespaces()
        let directory = store.directory.standardizedFileURL
        var onDisk = 0
        var files = 0
        for name in (try? FileManager.default.subpathsOfDirectory(atPath: directory.path)) ?? [] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            if attributes?[.type] as? FileAttributeType == .typeRegular {
                onDisk += (attributes?[.size] as? Int) ?? 0
                if name.hasPrefix("blobs/") { files += 1 }
            }
        }
        print("store      \(directory.path)")
        print("entries    \(total.count)")
        print("values     \(StoreFormat.bytes(total.bytes))")
        print("on disk    \(StoreFormat.bytes(onDisk)) (index and \(files) value files)")
        print("namespaces \(namespaces.count)")
        for (name, usage) in namespaces.sorted(by: { $0.key < $1.key }) {
            print("  \(StoreFormat.quoted(name, limit: 40))  \(usage.count) entries, \(StoreFormat.bytes(usage.bytes))")
        }
    }
}

/// `hoard ls PATH`: the entries, with their metadata.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List a store's entries: namespace, key, size, where the value is, dates.")

    @OptionGroup var location: StoreLocation

    @Option(name: .shortAndLong, help: "Only this namespace.")
    var namespace: String?

    @Option(name: .shortAndLong, help: "At most this many entries (at least 1).")
    var limit: Int = 1_000

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, not \(limit)") }
    }

    func run() throws {
        let store = try location.open()
        let entries = try store.entries(in: namespace, limit: limit)
        let now = Date()
        for entry in entries {
            let expired = entry.expiresAt.map { $0 <= now } ?? false
            print([
                StoreFormat.quoted(entry.namespace, limit: 30),
                StoreFormat.quoted(entry.key),
                StoreFormat.bytes(entry.size),
                entry.isInFile ? "file" : "inline",
                "stored " + StoreFormat.date(entry.storedAt),
                "expires " + StoreFormat.date(entry.expiresAt) + (expired ? " (expired)" : ""),
                "accessed " + StoreFormat.date(entry.accessedAt),
            ].joined(separator: "  "))
        }
        // Out of what was listed: the namespace's entries with --namespace.
        let total = try namespace.map { try store.usage(in: $0).count } ?? store.totalUsage().count
        if entries.count < total {
            FileHandle.standardError.write(Data("(\(entries.count) of \(total) entries; --limit to see more)\n".utf8))
        }
    }
}

/// `hoard get PATH KEY`: one value.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one value: as text when it is UTF-8, as a hex dump otherwise, or raw with --raw.")

    @OptionGroup var location: StoreLocation

    @Argument(help: "The key.")
    var key: String

    @Option(name: .shortAndLong, help: "The namespace.")
    var namespace: String = DiskStore.defaultNamespace

    @Flag(help: "Write the value's bytes to standard output as they are.")
    var raw = false

    func run() throws {
        let store = try location.open()
        guard let entry = try store.entry(for: key, in: namespace) else {
            throw StoreCommandError(
                "no live entry for key \(StoreFormat.quoted(key)) in namespace \(StoreFormat.quoted(namespace))")
        }
        if raw {
            FileHandle.standardOutput.write(entry.data)
            return
        }
        let header = "\(StoreFormat.bytes(entry.data.count)), stored \(StoreFormat.date(entry.storedAt)), expires \(StoreFormat.date(entry.expiresAt))\n"
        FileHandle.standardError.write(Data(header.utf8))
        if let text = String(data: entry.data, encoding: .utf8),
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !"\n\t\r".unicodeScalars.contains($0) })
        {
            print(text)
        } else {
            print(Self.hexDump(entry.data.prefix(4_096)), terminator: "")
            if entry.data.count > 4_096 { print("… (\(entry.data.count - 4_096) more bytes; --raw for all)") }
        }
    }

    static func hexDump(_ data: Data) -> String {
        var lines = ""
        let bytes = [UInt8](data)
        for start in stride(from: 0, to: bytes.count, by: 16) {
            let row = bytes[start..<min(start + 16, bytes.count)]
            let hex = row.map { String(format: "%02x", $0) }.joined(separator: " ")
            let text = String(row.map { (0x20..<0x7F).contains($0) ? Character(UnicodeScalar($0)) : "." })
            lines += String(format: "%08x  ", start) + hex.padding(toLength: 48, withPad: " ", startingAt: 0) + "  " + text + "\n"
        }
        return lines
    }
}

/// `hoard rm PATH KEY…`: remove entries.
struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Remove entries by key, or every entry of a namespace with --all.")

    @OptionGroup var location: StoreLocation

    @Argument(help: "The keys to remove.")
    var keys: [String] = []

    @Option(name: .shortAndLong, help: "The namespace.")
    var namespace: String = DiskStore.defaultNamespace

    @Flag(help: "Remove every entry of the namespace.")
    var all = false

    func validate() throws {
        if all == !keys.isEmpty { throw ValidationError("give either keys or --all") }
    }

    func run() throws {
        let store = try location.open()
        if all {
            let count = try store.removeAll(in: namespace)
            print("removed \(count) entries from namespace \(StoreFormat.quoted(namespace))")
            return
        }
        var missing = 0
        for key in keys {
            if try store.removeValue(for: key, in: namespace) {
                print("removed \(StoreFormat.quoted(key))")
            } else {
                missing += 1
                FileHandle.standardError.write(Data("no entry for \(StoreFormat.quoted(key))\n".utf8))
            }
        }
        if missing > 0 { throw ExitCode(1) }
    }
}

/// `hoard trim PATH --bytes N`: remove expired entries, then evict.
struct TrimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Remove expired entries, then evict least-recently-accessed ones down to a size or count.")

    @OptionGroup var location: StoreLocation

    @Option(help: "Keep at most this many bytes of values (1048576, 512K, 64M, 2G).", transform: { text in
        guard let size = StoreFormat.parseSize(text) else { throw ValidationError("not a size: \(text)") }
        return size
    })
    var bytes: Int?

    @Option(help: "Keep at most this many entries.")
    var count: Int?

    func validate() throws {
        if bytes == nil, count == nil { throw ValidationError("give --bytes, --count, or both") }
        if let count, count < 0 { throw ValidationError("--count must not be negative") }
    }

    func run() throws {
        let store = try location.open()
        let expired = try store.removeExpired()
        let bar = ProgressBar(label: "trimming")
        let evicted = try store.trim(toBytes: bytes, count: count, progress: { bar.update($0.completed, of: $0.total) })
        bar.finish()
        let usage = try store.totalUsage()
        print("removed \(expired) expired entries, evicted \(evicted); now \(usage.count) entries, \(StoreFormat.bytes(usage.bytes))")
    }
}

/// `hoard verify PATH`: check every entry.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every entry, value file and the index; list what is damaged. Exits 1 when something is.")

    @OptionGroup var location: StoreLocation

    @Flag(help: "Also remove damaged entries and old orphaned files, and fix the totals.")
    var repair = false

    func run() throws {
        let store = try location.open()
        let bar = ProgressBar(label: "verifying")
        let report = try store.verify(repairing: repair, progress: { bar.update($0.completed, of: $0.total) })
        bar.finish()
        for damage in report.damage {
            var line = "\(damage.reason)"
            if let namespace = damage.namespace { line += "  namespace \(StoreFormat.quoted(namespace, limit: 30))" }
            if let key = damage.key { line += "  key \(StoreFormat.quoted(key))" }
            print(line + "  " + damage.detail)
        }
        print(report)
        let unrepaired = report.damage.contains { damage in
            !repair || damage.reason == .damagedIndex || (damage.reason == .orphanedFile && !damage.detail.hasSuffix("deleted"))
        }
        if unrepaired { throw ExitCode(1) }
    }
}
