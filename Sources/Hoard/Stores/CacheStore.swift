import Foundation

/// A local, synchronous store of bytes with dates, organised in namespaces: the
/// protocol the tiered `Cache` uses for its local tiers. ``DiskStore`` conforms.
///
/// Keys are the ``CacheKey/cacheKeyString`` of a cache's keys; a namespace keeps
/// one cache's keys apart from another's in the same store. Every method is
/// thread-safe and synchronous (local stores answer in microseconds to
/// milliseconds). Entries whose `expiresAt` has passed are misses.
///
/// Requirements take their full signatures; shorter forms live in extensions.
///
/// ```swift
/// let store: any CacheStore = try DiskStore(directory: url)
/// try store.set(bytes, for: "user:1", in: "users", storedAt: .now, expiresAt: nil)
/// let entry = try store.entry(for: "user:1", in: "users")   // StoredEntry?
/// ```
public protocol CacheStore: Sendable {
    /// The live entry for `key` in `namespace`, or `nil`.
    ///
    /// A damaged entry is a miss; the store removes and reports it rather than
    /// throwing.
    ///
    /// - Throws: ``HoardError`` when the store cannot be read at all.
    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry?

    /// Stores `data` for `key` in `namespace`, replacing any older value.
    ///
    /// - Parameters:
    ///   - data: The bytes to store.
    ///   - key: The key's string form.
    ///   - namespace: The namespace the key belongs to.
    ///   - storedAt: When the value was stored (a copied entry keeps its date).
    ///   - expiresAt: When the entry expires, or `nil` for never.
    /// - Throws: ``HoardError``; the store is unchanged when it throws.
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) throws(HoardError)

    /// Applies `batch` in order, in one transaction: all of it or none of it.
    ///
    /// - Throws: ``HoardError``; the store is unchanged when it throws.
    func write(_ batch: [CacheStoreWrite]) throws(HoardError)

    /// Removes the entry for `key` in `namespace`.
    ///
    /// - Returns: Whether there was an entry (expired ones included).
    @discardableResult
    func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool

    /// Removes every entry of `namespace`; other namespaces are untouched.
    ///
    /// - Returns: How many entries were removed.
    @discardableResult
    func removeAll(in namespace: String) throws(HoardError) -> Int

    /// The keys of the live entries of `namespace`, in byte order of their UTF-8
    /// form.
    func keys(in namespace: String) throws(HoardError) -> [String]

    /// Whether `namespace` holds a live entry for `key`. Does not count as an
    /// access and does not read the value.
    func contains(_ key: String, in namespace: String) throws(HoardError) -> Bool

    /// The entries and bytes of `namespace`.
    func usage(in namespace: String) throws(HoardError) -> StoreUsage

    /// The entries and bytes of the whole store, every namespace together.
    func totalUsage() throws(HoardError) -> StoreUsage

    /// Removes every expired entry, in every namespace.
    ///
    /// - Returns: How many entries were removed.
    @discardableResult
    func removeExpired() throws(HoardError) -> Int

    /// Evicts least-recently-accessed entries until the values total at most
    /// `maxBytes`.
    ///
    /// - Returns: How many entries were evicted.
    @discardableResult
    func trim(toBytes maxBytes: Int) throws(HoardError) -> Int

    /// Checks every entry and reports each damaged one with what is wrong.
    ///
    /// - Parameter repairing: Whether to remove what is damaged as well.
    /// - Returns: What was found.
    func verify(repairing: Bool) throws(HoardError) -> VerificationReport
}

extension CacheStore {
    /// Checks every entry without changing anything: ``verify(repairing:)`` with
    /// `false`.
    public func verify() throws(HoardError) -> VerificationReport {
        try verify(repairing: false)
    }

    /// Stores `data` for `key` in `namespace` as of `now`, expiring per `expires`.
    ///
    /// - Parameters:
    ///   - data: The bytes to store.
    ///   - key: The key's string form.
    ///   - namespace: The namespace the key belongs to.
    ///   - expires: The entry's lifetime.
    ///   - now: The stored date.
    public func set(_ data: Data, for key: String, in namespace: String, expires: Expiry, now: Date) throws(HoardError)
    {
        try set(data, for: key, in: namespace, storedAt: now, expiresAt: expires.date(storedAt: now))
    }
}
