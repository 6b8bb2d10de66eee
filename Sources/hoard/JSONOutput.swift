import Foundation

/// Machine-readable output of the `--json` options: one JSON object per line, keys
/// sorted, dates as ISO 8601 strings with their offset (``StoreFormat/date(_:)``),
/// absent values as `null`.
enum JSONOutput {
    /// Prints `value` as one line of JSON on standard output.
    static func print(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        StandardOutput.write(data + Data("\n".utf8))
    }
}
