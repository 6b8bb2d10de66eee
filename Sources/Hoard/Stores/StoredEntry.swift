import Foundation

/// The bytes a ``CacheStore`` holds for one key, with when they were stored and
/// when they expire.
///
/// Stores return only live entries: an entry whose ``expiresAt`` has passed is a
/// miss.
public struct StoredEntry: Sendable, Hashable {
    /// The stored bytes.
    public var data: Data
    /// When the bytes were stored, as the writer gave it.
    public var storedAt: Date
    /// When the entry expires, or `nil` if it never does.
    public var expiresAt: Date?

    /// Creates an entry.
    public init(data: Data, storedAt: Date, expiresAt: Date?) {
        self.data = data
        self.storedAt = storedAt
        self.expiresAt = expiresAt
    }
}
