import Foundation

extension LocalStorage {
    /// What ``LocalStorage/deleteAll(namePrefix:)`` deleted and what it left.
    public struct DeletionReport: Sendable, CustomStringConvertible {
        /// The stores deleted, by name (`<program>/<store>`, or `<store>`).
        public var deletedStores: [String] = []
        /// The log files deleted, by file name.
        public var deletedLogs: [String] = []
        /// The settings namespaces deleted, with the values they held.
        public var deletedSettings: [(namespace: String, count: Int)] = []
        /// Paths that were left, each with the reason: a store another instance has
        /// open, files in a store directory that Hoard did not write, or a directory
        /// in the cache directory that could not be looked into (no permission to
        /// list it, a read error), so that a store in it was not deleted.
        public var kept: [(path: String, reason: String)] = []

        /// Whether everything was deleted.
        public var isComplete: Bool { kept.isEmpty }

        /// One line of totals, then one line per path kept, with its reason; the
        /// control characters of a path or reason (a line break, a terminal escape
        /// sequence in a file name) are shown as escapes.
        public var description: String {
            func count(_ count: Int, _ singular: String, _ plural: String) -> String {
                "\(count) \(count == 1 ? singular : plural)"
            }
            var text =
                "deleted \(count(deletedStores.count, "store", "stores")), \(count(deletedLogs.count, "log", "logs")), "
                + count(deletedSettings.count, "settings namespace", "settings namespaces")
            for (path, reason) in kept { text += "\nkept \(Self.visible(path)): \(Self.visible(reason))" }
            return text
        }

        /// `text` with its control characters (a line break, an escape sequence
        /// that would move a terminal's cursor) shown as escapes: a path or a file
        /// name comes from the disk, and must not forge or hide a line of the report.
        static func visible(_ text: String) -> String {
            var shown = ""
            for scalar in text.unicodeScalars {
                if scalar.properties.generalCategory == .control {
                    shown += scalar.escaped(asASCII: true)
                } else {
                    shown.unicodeScalars.append(scalar)
                }
            }
            return shown
        }
    }

    /// Deletes every store in ``cachesDirectory``, every log in ``logsDirectory``
    /// (and the folder, once empty), and every settings suite.
    ///
    /// Only what Hoard writes is removed: a store's index, write-ahead files, lock
    /// file and value files (by the names the store gives them), log files that
    /// start with a log header, and the settings suites the registry lists. A store
    /// directory that still holds anything else stays, with those files, and is
    /// reported in ``DeletionReport/kept``; so is a store that another instance or
    /// process has open, and a directory in ``cachesDirectory`` that cannot be looked
    /// into (it may be or hold a store), with the error. Symbolic links are never
    /// followed.
    ///
    /// A log another process has open is deleted (its messages stay readable to that
    /// process until it closes the file). A process that starts opening a store at
    /// the moment it is deleted may get a ``HoardError/Code/notAStore`` error or a new,
    /// empty store: delete while the programs that use Hoard are not running.
    ///
    /// With a `namePrefix`, only the stores, log files and settings namespaces whose
    /// names start with it are deleted (say, one application's `com.example.`), and
    /// the logs folder stays.
    ///
    /// - Parameter namePrefix: Delete only what is named with this prefix; `nil` (the
    ///   default) deletes everything.
    /// - Returns: What was deleted and what was kept.
    /// - Throws: ``HoardError`` when ``cachesDirectory`` or ``logsDirectory`` cannot
    ///   be listed, or a file cannot be removed; what was deleted before that stays
    ///   deleted. (A directory in ``cachesDirectory`` that cannot be looked into is
    ///   not an error: it is reported in ``DeletionReport/kept``.)
    @discardableResult
    public func deleteAll(namePrefix: String? = nil) throws(HoardError) -> DeletionReport {
        var report = DeletionReport()
        let matches = { (name: String) in namePrefix.map { name.hasPrefix($0) } ?? true }
        var programs: Set<String> = []
        let listing = try storeListing()
        for (name, error) in listing.unreadable(matching: namePrefix) {
            let reason = "could not be looked into, so no store in it was deleted: \(error.code): \(error.message)"
            report.kept.append((cachesDirectory.path + "/" + name, reason))
        }
        for name in listing.names where matches(name) {
            let path = cachesDirectory.path + "/" + name
            if let reason = try _StoreRemoval.delete(path) {
                report.kept.append((path, reason))
            } else {
                report.deletedStores.append(name)
                if let slash = name.firstIndex(of: "/") { programs.insert(String(name[..<slash])) }
            }
        }
        // A program's folder goes with its last store; one that holds anything else stays.
        for program in programs { _ = rmdir(cachesDirectory.path + "/" + program) }
        for name in try logNames() where matches(name) {
            try _FileSystem.removeFile(logsDirectory.path + "/" + name)
            report.deletedLogs.append(name)
        }
        // Namespaces other processes wrote since this process read the registry.
        try settings.takeInNamespacesOnDisk()
        if let namePrefix {
            for namespace in settings.namespaces() where namespace.name.hasPrefix(namePrefix) {
                report.deletedSettings.append((namespace.name, try settings.removeAll(in: namespace.name)))
            }
            return report
        }
        if _FileSystem.kind(at: logsDirectory.path) == .directory, rmdir(logsDirectory.path) != 0, errno != ENOENT {
            let left = ((try? _FileSystem.contents(of: logsDirectory.path)) ?? []).sorted().prefix(5)
            report.kept.append(
                (logsDirectory.path, "the folder holds files that are not logs: \(left.joined(separator: ", "))"))
        }
        report.deletedSettings = try settings.removeEverything().map { ($0.name, $0.count) }
        return report
    }
}
