import Logging
import Synchronization

/// A log handler that keeps every record, for tests.
public final class RecordingLogHandler: LogHandler, Sendable {
    /// One log record.
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    private let stored = Mutex<[Record]>([])
    /// Creates a handler with no records, logging every level.
    public init() {}

    private let settings = Mutex<(level: Logger.Level, metadata: Logger.Metadata)>((.trace, [:]))

    /// Every record so far, oldest first.
    public var records: [Record] { stored.withLock { $0 } }

    public var logLevel: Logger.Level {
        get { settings.withLock { $0.level } }
        set { settings.withLock { $0.level = newValue } }
    }
    public var metadata: Logger.Metadata {
        get { settings.withLock { $0.metadata } }
        set { settings.withLock { $0.metadata = newValue } }
    }
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let record = Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
        stored.withLock { $0.append(record) }
        let ready = waiters.withLock { waiters in
            let ready = waiters.filter { $0.matches(record) }
            waiters.removeAll { $0.matches(record) }
            return ready
        }
        for waiter in ready { waiter.continuation.resume(returning: record) }
    }

    private struct Waiter: Sendable {
        var matches: @Sendable (Record) -> Bool
        var continuation: CheckedContinuation<Record, Never>
    }

    private let waiters = Mutex<[Waiter]>([])

    /// The first record, logged before or after this call, that `matches`:
    /// waits for it instead of for a time.
    public func record(where matches: @escaping @Sendable (Record) -> Bool) async -> Record {
        await withCheckedContinuation { continuation in
            // Under the waiters' lock, so that a record logged meanwhile is seen
            // either here or by log(event:).
            let found = waiters.withLock { waiters -> Record? in
                if let found = stored.withLock({ $0.first(where: matches) }) { return found }
                waiters.append(Waiter(matches: matches, continuation: continuation))
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// A logger that writes to this handler.
    public func logger() -> Logger {
        Logger(label: "test") { _ in self }
    }
}
