/// What ``MessageLog/verify()`` found in a log file, or what ``MessageLog/recover()``
/// found before repairing it.
public struct MessageLogReport: Sendable, Hashable, CustomStringConvertible {
    /// Whether the 64-byte header passed its checksum and describes a possible log.
    public var isHeaderIntact: Bool
    /// The budget the header states (the instance's own when the header is damaged).
    public var maximumBytes: Int
    /// The overwrite setting the header states (the instance's own when the header is
    /// damaged).
    public var overwritesOldMessages: Bool
    /// How many messages the header counts, or `nil` when the header is damaged.
    public var headerMessageCount: Int?
    /// How many intact messages were found: what ``MessageLog/recover()`` keeps.
    public var intactMessageCount: Int
    /// The bytes the intact messages take in the file, their 8-byte prefixes included.
    public var intactBytes: Int
    /// Byte ranges where messages should be but no intact one is.
    public var damagedRanges: [Range<Int>]
    /// The byte ranges of a torn last append (a crash between an append's header and
    /// its records), which opening the log for writing drops.
    public var tornAppendRanges: [Range<Int>]

    /// Whether the log is exactly as its header says: nothing damaged, nothing torn.
    public var isIntact: Bool {
        isHeaderIntact && damagedRanges.isEmpty && tornAppendRanges.isEmpty && headerMessageCount == intactMessageCount
    }

    /// Creates a report.
    public init(
        isHeaderIntact: Bool, maximumBytes: Int, overwritesOldMessages: Bool, headerMessageCount: Int?,
        intactMessageCount: Int, intactBytes: Int, damagedRanges: [Range<Int>], tornAppendRanges: [Range<Int>]
    ) {
        self.isHeaderIntact = isHeaderIntact
        self.maximumBytes = maximumBytes
        self.overwritesOldMessages = overwritesOldMessages
        self.headerMessageCount = headerMessageCount
        self.intactMessageCount = intactMessageCount
        self.intactBytes = intactBytes
        self.damagedRanges = damagedRanges
        self.tornAppendRanges = tornAppendRanges
    }

    /// Several lines: the verdict, the numbers, and each damaged range.
    public var description: String {
        var lines: [String] = []
        if isIntact {
            lines.append("intact: \(intactMessageCount) messages")
        } else if !isHeaderIntact {
            lines.append(
                "damaged header: \(intactMessageCount) intact messages found by scanning; recover() keeps them")
        } else if damagedRanges.isEmpty && tornAppendRanges.isEmpty {
            lines.append(
                "damaged: the header counts \(headerMessageCount ?? 0) messages but \(intactMessageCount) were found")
        } else if damagedRanges.isEmpty {
            lines.append(
                "torn last append: \(intactMessageCount) intact messages; opening the log for writing drops the torn part"
            )
        } else {
            lines.append("damaged: \(intactMessageCount) intact messages; recover() keeps them and drops the rest")
        }
        let flag = overwritesOldMessages ? "overwrites old messages" : "does not overwrite"
        lines.append("budget: \(maximumBytes) bytes (\(flag)); messages use \(intactBytes) bytes")
        if let headerMessageCount { lines.append("header counts \(headerMessageCount) messages") }
        for range in damagedRanges { lines.append("damaged bytes \(range.lowerBound)..<\(range.upperBound)") }
        for range in tornAppendRanges { lines.append("torn bytes \(range.lowerBound)..<\(range.upperBound)") }
        return lines.joined(separator: "\n")
    }
}
