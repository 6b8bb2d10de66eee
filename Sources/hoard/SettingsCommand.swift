import ArgumentParser
import Foundation
import Hoard
import Synchronization

/// `hoard settings`: read SettingsStore namespaces without knowing their value types.
struct SettingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Read the values of a SettingsStore namespace.",
        discussion: """
            Reading is what a SettingsStore does: a value that is not the bytes a SettingsStore \
            writes (a number or a string another program stored) is listed as unreadable, \
            read as a miss, and kept, as any read keeps it. A suite file that is not a property \
            list is renamed aside, byte for byte, and a new one started; every command names \
            the kept copies of the namespace's suite on standard error.
            """,
        subcommands: [Keys.self, Get.self]
    )

    /// `hoard settings keys NAMESPACE`.
    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a namespace's keys with their encoded sizes.",
            discussion: """
                With --json, one object per key and line (JSON lines): {"key": String, \
                "size": Int or null}; size is null when the value is unreadable. Damaged suite \
                files kept aside are named on standard error.
                """)

        @Argument(help: "The settings namespace.")
        var namespace: String

        @Flag(help: "Print one JSON object per key and line (schema above) instead of text.")
        var json = false

        struct Output: Encodable {
            var key: String
            var size: Int?

            func encode(to encoder: any Encoder) throws {
                enum Keys: String, CodingKey { case key, size }
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(key, forKey: .key)
                try container.encode(size, forKey: .size)  // null when unreadable
            }
        }

        func run() throws {
            let (settings, events) = try SettingsCommand.open(namespace)
            defer { SettingsCommand.noteKeptAside(settings, events) }
            for key in settings.keys {
                let size = settings.value(for: key)?.count
                if json {
                    try JSONOutput.print(Output(key: key, size: size))
                } else {
                    print("\(StoreFormat.quoted(key))  \(size.map { StoreFormat.bytes($0) } ?? "unreadable")")
                }
            }
        }
    }

    /// `hoard settings get NAMESPACE KEY`.
    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Print one value's encoded bytes: as text when they are UTF-8 (JSON for Codable values), as a hex dump otherwise."
        )

        @Argument(help: "The settings namespace.")
        var namespace: String

        @Argument(help: "The key.")
        var key: String

        func run() throws {
            let (settings, events) = try SettingsCommand.open(namespace)
            defer { SettingsCommand.noteKeptAside(settings, events) }
            guard let data = settings.value(for: key) else {
                let place = "key \(StoreFormat.quoted(key)) in settings namespace \(StoreFormat.quoted(namespace))"
                guard settings.contains(key) else { throw StoreCommandError("no value for \(place)") }
                let reasons = events.undecodable.filter { $0.key == key }.map(\.detail)
                throw StoreCommandError(
                    "\(place) is unreadable: \(reasons.first ?? "it is not the encoded bytes a SettingsStore writes")")
            }
            if let text = String(data: data, encoding: .utf8),
                !text.unicodeScalars.contains(where: {
                    $0.properties.generalCategory == .control && !"\n\t\r".unicodeScalars.contains($0)
                })
            {
                print(text)
            } else {
                print(GetCommand.hexDump(data), terminator: "")
            }
        }
    }

    /// What a command's store reported while it ran.
    final class Events: Sendable {
        private let events = Mutex<[SettingsStoreEvent]>([])

        func record(_ event: SettingsStoreEvent) { events.withLock { $0.append(event) } }

        /// The values reads could not use, with the reason.
        var undecodable: [StoreDamage] {
            events.withLock { $0 }.compactMap { if case .undecodable(let damage) = $0 { damage } else { nil } }
        }

        /// The damaged suite files kept aside during this run, with what was wrong.
        var keptAside: [SettingsSuiteDamage] {
            events.withLock { $0 }.compactMap { if case .suiteKeptAside(let damage) = $0 { damage } else { nil } }
        }
    }

    /// The namespace's raw bytes, and what the store reports while the command
    /// runs; an invalid name is a clear error.
    static func open(_ namespace: String) throws -> (SettingsStore<Data>, Events) {
        let events = Events()
        do {
            let settings = try SettingsStore<Data>(
                namespace: namespace, codec: .cacheValue, configuration: .init(onEvent: events.record))
            return (settings, events)
        } catch {
            throw StoreCommandError("cannot open settings namespace \(StoreFormat.quoted(namespace)): \(error)")
        }
    }

    /// Names on standard error every kept-aside copy of the namespace's damaged
    /// suite files, and says what was wrong with those found during this run.
    static func noteKeptAside(_ settings: SettingsStore<Data>, _ events: Events) {
        for damage in events.keptAside {
            StandardError.write(Data("\(damage)\n".utf8))
        }
        let files = settings.keptAsideFiles
        guard !files.isEmpty else { return }
        let namespace = StoreFormat.quoted(settings.namespace)
        var note = "settings namespace \(namespace): damaged suite files kept aside (their values are not read):\n"
        for file in files { note += "  \(file)\n" }
        StandardError.write(Data(note.utf8))
    }
}
