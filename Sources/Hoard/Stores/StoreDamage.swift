/// A damaged entry (or a damaged part of a store): where it is and what is wrong.
///
/// Reads report damage through the store's events and treat the entry as a miss;
/// ``CacheStore/verify(repairing:)`` lists every one it finds.
public struct StoreDamage: Sendable, Hashable, CustomStringConvertible {
    /// What kind of damage this is. New reasons may be added in later versions, so
    /// `switch` over it with a `default` clause.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The raw name of the reason, stable across versions.
        public let rawValue: String

        /// Creates a reason from its raw name.
        public init(_ rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// The file holding a large value is gone.
        public static let missingFile = Reason("missingFile")
        /// The file holding a large value does not have the size its row records:
        /// truncated, or overwritten.
        public static let fileSizeMismatch = Reason("fileSizeMismatch")
        /// The value's bytes (inline in the index or in its file) do not match the
        /// CRC-32C stored with them: changed on disk since they were written.
        public static let checksumMismatch = Reason("checksumMismatch")
        /// The entry's row names a value file that other entries' rows name too, and
        /// the file does not hold this entry's value: the index was damaged (each
        /// write names a file of its own). Found by
        /// ``DiskStore/verify(repairing:progress:)``; a read sees the file's bytes
        /// fail this entry's checksum (or size), a miss. Repairing removes the row
        /// and keeps the file while another row names it: the file may hold that
        /// entry's intact value. Removing, overwriting or evicting either entry
        /// likewise never deletes a file another row still names.
        public static let sharedFile = Reason("sharedFile")
        /// The entry's row in the index has a value of the wrong type or size, or
        /// refers to a file by a name the store never writes.
        public static let malformedRow = Reason("malformedRow")
        /// The stored bytes do not decode as the type asked for: another type's
        /// value, or one written by an older version of the type. Reported, never
        /// removed by a read.
        public static let undecodableValue = Reason("undecodableValue")
        /// The stored value is not of the type the store writes: in a settings
        /// suite, something other than the encoded bytes a ``SettingsStore`` puts
        /// there (a number, a string, a dictionary written by other code).
        public static let unexpectedType = Reason("unexpectedType")
        /// A value file in the store's `blobs/` directory that no entry refers to.
        public static let orphanedFile = Reason("orphanedFile")
        /// A temporary file in the store's `blobs/` directory that a write left when
        /// it was interrupted (its process killed): it holds no entry's value and
        /// only takes space. Not damage: ``VerificationReport/isHealthy`` ignores
        /// it. Opening the store while no other instance has it open deletes it, and
        /// so does a repairing verify once it is ten minutes old.
        public static let temporaryFile = Reason("temporaryFile")
        /// SQLite's own integrity check found a problem in the index database.
        public static let damagedIndex = Reason("damagedIndex")
        /// The per-namespace totals the store keeps disagree with its entries, or
        /// (with no namespace) the row up to which they count is above the last
        /// entry, or is missing or in several copies, so that entries written next
        /// would not be counted. Repairing counts the entries again.
        public static let wrongTotals = Reason("wrongTotals")
        /// The access order the store evicts by disagrees with its entries: an
        /// access time without an entry, or one that is not a number. Values are
        /// intact; repairing drops such times (an entry without one counts as
        /// accessed when stored).
        public static let wrongAccessTimes = Reason("wrongAccessTimes")
        /// A value file exists but cannot be read (permissions, an I/O error): not
        /// damage, so ``DiskStore/verify(repairing:)`` reports it and never removes it.
        public static let unreadableFile = Reason("unreadableFile")
    }

    /// The namespace of the damaged entry, when the damage concerns one entry.
    public var namespace: String?
    /// The key of the damaged entry, when the damage concerns one entry.
    public var key: String?
    /// What kind of damage this is.
    public var reason: Reason
    /// A sentence saying what exactly is wrong.
    public var detail: String
    /// Whether ``CacheStore/verify(repairing:)`` repaired it: the damaged entry is
    /// gone, the orphaned file deleted, the totals or access times rewritten. Always
    /// `false` when nothing was asked to repair, and for damage that is never
    /// repaired (``Reason/damagedIndex``, ``Reason/unreadableFile``, an orphaned file
    /// too young to delete or that could not be deleted).
    public var isRepaired: Bool

    /// Creates a damage report.
    public init(namespace: String?, key: String?, reason: Reason, detail: String, isRepaired: Bool = false) {
        self.namespace = namespace
        self.key = key
        self.reason = reason
        self.detail = detail
        self.isRepaired = isRepaired
    }

    public var description: String {
        var text = "\(reason)"
        if let namespace { text += " in namespace \"\(namespace.prefix(100))\"" }
        if let key { text += " for key \"\(key.prefix(200))\"" }
        return text + ": \(detail)"
    }
}
