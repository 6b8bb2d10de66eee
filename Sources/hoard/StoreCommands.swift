import ArgumentParser
import Foundation
import Hoard

/// What every store command takes: a store's directory, or the name of a store in the
/// default location.
struct StoreLocation: ParsableArguments {
    @Argument(
        help: ArgumentHelp(
            "The store: its directory (the one holding index.sqlite), or the name of a store in the user's cache directory.",
            discussion: """
                An argument naming something that exists is a path. Otherwise it is a store's name as \
                `hoard storage list` shows it (PROGRAM/STORE), or a store's own name (STORE) when one \
                program's folder, or the cache directory itself, holds a store of that name.
                """,
            valueName: "store"))
    var path: String

    /// The store's directory: `path` as a path when it names something that exists
    /// (or is absolute or starts with `.` or `~`); otherwise the store of that name in
    /// the user's cache directory, as `storage list` names it (`PROGRAM/STORE`), or
    /// the only store whose own name it is (which is then said on standard error).
    func resolve() throws -> URL {
        let expanded = (path as NSString).expandingTildeInPath
        if FileManager.default.fileExists(atPath: expanded) || path.hasPrefix("/") || path.hasPrefix(".")
            || path.hasPrefix("~")
        {
            return URL(fileURLWithPath: expanded)
        }
        let storage: LocalStorage
        let names: [String]
        do {
            storage = try LocalStorage()
            names = try storage.inventory().stores.map(\.name)
        } catch {
            throw StoreCommandError("\(StoreFormat.quoted(path)) is neither a path nor a store name: \(error)")
        }
        let matches = names.contains(path) ? [path] : names.filter { $0.hasSuffix("/" + path) }
        guard matches.count == 1, let name = matches.first else {
            if matches.isEmpty {
                throw StoreCommandError(
                    "\(StoreFormat.quoted(path)) is neither a path nor the name of a store in \(storage.cachesDirectory.path) (hoard storage list shows them)"
                )
            }
            throw StoreCommandError(
                "several programs have a store named \(StoreFormat.quoted(path)): \(matches.map { StoreFormat.quoted($0) }.joined(separator: ", ")); give one of these names"
            )
        }
        let url = storage.cachesDirectory.appendingPathComponent(name, isDirectory: true)
        StandardError.write(Data("store \(StoreFormat.quoted(name)): \(url.path)\n".utf8))
        return url
    }

    /// Opens the store without creating one and without collecting orphaned files
    /// (so that `verify` can report them). A store of an older format is migrated
    /// only by a command that changes the store (`migratingFormat`): one that only
    /// reads it refuses it and leaves it as it is, so that the older program that
    /// writes it can still open it.
    func open(migratingFormat: Bool) throws -> DiskStore {
        let url = try resolve()
        do {
            return try DiskStore(
                directory: url,
                configuration: .init(
                    createsStore: false, collectsOrphansAtOpen: false, migratesFormat: migratingFormat))
        } catch  where error.code == .notAStore {
            throw StoreCommandError("\(url.path) is not a Hoard store: \(error.message)")
        } catch  where error.code == .storeDamaged {
            throw StoreCommandError("the store at \(url.path) is damaged and cannot be opened: \(error.message)")
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

    /// `date` in ISO 8601 with the local time zone's offset
    /// (`2026-11-24T19:30:05+01:00`, `Z` for UTC), or "never".
    static func date(_ date: Date?) -> String {
        guard let date else { return "never" }
        return isoDate(date)
    }

    /// `date` in ISO 8601 with the local time zone's offset, for text and JSON.
    static func isoDate(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .current))
    }

    /// `count` and the noun, singular for one: "1 entry", "2 entries".
    static func count(_ count: Int, _ singular: String, _ plural: String) -> String {
        "\(count) \(count == 1 ? singular : plural)"
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

/// `hoard stats STORE`: totals per namespace and on disk.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show a store's entries and bytes per namespace, and its size on disk.",
        discussion: """
            With --json, one object: {"store": directory, "entries": Int, "valueBytes": Int, \
            "bytesOnDisk": Int or null, "valueFiles": Int or null, "namespaces": [{"name": String, \
            "entries": Int, "valueBytes": Int}]}, namespaces sorted by name. The size on disk is \
            null (and the reason is printed on standard error) when the store's files cannot be listed.
            """)

    @OptionGroup var location: StoreLocation

    @Flag(help: "Print one JSON object (schema above) instead of text.")
    var json = false

    struct Output: Encodable {
        struct Namespace: Encodable {
            var name: String
            var entries: Int
            var valueBytes: Int
        }
        var store: String
        var entries: Int
        var valueBytes: Int
        var bytesOnDisk: Int?
        var valueFiles: Int?
        var namespaces: [Namespace]

