import ArgumentParser

/// The `hoard` command-line tool: look inside and maintain Hoard's caches and stores.
@main
struct HoardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hoard",
        abstract: "Inspect and maintain Hoard caches, and see them at work.",
        discussion: """
            EXIT STATUS
              0   The command did what it was asked.
              1   It failed, and standard error says why: no store, log or settings
                  namespace at the path or name, one that cannot be opened, read or
                  written, no entry for a key, damage that verify found and did not
                  repair, a log that log verify found not intact, a confirmation not
                  given, or output that could not be written.
              64  The arguments were not valid: unknown, missing, or out of range.
            A closed output pipe ends the tool with SIGPIPE, as it ends any other.
            """,
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
