import Foundation

/// The bytes a store holds for one key, with when they were stored and when they expire.
///
/// Stores deal in bytes; a cache turns them into values with its ``ValueCodec``. The
/// dates travel with the bytes, so a reader can apply `maxAge` and `newerThan`, and an
/// entry read from one tier can be written to another as it is.
public struct StoredEntry: Sendable, Hashable {
    /// The stored bytes, exactly as they were written.
    public var data: Data
    /// When the bytes were stored. A store keeps at least millisecond precision.
    public var storedAt: Date
    /// When the entry expires, or `nil` if it never does. A store keeps at least
    /// millisecond precision.
    public var expiresAt: Date?

    /// Creates an entry.
    ///
    /// - Parameters:
    ///   - data: The stored bytes.
    ///   - storedAt: When they were stored.
    ///   - expiresAt: When they expire, or `nil` for never.
    public init(data: Data, storedAt: Date, expiresAt: Date?) {
        self.data = data
        self.storedAt = storedAt
        self.expiresAt = expiresAt
    }
}