        enum Keys: String, CodingKey { case store, entries, valueBytes, bytesOnDisk, valueFiles, namespaces }

        /// Every field, an unknown size as `null` (the schema's stable keys).
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(store, forKey: .store)
            try container.encode(entries, forKey: .entries)
            try container.encode(valueBytes, forKey: .valueBytes)
            try container.encode(bytesOnDisk, forKey: .bytesOnDisk)
            try container.encode(valueFiles, forKey: .valueFiles)
            try container.encode(namespaces, forKey: .namespaces)
        }
    }

    func run() throws {
        let store = try location.open(migratingFormat: false)
        let total = try store.totalUsage()
        let namespaces = try store.namespaces()
        let directory = store.directory.standardizedFileURL
        // The store's directory may be a link to it (`~/.cache/app -> /mnt/big/app`),
        // which the store follows: its files are listed where they are.
        let measured = directory.resolvingSymlinksInPath()
        var onDisk: Int? = 0
        var files: Int? = 0
        do {
            for name in try FileManager.default.subpathsOfDirectory(atPath: measured.path) {
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: measured.appendingPathComponent(name).path)
                if attributes[.type] as? FileAttributeType == .typeRegular {
                    onDisk? += (attributes[.size] as? Int) ?? 0
                    // A temporary file of an interrupted write takes space but holds no value.
                    if name.hasPrefix("blobs/") && !name.hasSuffix(".tmp") { files? += 1 }
                }
            }
        } catch {
            // The entries and values come from the index; only the size is unknown.
            (onDisk, files) = (nil, nil)
            StandardError.write(
                Data("hoard: cannot measure the store's size on disk: \(error.localizedDescription)\n".utf8))
        }
        let sorted = namespaces.sorted(by: { $0.key < $1.key })
        if json {
            try JSONOutput.print(
                Output(
                    store: directory.path, entries: total.count, valueBytes: total.bytes, bytesOnDisk: onDisk,
                    valueFiles: files,
                    namespaces: sorted.map {
                        Output.Namespace(name: $0.key, entries: $0.value.count, valueBytes: $0.value.bytes)
                    }))
            return
        }
        print("store      \(directory.path)")
        print("entries    \(total.count)")
        print("values     \(StoreFormat.bytes(total.bytes))")
        if let onDisk, let files {
            print(
                "on disk    \(StoreFormat.bytes(onDisk)) (index, its logs and \(StoreFormat.count(files, "value file", "value files")))"
            )
        } else {
            print("on disk    unknown: the store's files cannot be listed")
        }
        print("namespaces \(namespaces.count)")
        for (name, usage) in sorted {
            print(
                "  \(StoreFormat.quoted(name, limit: 40))  \(StoreFormat.count(usage.count, "entry", "entries")), \(StoreFormat.bytes(usage.bytes))"
            )
        }
    }
}

