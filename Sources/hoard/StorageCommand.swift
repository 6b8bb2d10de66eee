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
            ~/.cache on Linux), logs the message logs in its hoard-logs folder, settings the \
            SettingsStore namespaces. Nothing else is ever touched.
            """,
        subcommands: [List.self, ClearNamespace.self, ClearDisk.self, DeleteAll.self]
    )

    /// `hoard storage list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every store with its namespaces, every log and every settings namespace, with counts and sizes.")

        func run() throws {
            let storage = try LocalStorage()
            let inventory = try storage.inventory()
            print("stores in \(storage.cachesDirectory.path): \(inventory.stores.count)")
            for store in inventory.stores {
                var line = "  \(StoreFormat.quoted(store.name, limit: 60))  \(store.entryCount) entries, "
                    + "\(StoreFormat.bytes(store.bytesOnDisk)) on disk"
                if let problem = store.problem { line += "  (unreadable: \(problem))" }
                print(line)
                for (namespace, usage) in store.namespaces.sorted(by: { $0.key < $1.key }) {
                    print("    namespace \(StoreFormat.quoted(namespace, limit: 40))  \(usage.count) entries, \(StoreFormat.bytes(usage.bytes))")
                }
            }
            print("logs in \(storage.logsDirectory.path): \(inventory.logs.count)")
            for log in inventory.logs {
                var line = "  \(StoreFormat.quoted(log.name, limit: 60))  \(log.messageCount) messages, "
                    + "\(StoreFormat.bytes(log.bytesOnDisk)) on disk"
                if let problem = log.problem { line += "  (unreadable: \(problem))" }
                print(line)
            }
            print("settings namespaces: \(inventory.settings.count), \(inventory.settings.reduce(0) { $0 + $1.itemCount }) items")
            for settings in inventory.settings {
                print("  \(StoreFormat.quoted(settings.namespace, limit: 60))  \(settings.itemCount) items, \(StoreFormat.bytes(settings.bytes))")
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

        @Option(help: "The store's name (its directory name in the cache directory).")
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
                    print("removed \(removed) entries from namespace \(StoreFormat.quoted(namespace)) of store \(StoreFormat.quoted(store))")
                } else {
                    let removed = try storage.clearSettings(namespace: namespace)
                    print("removed \(removed) values from settings namespace \(StoreFormat.quoted(namespace))")
                }
            } catch {
                throw StoreCommandError("nothing was cleared: \(error)")
            }
        }
    }

    /// `hoard storage clear-disk [--yes]`.
    struct ClearDisk: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear-disk",
            abstract: "Remove every entry of every store; the stores stay, empty. Asks first unless --yes.")

        @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
        var yes = false

        func run() throws {
            let storage = try LocalStorage()
            let stores = try storage.inventory().stores
            let entries = stores.reduce(0) { $0 + $1.entryCount }
            guard yes || Confirmation.ask(
                "Remove all \(entries) entries of \(stores.count) stores in \(storage.cachesDirectory.path)?")
            else { throw Confirmation.declined }
            for (store, removed) in try storage.clearDiskStores() {
                print("cleared \(StoreFormat.quoted(store)): \(removed) entries removed")
            }
        }
    }

    /// `hoard storage delete-all [--yes]`.
    struct DeleteAll: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete-all",
            abstract: "Delete every store, every log and every settings suite Hoard made. Asks first unless --yes.")

        @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
        var yes = false

        func run() throws {
            let storage = try LocalStorage()
            let inventory = try storage.inventory()
            guard yes || Confirmation.ask(
                "Delete \(inventory.stores.count) stores, \(inventory.logs.count) logs and \(inventory.settings.count) settings namespaces?")
            else { throw Confirmation.declined }
            let report = try storage.deleteAll()
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
        FileHandle.standardError.write(Data("\(question) [y/N] ".utf8))
        guard let answer = readLine(strippingNewline: true) else { return false }
        let word = answer.trimmingCharacters(in: .whitespaces).lowercased()
        return word == "y" || word == "yes"
    }

    /// What a declined confirmation throws: nothing was changed.
    static let declined = StoreCommandError("not confirmed; nothing was changed")
}
