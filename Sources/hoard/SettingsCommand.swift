import ArgumentParser
import Foundation
import Hoard

/// `hoard settings`: read SettingsStore namespaces without knowing their value types.
struct SettingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Read the values of a SettingsStore namespace.",
        discussion: """
            Reading is what a SettingsStore does: a value that is not the bytes a SettingsStore \
            writes (a number or a string another program stored) is listed as unreadable, \
            read as a miss, and kept, as any read keeps it.
            """,
        subcommands: [Keys.self, Get.self]
    )

    /// `hoard settings keys NAMESPACE`.
    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a namespace's keys with their encoded sizes.",
            discussion: """
                With --json, one object per key and line (JSON lines): {"key": String, \
                "size": Int or null}; size is null when the value is unreadable.
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
            let settings = try SettingsCommand.open(namespace)
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
            guard let data = try SettingsCommand.open(namespace).value(for: key) else {
                throw StoreCommandError(
                    "no value for key \(StoreFormat.quoted(key)) in settings namespace \(StoreFormat.quoted(namespace))"
                )
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

    /// The namespace's raw bytes; an invalid name is a clear error.
    static func open(_ namespace: String) throws -> SettingsStore<Data> {
        do {
            return try SettingsStore<Data>(namespace: namespace, codec: .cacheValue)
        } catch {
            throw StoreCommandError("cannot open settings namespace \(StoreFormat.quoted(namespace)): \(error)")
        }
    }
}