/// `hoard ls STORE`: the entries, with their metadata.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List a store's entries: namespace, key, size, where the value is, dates.",
        discussion: """
            With --json, one object per line (JSON lines): {"namespace": String, "key": String, \
            "size": Int, "inFile": Bool, "storedAt": date, "expiresAt": date or null, \
            "accessedAt": date, "expired": Bool}. Dates are ISO 8601 with their offset.
            """)

    @OptionGroup var location: StoreLocation

    @Option(name: .shortAndLong, help: "Only this namespace.")
    var namespace: String?

    // Unconditional: the word after the option is its value even when it starts
    // with a dash, so that "--limit -1" is refused as a limit below 1, not as a
    // missing value. (Likewise every numeric option of the tool.)
    @Option(name: .shortAndLong, parsing: .unconditional, help: "At most this many entries (at least 1).")
    var limit: Int = 1_000

    @Flag(help: "Print one JSON object per entry and line (schema above) instead of text.")
    var json = false

    struct Output: Encodable {
        var namespace: String
        var key: String
        var size: Int
        var inFile: Bool
        var storedAt: String
        var expiresAt: String?
        var accessedAt: String
        var expired: Bool

        func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case namespace, key, size, inFile, storedAt, expiresAt, accessedAt, expired }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(namespace, forKey: .namespace)
            try container.encode(key, forKey: .key)
            try container.encode(size, forKey: .size)
            try container.encode(inFile, forKey: .inFile)
            try container.encode(storedAt, forKey: .storedAt)
            try container.encode(expiresAt, forKey: .expiresAt)  // null when it never expires
            try container.encode(accessedAt, forKey: .accessedAt)
            try container.encode(expired, forKey: .expired)
        }
    }

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, not \(limit)") }
    }

    func run() throws {
        let store = try location.open(migratingFormat: false)
        let entries = try store.entries(in: namespace, limit: limit)
        let now = Date()
        for entry in entries {
            let expired = entry.expiresAt.map { $0 <= now } ?? false
            if json {
                try JSONOutput.print(
                    Output(
                        namespace: entry.namespace, key: entry.key, size: entry.size, inFile: entry.isInFile,
                        storedAt: StoreFormat.isoDate(entry.storedAt),
                        expiresAt: entry.expiresAt.map(StoreFormat.isoDate),
                        accessedAt: StoreFormat.isoDate(entry.accessedAt), expired: expired))
                continue
            }
            print(
                [
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
            StandardError.write(
                Data(
                    "(\(entries.count) of \(StoreFormat.count(total, "entry", "entries")); --limit to see more)\n".utf8)
            )
        }
    }
}

/// `hoard get STORE KEY`: one value.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one value: as text when it is UTF-8, as a hex dump otherwise, or raw with --raw.",
        discussion: """
            With --json, the entry's metadata instead of its value, as one object: \
            {"namespace": String, "key": String, "size": Int, "storedAt": date, \
            "expiresAt": date or null}. Dates are ISO 8601 with their offset.
            """)

    @OptionGroup var location: StoreLocation

    @Argument(help: "The key.")
    var key: String

    @Option(
        name: .shortAndLong,
        help: "The namespace (default: the store's only one, else \"default\"; a store of several lists them).")
    var namespace: String?

    @Flag(
        help:
            "Write the value's bytes to standard output as they are (on a terminal, then a newline if they end without one)."
    )
    var raw = false

    @Flag(help: "Print the entry's metadata as one JSON object (schema above) instead of its value.")
    var json = false

    struct Output: Encodable {
        var namespace: String
        var key: String
        var size: Int
        var storedAt: String
        var expiresAt: String?

        func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case namespace, key, size, storedAt, expiresAt }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(namespace, forKey: .namespace)
            try container.encode(key, forKey: .key)
            try container.encode(size, forKey: .size)
            try container.encode(storedAt, forKey: .storedAt)
            try container.encode(expiresAt, forKey: .expiresAt)  // null when it never expires
        }
    }

    func validate() throws {
        if raw && json { throw ValidationError("give --raw or --json, not both") }
    }

    func run() throws {
        let store = try location.open(migratingFormat: false)
        let namespace = try NamespaceChoice.resolve(namespace, in: store)
        // Read as an inspection: no access is recorded, and an expired or damaged
        // entry is left for ls and verify, not removed as a read by the program would.
        guard let entry = try store.inspectEntry(for: key, in: namespace) else {
            throw StoreCommandError(
                "no live entry for key \(StoreFormat.quoted(key)) in namespace \(StoreFormat.quoted(namespace)) (hoard ls lists expired entries, hoard verify damaged ones)"
            )
        }
        if json {
            try JSONOutput.print(
                Output(
                    namespace: namespace, key: key, size: entry.data.count,
                    storedAt: StoreFormat.isoDate(entry.storedAt),
                    expiresAt: entry.expiresAt.map(StoreFormat.isoDate)))
            return
        }
        if raw {
            StandardOutput.write(entry.data)
            // On a terminal, the shell's prompt starts on a line of its own; a pipe or
            // file receives the bytes exactly.
            if isatty(STDOUT_FILENO) == 1, entry.data.last != UInt8(ascii: "\n") {
                StandardOutput.write(Data("\n".utf8))
            }
            return
        }
        let header =
            "\(StoreFormat.bytes(entry.data.count)), stored \(StoreFormat.date(entry.storedAt)), expires \(StoreFormat.date(entry.expiresAt))\n"
        StandardError.write(Data(header.utf8))
        if let text = String(data: entry.data, encoding: .utf8),
            !text.unicodeScalars.contains(where: {
                $0.properties.generalCategory == .control && !"\n\t\r".unicodeScalars.contains($0)
            })
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
            lines +=
                String(format: "%08x  ", start) + hex.padding(toLength: 48, withPad: " ", startingAt: 0) + "  " + text
                + "\n"
        }
        return lines
    }
}

/// `hoard rm STORE KEY…`: remove entries.
struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Remove entries by key, or every entry of a namespace with --all.")

    @OptionGroup var location: StoreLocation

    @Argument(help: "The keys to remove.")
    var keys: [String] = []

    @Option(
        name: .shortAndLong,
        help: "The namespace (default: the store's only one, else \"default\"; a store of several lists them).")
    var namespace: String?

    @Flag(help: "Remove every entry of the namespace.")
    var all = false

    func validate() throws {
        if all == !keys.isEmpty { throw ValidationError("give either keys or --all") }
    }

    func run() throws {
        let store = try location.open(migratingFormat: true)
        let namespace = try NamespaceChoice.resolve(namespace, in: store)
        if all {
            let count = try store.removeAll(in: namespace)
            print(
                "removed \(StoreFormat.count(count, "entry", "entries")) from namespace \(StoreFormat.quoted(namespace))"
            )
            return
        }
        var missing = 0
        for key in keys {
            if try store.removeValue(for: key, in: namespace) {
                print("removed \(StoreFormat.quoted(key))")
            } else {
                missing += 1
                StandardError.write(
                    Data("no entry for \(StoreFormat.quoted(key)) in namespace \(StoreFormat.quoted(namespace))\n".utf8)
                )
            }
        }
        if missing > 0 { throw ExitCode(1) }
    }
}

