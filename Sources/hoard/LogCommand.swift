import ArgumentParser
import Foundation
import Hoard

/// `hoard log`: look inside a ``MessageLog`` file without knowing its message type.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Read and check a Hoard message log file.",
        discussion: """
            Messages print one per line: a message that is valid JSON as it is (the default \
            encoding of MessageLog), any other message as a JSON string holding its bytes in \
            base64. The file is opened for reading only and never changed.
            """,
        subcommands: [Dump.self, Tail.self, Verify.self]
    )

    /// `hoard log dump FILE`.
    struct Dump: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every message, oldest first, as JSON lines.")

        @Argument(help: LogFile.argumentHelp)
        var file: String

        func run() async throws {
            let log = try LogFile.open(file)
            for try await message in log.asyncMessages {
                print(LogFile.jsonLine(message))
            }
        }
    }

    /// `hoard log tail FILE [-n N]`.
    struct Tail: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the newest messages, oldest of them first, as JSON lines.")

        @Argument(help: LogFile.argumentHelp)
        var file: String

        @Option(name: .short, parsing: .unconditional, help: "How many of the newest messages to print.")
        var n: Int = 10

        func validate() throws {
            guard n >= 0 else { throw ValidationError("-n must be zero or more") }
        }

        func run() async throws {
            for message in try LogFile.open(file).newestMessages(n) {
                print(LogFile.jsonLine(message))
            }
        }
    }

    /// `hoard log verify FILE`.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every record; print an integrity report. Exits with 1 when the log is not intact.",
            discussion: """
                With --json, one object: {"file": path, "intact": Bool, "headerIntact": Bool, \
                "maximumBytes": Int, "overwritesOldMessages": Bool, "headerMessageCount": Int or \
                null, "intactMessageCount": Int, "intactBytes": Int, "damagedRanges": \
                [{"start": Int, "end": Int}], "tornAppendRanges": [{"start": Int, "end": Int}]}; \
                byte ranges are half-open. The exit status is the same as without it.
                """)

        @Argument(help: LogFile.argumentHelp)
        var file: String

        @Flag(help: "Print one JSON object (schema above) instead of text.")
        var json = false

        struct Output: Encodable {
            struct ByteRange: Encodable {
                var start: Int
                var end: Int
            }
            var file: String
            var intact: Bool
            var headerIntact: Bool
            var maximumBytes: Int
            var overwritesOldMessages: Bool
            var headerMessageCount: Int?
            var intactMessageCount: Int
            var intactBytes: Int
            var damagedRanges: [ByteRange]
            var tornAppendRanges: [ByteRange]

            func encode(to encoder: any Encoder) throws {
                enum Keys: String, CodingKey {
                    case file, intact, headerIntact, maximumBytes, overwritesOldMessages, headerMessageCount
                    case intactMessageCount, intactBytes, damagedRanges, tornAppendRanges
                }
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(file, forKey: .file)
                try container.encode(intact, forKey: .intact)
                try container.encode(headerIntact, forKey: .headerIntact)
                try container.encode(maximumBytes, forKey: .maximumBytes)
                try container.encode(overwritesOldMessages, forKey: .overwritesOldMessages)
                try container.encode(headerMessageCount, forKey: .headerMessageCount)  // null: header unreadable
                try container.encode(intactMessageCount, forKey: .intactMessageCount)
                try container.encode(intactBytes, forKey: .intactBytes)
                try container.encode(damagedRanges, forKey: .damagedRanges)
                try container.encode(tornAppendRanges, forKey: .tornAppendRanges)
            }
        }

        func run() async throws {
            let url = try LogFile.resolve(file)
            let report = try LogFile.open(url).verify()
            if json {
                try JSONOutput.print(
                    Output(
                        file: url.standardizedFileURL.path, intact: report.isIntact,
                        headerIntact: report.isHeaderIntact, maximumBytes: report.maximumBytes,
                        overwritesOldMessages: report.overwritesOldMessages,
                        headerMessageCount: report.headerMessageCount,
                        intactMessageCount: report.intactMessageCount, intactBytes: report.intactBytes,
                        damagedRanges: report.damagedRanges.map {
                            Output.ByteRange(start: $0.lowerBound, end: $0.upperBound)
                        },
                        tornAppendRanges: report.tornAppendRanges.map {
                            Output.ByteRange(start: $0.lowerBound, end: $0.upperBound)
                        }))
                if !report.isIntact { throw ExitCode(1) }
                return
            }
            print(report)
            if !report.isIntact {
                if report.isHeaderIntact && report.damagedRanges.isEmpty && !report.tornAppendRanges.isEmpty {
                    print("opening the log for writing (with its settings) drops the torn append")
                } else {
                    print("to repair it, call recover() on a MessageLog opened with the log's settings")
                }
                throw ExitCode(1)
            }
        }
    }
}

/// What the `hoard log` subcommands share.
enum LogFile {
    /// The help of every `FILE` argument.
    static let argumentHelp = ArgumentHelp(
        "The message log: its file, or the name of a log in the default location (hoard-logs in the user's cache directory).",
        discussion:
            "An argument with a '/', or naming something that exists, is a path; any other is a name, with or without .log.",
        valueName: "log")

    /// The log's file: `argument` as a path when it contains a `/` or names something
    /// that exists, otherwise `<name>.log` in the default logs folder (which is then
    /// said on standard error).
    static func resolve(_ argument: String) throws -> URL {
        let expanded = (argument as NSString).expandingTildeInPath
        if argument.contains("/") || FileManager.default.fileExists(atPath: expanded) {
            return URL(fileURLWithPath: expanded)
        }
        let file = argument.hasSuffix(".log") ? argument : argument + ".log"
        let url = try LocalStorage().logsDirectory.appendingPathComponent(file)
        StandardError.write(Data("log \(StoreFormat.quoted(argument)): \(url.path)\n".utf8))
        return url
    }

    /// Opens a log of raw messages for reading only.
    static func open(_ argument: String) throws -> MessageLog<Data> {
        try open(resolve(argument))
    }

    /// Opens the log at `url` for reading only.
    ///
    /// Anything at the path but a regular file (or a symbolic link to one) is refused
    /// before it is opened, seen with `stat` (``_LogFile/nonRegularKind(atPath:)``,
    /// the check the library makes on the descriptor it opens): a device or socket
    /// holds no log, and opening a device may act on it. A missing or unreadable
    /// path is for the log's own error to report.
    static func open(_ url: URL) throws -> MessageLog<Data> {
        if let kind = _LogFile.nonRegularKind(atPath: url.path) {
            throw StoreCommandError("\(url.path) is \(kind), not a message log file; nothing was opened")
        }
        return try MessageLog<Data>(forReadingFrom: url, codec: .cacheValue)
    }

    /// One message as one line of JSON: the message itself when it is JSON, a JSON string
    /// of its bytes in base64 otherwise.
    static func jsonLine(_ message: Data) -> String {
        if let object = try? JSONSerialization.jsonObject(with: message, options: [.fragmentsAllowed]) {
            if !message.contains(UInt8(ascii: "\n")), !message.contains(UInt8(ascii: "\r")),
                let text = String(data: message, encoding: .utf8)
            {
                return text
            }
            // Valid JSON across several lines: the same value on one line.
            if let compact = try? JSONSerialization.data(withJSONObject: object, options: [.fragmentsAllowed]),
                let text = String(data: compact, encoding: .utf8)
            {
                return text
            }
        }
        return "\"\(message.base64EncodedString())\""
    }
}
