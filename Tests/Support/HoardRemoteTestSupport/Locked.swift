#if Redis || Postgres
import Synchronization

/// A value behind a `Mutex`, shareable between closures and tasks.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// A lock holding `value`.
    public init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with the value, exclusively, and returns its result.
    public func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}
#endif
