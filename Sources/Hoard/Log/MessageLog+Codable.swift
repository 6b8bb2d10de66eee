import Foundation
import Logging

extension MessageLog where Message: Codable {
    /// Opens the log at `fileURL` (creating the file when missing) for a `Codable`
    /// message type, stored as JSON with ISO-8601 dates (``ValueCodec/json``).
    ///
    /// ```swift
    /// let log = try MessageLog<Event>(fileURL: url, maximumBytes: 1 << 20, overwritesOldMessages: true)
    /// ```
    ///
    /// - Throws: As ``init(fileURL:maximumBytes:overwritesOldMessages:durability:codec:logger:)``.
    public convenience init(
        fileURL: URL, maximumBytes: Int, overwritesOldMessages: Bool, durability: Durability = .none,
        logger: Logger? = nil
    ) throws(HoardError) {
        try self.init(
            fileURL: fileURL, maximumBytes: maximumBytes, overwritesOldMessages: overwritesOldMessages,
            durability: durability, codec: .json, logger: logger)
    }

    /// Opens an existing log of JSON messages to read it; see
    /// ``init(forReadingFrom:codec:logger:)``.
    ///
    /// - Throws: As ``init(forReadingFrom:codec:logger:)``.
    public convenience init(forReadingFrom fileURL: URL, logger: Logger? = nil) throws(HoardError) {
        try self.init(forReadingFrom: fileURL, codec: .json, logger: logger)
    }
}
