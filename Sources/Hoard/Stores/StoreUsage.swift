/// How many entries a store (or one of its namespaces) holds and how many bytes
/// their values take.
///
/// Bytes are the values' sizes only. The files on disk are larger: they also hold
/// keys, dates and the index's own structure.
public struct StoreUsage: Sendable, Hashable, CustomStringConvertible {
    /// The number of entries, expired ones not yet removed included.
    public var count: Int
    /// The total size of the entries' values, in bytes.
    public var bytes: Int

    /// Creates a usage figure.
    public init(count: Int = 0, bytes: Int = 0) {
        self.count = count
        self.bytes = bytes
    }

    public var description: String {
        "\(count) \(count == 1 ? "entry" : "entries"), \(bytes) bytes"
    }
}