/// `hoard trim STORE --bytes N`: remove expired entries, then evict.
struct TrimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Remove expired entries, then evict least-recently-accessed ones down to a size or count.")

    @OptionGroup var location: StoreLocation

    @Option(
        parsing: .unconditional, help: "Keep at most this many bytes of values (1048576, 512K, 64M, 2G).",
        transform: { text in
            guard let size = StoreFormat.parseSize(text) else { throw ValidationError("not a size: \(text)") }
            return size
        })
    var bytes: Int?

    @Option(parsing: .unconditional, help: "Keep at most this many entries.")
    var count: Int?

    func validate() throws {
        if bytes == nil, count == nil { throw ValidationError("give --bytes, --count, or both") }
        if let count, count < 0 { throw ValidationError("--count must not be negative") }
    }

    func run() throws {
        let store = try location.open(migratingFormat: true)
        let expired = try store.removeExpired()
        let bar = ProgressBar(label: "trimming")
        let evicted = try store.trim(toBytes: bytes, count: count, progress: { bar.update($0.completed, of: $0.total) })
        bar.finish()
        let usage = try store.totalUsage()
        print(
            "removed \(StoreFormat.count(expired, "expired entry", "expired entries")), evicted \(evicted); "
                + "now \(StoreFormat.count(usage.count, "entry", "entries")), \(StoreFormat.bytes(usage.bytes))")
    }
}

/// `hoard verify STORE`: check every entry.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every entry, value file and the index; list what is damaged. Exits 1 when something is.",
        discussion: """
            Each finding is one line. Temporary files that an interrupted write left \
            (reason temporaryFile) are listed but are not damage: they alone leave the exit \
            status 0, and --repair deletes those older than ten minutes (opening the store \
            while no other process has it open deletes them all). \
            With --json, one object: {"store": directory, "entriesChecked": Int, \
            "repaired": Bool (whether --repair was given), "healthy": Bool, \
            "damage": [{"reason": String, "namespace": String or null, \
            "key": String or null, "detail": String, "repaired": Bool}]}, one element per \
            finding, each detail one line. The exit status is the same as without it: 1 \
            while any damage (anything but a temporary file) is not repaired.
            """)

    @OptionGroup var location: StoreLocation

    @Flag(help: "Also remove damaged entries and old orphaned files, and fix the totals.")
    var repair = false

    @Flag(help: "Print one JSON object (schema above) instead of text.")
    var json = false

    struct Output: Encodable {
        struct Damage: Encodable {
            var reason: String
            var namespace: String?
            var key: String?
            var detail: String
            var repaired: Bool

            func encode(to encoder: any Encoder) throws {
                enum Keys: String, CodingKey { case reason, namespace, key, detail, repaired }
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(reason, forKey: .reason)
                try container.encode(namespace, forKey: .namespace)  // null for store-wide damage
                try container.encode(key, forKey: .key)
                try container.encode(detail, forKey: .detail)
                try container.encode(repaired, forKey: .repaired)
            }
        }
        var store: String
        var entriesChecked: Int
        var repaired: Bool
        var healthy: Bool
        var damage: [Damage]
    }

    func run() throws {
        let store = try location.open(migratingFormat: repair)
        let bar = ProgressBar(label: "verifying")
        let report = try store.verify(repairing: repair, progress: { bar.update($0.completed, of: $0.total) })
        bar.finish()
        if json {
            try JSONOutput.print(
                Output(
                    store: store.directory.standardizedFileURL.path, entriesChecked: report.entriesChecked,
                    repaired: report.repaired, healthy: report.isHealthy,
                    damage: report.damage.map {
                        Output.Damage(
                            reason: $0.reason.rawValue, namespace: $0.namespace, key: $0.key,
                            detail: Self.oneLine($0.detail), repaired: $0.isRepaired)
                    }))
        } else {
            for damage in report.damage {
                var line = "\(damage.reason)"
                if let namespace = damage.namespace {
                    line += "  namespace \(StoreFormat.quoted(namespace, limit: 30))"
                }
                if let key = damage.key { line += "  key \(StoreFormat.quoted(key))" }
                print(line + "  " + Self.oneLine(damage.detail))
            }
            print(report)
        }
        if report.problems.contains(where: { !$0.isRepaired }) { throw ExitCode(1) }
    }

    /// `text` on one line: each line break, with the spaces around it, becomes "; ".
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }
}
