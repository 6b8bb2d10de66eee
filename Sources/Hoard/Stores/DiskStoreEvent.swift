/// Something a ``DiskStore`` did or ran into that no caller asked about directly,
/// as its ``DiskStore/events`` stream and ``DiskStore/Configuration/onEvent``
/// handler report it.
///
/// Nothing that goes wrong behind a caller's back is dropped silently: damaged
/// entries found by reads, failures of deferred work (recording access times,
/// deleting replaced files) and the clean-up done at open all arrive here.
public enum DiskStoreEvent: Sendable {
    /// A read found a damaged entry (a malformed row, a missing or truncated value
    /// file, bytes that do not match their CRC-32C), treated it as a miss and
    /// removed it.
    case removedDamaged(StoreDamage)
    /// A typed read found an intact value that does not decode as the type asked
    /// for (another type's value, or an older version of the type) and treated it
    /// as a miss. The entry was kept: only damage removes an entry.
    case undecodable(StoreDamage)
    /// Expired entries were removed: one at a time by reads, in bulk by
    /// ``DiskStore/removeExpired()``.
    case expired(count: Int)
    /// Least-recently-accessed entries were evicted to respect a limit or by a trim.
    case evicted(count: Int, bytes: Int)
    /// Files left behind by interrupted writes (temporary files, and files no entry
    /// refers to) were deleted when the store opened.
    case collectedOrphans(files: Int, bytes: Int)
    /// Work the store does on its own failed. The store stays usable; `operation`
    /// says what was attempted, and `namespace` and `key` which entry it concerned,
    /// when one.
    case failed(operation: String, namespace: String?, key: String?, error: HoardError)
}
