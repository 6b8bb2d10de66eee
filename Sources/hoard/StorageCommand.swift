import ArgumentParser
import Foundation
import Hoard

/// `hoard storage`: what Hoard keeps in the default locations, and clearing it.
struct StorageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage",
        abstract: "List, clear or delete what Hoard keeps on this machine in its default locations.",
        discussion: """
            Stores are the Hoard stores in the user's cache directory ($XDG_CACHE_HOME or \
            ~/.cache on Linux): each program keeps its own in a folder of its own, named \
            PROGRAM/STORE here (a store directly in the cache directory, where earlier versions \
            kept them, is named STORE); logs are the message logs in its hoard-logs folder, \
            settings the SettingsStore namespaces. Nothing else is ever touched.
            """,
        subcommands: [List.self, ClearNamespace.self, ClearDisk.self, DeleteAll.self]
    )

    /// `hoard storage list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List every store with its namespaces, every log and every settings namespace, with counts and sizes.",
            discussion: """
                A store's size on disk counts every file of it (the index, SQLite's write-ahead log and \
                shared-memory files, the value files), measured while it is open: the bytes that hoard \
                stats reports as on disk; a namespace's bytes are its values' bytes. \
                A folder in the cache directory that cannot be looked into (no permission to list \
                it) is listed as one that could not be: a store in it is not among the stores. \
                With --name, only what starts with that prefix is listed. \
                With --json, one object: {"cachesDirectory": path, "logsDirectory": path, \
                "stores": [{"name": String, "program": String or null, "directory": path, \
                "entries": Int, "bytesOnDisk": Int, \
                "problem": String or null, "namespaces": [{"name": String, "entries": Int, \
                "valueBytes": Int}]}], "logs": [{"name": String, "file": path, "messages": Int, \
                "bytesOnDisk": Int, "problem": String or null}], "settings": [{"namespace": \
                String, "items": Int, "bytes": Int}], "unreadableFolders": [{"name": String, \
                "directory": path, "problem": String}]}.
                """)

        @Option(
            help: ArgumentHelp(
                "Only the stores, logs and settings namespaces whose names start with this prefix.", valueName: "prefix"
            ))
        var name: String?

        @Flag(help: "Print one JSON object (schema above) instead of text.")
        var json = false

        struct Output: Encodable {
            struct Namespace: Encodable {
                var name: String
                var entries: Int
                var valueBytes: Int
            }
            struct Store: Encodable {
                var name: String
                var program: String?
                var directory: String
                var entries: Int
                var bytesOnDisk: Int
                var problem: String?
                var namespaces: [Namespace]

                func encode(to encoder: any Encoder) throws {
                    enum Keys: String, CodingKey {
                        case name, program, directory, entries, bytesOnDisk, problem, namespaces
                    }
                    var container = encoder.container(keyedBy: Keys.self)
                    try container.encode(name, forKey: .name)
                    try container.encode(program, forKey: .program)  // null directly in the cache directory
                    try container.encode(directory, forKey: .directory)
                    try container.encode(entries, forKey: .entries)
                    try container.encode(bytesOnDisk, forKey: .bytesOnDisk)
                    try container.encode(problem, forKey: .problem)  // null when readable
                    try container.encode(namespaces, forKey: .namespaces)
                }
            }
            struct Log: Encodable {
                var name: String
                var file: String
                var messages: Int
                var bytesOnDisk: Int
                var problem: String?

                func encode(to encoder: any Encoder) throws {
                    enum Keys: String, CodingKey { case name, file, messages, bytesOnDisk, problem }
                    var container = encoder.container(keyedBy: Keys.self)
                    try container.encode(name, forKey: .name)
                    try container.encode(file, forKey: .file)
                    try container.encode(messages, forKey: .messages)
                    try container.encode(bytesOnDisk, forKey: .bytesOnDisk)
                    try container.encode(problem, forKey: .problem)  // null when readable
                }
            }
            struct Settings: Encodable {
                var namespace: String
                var items: Int
                var bytes: Int
            }
            struct UnreadableFolder: Encodable {
                var name: String
                var directory: String
                var problem: String
            }
            var cachesDirectory: String
            var logsDirectory: String
            var stores: [Store]
            var logs: [Log]
            var settings: [Settings]
            var unreadableFolders: [UnreadableFolder]
        }

        func run() throws {
            let storage = try LocalStorage()
            var inventory = try storage.inventory()
            if let name {
                inventory.stores.removeAll { !$0.name.hasPrefix(name) }
                inventory.logs.removeAll { !$0.name.hasPrefix(name) }
                inventory.settings.removeAll { !$0.namespace.hasPrefix(name) }
                // A folder stays when a store named with the prefix could be in it.
                inventory.unreadableFolders.removeAll { !$0.mayHoldStore(namedWithPrefix: name) }
            }
            if json {
                try JSONOutput.print(
                    Output(
                        cachesDirectory: storage.cachesDirectory.path, logsDirectory: storage.logsDirectory.path,
                        stores: inventory.stores.map { store in
                            Output.Store(
                                name: store.name, program: store.program, directory: store.directory.path,
                                entries: store.entryCount,
                                bytesOnDisk: store.bytesOnDisk, problem: store.problem.map { "\($0)" },
                                namespaces: store.namespaces.sorted(by: { $0.key < $1.key }).map {
                                    Output.Namespace(name: $0.key, entries: $0.value.count, valueBytes: $0.value.bytes)
                                })
                        },
                        logs: inventory.logs.map { log in
                            Output.Log(
                                name: log.name, file: log.file.path, messages: log.messageCount,
                                bytesOnDisk: log.bytesOnDisk,
                                problem: log.problem.map { "\($0)" })
                        },
                        settings: inventory.settings.map {
                            Output.Settings(namespace: $0.namespace, items: $0.itemCount, bytes: $0.bytes)
                        },
                        unreadableFolders: inventory.unreadableFolders.map {
                            Output.UnreadableFolder(
                                name: $0.name, directory: $0.directory.path, problem: "\($0.problem)")
                        }))
                return
            }
            print("stores in \(storage.cachesDirectory.path): \(inventory.stores.count)")
            // Those directly in the cache directory first, then each program's.
            let groups = Dictionary(grouping: inventory.stores, by: \.program)
            let programs = groups.keys.sorted { first, second in
                guard let first else { return second != nil }
                guard let second else { return false }
                return first < second
            }
            for program in programs {
                let stores = groups[program] ?? []
                var indent = "  "
                if let program {
                    print(
                        "  program \(StoreFormat.quoted(program, limit: 60)): \(StoreFormat.count(stores.count, "store", "stores"))"
                    )
                    indent = "    "
                }
                for store in stores {
                    var line =
                        "\(indent)\(StoreFormat.quoted(store.name, limit: 80))  \(StoreFormat.count(store.entryCount, "entry", "entries")), "
                        + "\(StoreFormat.bytes(store.bytesOnDisk)) on disk"
                    if let problem = store.problem { line += "  (unreadable: \(problem))" }
                    print(line)
                    for (namespace, usage) in store.namespaces.sorted(by: { $0.key < $1.key }) {
                        print(
                            "\(indent)  namespace \(StoreFormat.quoted(namespace, limit: 40))  \(StoreFormat.count(usage.count, "entry", "entries")), \(StoreFormat.bytes(usage.bytes))"
                        )
                    }
                }
            }
            for folder in inventory.unreadableFolders {
                print(
                    "  could not list \(StoreFormat.quoted(folder.name, limit: 80)): \(folder.problem.code): \(folder.problem.message)"
                )
            }
            print("logs in \(storage.logsDirectory.path): \(inventory.logs.count)")
            for log in inventory.logs {
                var line =
                    "  \(StoreFormat.quoted(log.name, limit: 60))  \(StoreFormat.count(log.messageCount, "message", "messages")), "
                    + "\(StoreFormat.bytes(log.bytesOnDisk)) on disk"
                if let problem = log.problem { line += "  (unreadable: \(problem))" }
                print(line)
            }
            let items = inventory.settings.reduce(0) { $0 + $1.itemCount }
            print("settings namespaces: \(inventory.settings.count), \(StoreFormat.count(items, "item", "items"))")
            for settings in inventory.settings {
                print(
                    "  \(StoreFormat.quoted(settings.namespace, limit: 60))  \(StoreFormat.count(settings.itemCount, "item", "items")), \(StoreFormat.bytes(settings.bytes))"
                )
            }
        }
    }

    /// `hoard storage clear-namespace NAMESPACE (--store NAME | --settings)`.
    struct ClearNamespace: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear-namespace",
            abstract: "Remove every entry of one namespace of one store, or every value of one settings namespace.")

        @Argument(help: "The namespace.")
        var namespace: String

        @Option(help: "The store's name as storage list shows it (PROGRAM/STORE, or STORE).")
        var store: String?

        @Flag(help: "Clear the settings namespace of that name instead of a store's namespace.")
        var settings = false

        func validate() throws {
            if settings == (store != nil) { throw ValidationError("give either --store NAME or --settings") }
        }

        func run() throws {
            let storage = try LocalStorage()
            do {
                if let store {
                    let removed = try storage.clearNamespace(namespace, inStore: store)
                    print(
                        "removed \(StoreFormat.count(removed, "entry", "entries")) from namespace \(StoreFormat.quoted(namespace)) of store \(StoreFormat.quoted(store))"
                    )
                } else {
                    let removed = try storage.clearSettings(namespace: namespace)
                    print(
                        "removed \(StoreFormat.count(removed, "value", "values")) from settings namespace \(StoreFormat.quoted(namespace))"
                    )
                }
            } catch {
                throw StoreCommandError("nothing was cleared: \(error)")
            }
        }
    }

    /// `hoard storage clear-disk [--name PREFIX] [--yes]`.
    struct ClearDisk: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear-disk",
            abstract:
                "Remove every entry of every store (or of the stores --name selects); the stores stay, empty. Asks first unless --yes."
        )

        @Option(
            help: ArgumentHelp(
                "Only the stores whose names start with this prefix (say, one application's com.example.).",
                valueName: "prefix"))
        var name: String?

        @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
        var yes = false

        func run() throws {
            let storage = try LocalStorage()
            let stores = try storage.inventory().stores.filter { store in name.map { store.name.hasPrefix($0) } ?? true
            }
            let entries = stores.reduce(0) { $0 + $1.entryCount }
            let which = name.map { " named \(StoreFormat.quoted($0))…" } ?? ""
            guard
                yes
                    || Confirmation.ask(
                        "Remove all \(StoreFormat.count(entries, "entry", "entries")) of \(StoreFormat.count(stores.count, "store", "stores"))\(which) in \(storage.cachesDirectory.path)?"
                    )
            else { throw Confirmation.declined }
            for (store, removed) in try storage.clearDiskStores(namePrefix: name) {
                print("cleared \(StoreFormat.quoted(store)): \(StoreFormat.count(removed, "entry", "entries")) removed")
            }
        }
    }

    /// `hoard storage delete-all [--name PREFIX] [--yes]`.
    struct DeleteAll: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete-all",
            abstract:
                "Delete every store, every log and every settings suite Hoard made (or those --name selects). Asks first unless --yes."
        )

        @Option(
            help: ArgumentHelp(
                "Only the stores, logs and settings namespaces whose names start with this prefix.", valueName: "prefix"
            ))
        var name: String?

        @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
        var yes = false

        func run() throws {
            let storage = try LocalStorage()
            let inventory = try storage.inventory()
            let matches = { (text: String) in name.map { text.hasPrefix($0) } ?? true }
            let stores = inventory.stores.filter { matches($0.name) }.count
            let logs = inventory.logs.filter { matches($0.name) }.count
            let settings = inventory.settings.filter { matches($0.namespace) }.count
            let which = name.map { " named \(StoreFormat.quoted($0))…" } ?? ""
            guard
                yes
                    || Confirmation.ask(
                        "Delete \(StoreFormat.count(stores, "store", "stores")), \(StoreFormat.count(logs, "log", "logs")) and \(StoreFormat.count(settings, "settings namespace", "settings namespaces"))\(which)?"
                    )
            else { throw Confirmation.declined }
            let report = try storage.deleteAll(namePrefix: name)
            print(report)
            if !report.isComplete { throw ExitCode(1) }
        }
    }
}

/// Asking on the terminal before destroying anything.
enum Confirmation {
    /// Prints `question` and reads one line from standard input: `true` only for
    /// "y" or "yes" (any case). End of input, or anything else, is a no.
    static func ask(_ question: String) -> Bool {
        StandardError.write(Data("\(question) [y/N] ".utf8))
        guard let answer = readLine(strippingNewline: true) else { return false }
        let word = answer.trimmingCharacters(in: .whitespaces).lowercased()
        return word == "y" || word == "yes"
    }

    /// What a declined confirmation throws: nothing was changed.
    static let declined = StoreCommandError("not confirmed; nothing was changed")
}
