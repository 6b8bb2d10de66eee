import ArgumentParser

/// The `hoard` command-line tool: look inside and maintain Hoard's caches and stores.
@main
struct HoardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hoard",
        abstract: "Inspect and maintain Hoard caches, and see them at work.",
        version: HoardCommand.version,
        subcommands: [
            DemoCommand.self, StatsCommand.self, ListCommand.self, GetCommand.self, RemoveCommand.self,
            TrimCommand.self, VerifyCommand.self, LogCommand.self, StorageCommand.self, SettingsCommand.self,
        ]
    )

    /// The tool's version, printed by `hoard --version`: the version of the Hoard
    /// package it was built from.
    static let version = "0.1.0"
}
