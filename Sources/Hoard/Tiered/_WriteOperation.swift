import Foundation

/// One change of a ``Cache``'s content, with its place in the writer's order.
@usableFromInline
struct _WriteOperation<Key: CacheKey, Value: Sendable>: Sendable {
    /// What the change does.
    @usableFromInline
    enum Kind: Sendable {
        /// A caller's value, for every store, with its dates in every tier.
        case set(Key, Value, _WriteDates)
        /// A value found in a slower tier, and its bytes, for the local stores
        /// before `localStoresBefore` (reads answer the value until they hold it).
        case promote(Key, Value, Data, storedAt: Date, expiresAt: Date?, localStoresBefore: Int)
        /// A removal; from the remote stores as well when `remote` is true.
        case remove(Key, remote: Bool)
        /// A removal from the local stores of a key known only by its string
        /// (another instance's invalidation of a key this one never saw).
        case removeLocally(String)
        /// A clear of the cache's namespace in the chosen tiers.
        case removeAll(local: Bool, remote: Bool)

        /// The key the change is about, when it names one.
        var key: Key? {
            switch self {
            case .set(let key, _, _), .promote(let key, _, _, _, _, _), .remove(let key, _): key
            case .removeLocally, .removeAll: nil
            }
        }
    }

    /// The change's place in the order: every change gets a greater one than the
    /// changes made before it.
    @usableFromInline var sequence: UInt64
    @usableFromInline var kind: Kind
    /// Called once every store has applied the operation (only the local stores
    /// when `completesLocally`), with the first error.
    @usableFromInline var completion: (@Sendable ((any Error)?) -> Void)?
    @usableFromInline var completesLocally: Bool
    /// The bytes this operation counts against the queue's budget until it is
    /// applied (``_WriterState/queuedBytes``).
    @usableFromInline var bytes: Int

    @inlinable  // CacheBenchmarks "assign caller side 1KiB: Cache over DiskStore"
    init(
        sequence: UInt64, kind: Kind, completion: (@Sendable ((any Error)?) -> Void)?,
        completesLocally: Bool = false, bytes: Int = 0
    ) {
        self.sequence = sequence
        self.kind = kind
        self.completion = completion
        self.completesLocally = completesLocally
        self.bytes = bytes
    }
}
