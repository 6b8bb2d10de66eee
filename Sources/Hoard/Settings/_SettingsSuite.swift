import Foundation

/// One `UserDefaults` suite of a settings domain (a namespace's, or the registry),
/// read whole and changed by read-merge-write.
///
/// **On Linux** (swift-corelibs-foundation) a suite is the property list
/// `<folder>/<name>.plist`, and Foundation's own `synchronize()` writes the
/// process's copy of it over whatever another process wrote since it was read: two
/// processes writing one namespace lost most of each other's values. Hoard reads and
/// writes that file itself, in the place and format Foundation uses (so
/// `UserDefaults` still reads it):
///
/// - every change holds an exclusive `flock(2)` on the lock file beside the suite
///   (`<name>.plist.lock`) while it reads the file's current content, merges its
///   change in, and writes the result to a temporary file that it flushes and
///   renames over the suite file: each change from any process goes into the latest
///   file, and a reader sees the old file or the new one, never part of one;
/// - a file that is not a property-list dictionary (truncated, garbage) is renamed,
///   under that lock, to `<name>.plist.damaged-<time>-<random>` (a name no file has,
///   so no kept copy is ever overwritten), and a new file is started;
/// - a change that leaves the suite empty deletes the file and then its lock file,
///   still holding the lock; a process that waited for that lock sees that the name
///   no longer refers to the file it locked and locks the one there now;
/// - a change brings the registry's list of namespaces in line with the suite
///   (``update(listing:_:)``) while it still holds the suite's lock: before it writes
///   values, and after it deleted the file but before it deletes the lock file. No
///   change of the suite from any process can come between the two.
///
/// Every descriptor it opens is close-on-exec.
///
/// **On Apple platforms** suites belong to `cfprefsd`, which merges changes key by
/// key across processes and owns the files: the suite is changed through
/// `UserDefaults`, one key at a time, and a damaged file is cfprefsd's to handle.
struct _SettingsSuite: Sendable {
    /// The suite's name: `<domain>` for the registry, `<domain>.<namespace>`.
    let name: String
    /// The namespace, or `nil` for the registry suite.
    let namespace: String?

    /// What reading the suite found.
    struct Loaded {
        /// The suite's values; empty when a damaged file was kept aside.
        var values: [String: Any]
        /// The damaged file that was kept aside, if there was one.
        var keptAside: SettingsSuiteDamage?
    }

    /// Reads the suite. A damaged file is kept aside (see the type's notes) and
    /// reads as empty. Reading an intact or missing file takes no lock and
    /// creates no file.
    ///
    /// - Throws: ``HoardError/Code/ioFailed`` (or the code of the `errno`) when the
    ///   file exists but cannot be read, or the damaged file could not be kept aside;
    ///   nothing was changed then.
    func load() throws(HoardError) -> Loaded {
        #if canImport(Darwin)
        let suite = UserDefaults(suiteName: name) ?? .standard
        return Loaded(values: suite.persistentDomain(forName: name) ?? [:])
        #else
        // Files are replaced by renames, so a read without the lock sees a whole
        // file: reading creates no lock file. Damage is confirmed under the lock
        // (a writer may have just replaced the file) before the file is moved.
        if case .values(let values) = try read() { return Loaded(values: values) }
        return try withLock { () throws(HoardError) -> Loaded in
            switch try read() {
            case .values(let values):
                return Loaded(values: values)
            case .damaged(let detail):
                return Loaded(values: [:], keptAside: try keepAside(detail))
            }
        }
        #endif
    }

    /// Changes the suite: `merge` gets what the suite holds now (`nil` when its file
    /// was damaged and has just been kept aside) and returns what it is to hold.
    /// An empty result deletes the suite.
    ///
    /// `listing` gets whether the suite holds values after the change, and runs
    /// before they are written, or after the emptied suite's file is deleted (on
    /// Linux, before its lock file goes): a namespace's suite lists or unlists it in
    /// the registry there, so that no other process's change of the suite comes
    /// between the file and the registry. When it throws, a suite that was to hold
    /// values is as it was, and an emptied one stays deleted.
    ///
    /// `merge` and `listing` run while the suite is locked against every other
    /// process's change, so they must not wait for anything that such a change waits
    /// for. (They may lock the registry suite: a suite's lock, then the registry's,
    /// is the one order these locks are taken in.)
    ///
    /// - Returns: The damaged file that was kept aside, if there was one.
    /// - Throws: ``HoardError/Code/ioFailed`` (or the code of the `errno`) when the
    ///   suite could not be read, locked or written; the suite is then as it was.
    func update(
        listing: (_ holdsValues: Bool) throws(HoardError) -> Void = { _ in },
        _ merge: (_ current: [String: Any]?) -> [String: Any]
    ) throws(HoardError) -> SettingsSuiteDamage? {
        #if canImport(Darwin)
        let suite = UserDefaults(suiteName: name) ?? .standard
        let before = suite.persistentDomain(forName: name) ?? [:]
        let after = merge(before)
        if after.isEmpty {
            suite.removePersistentDomain(forName: name)
            try listing(false)
        } else {
            try listing(true)
            for key in before.keys where after[key] == nil { suite.removeObject(forKey: key) }
            for (key, value) in after where !Self.same(before[key], value) { suite.set(value, forKey: key) }
        }
        guard suite.synchronize() else {
            throw HoardError(
                .ioFailed,
                "the settings suite \(name) could not be written to disk; the change holds in this process only")
        }
        return nil
        #else
        return try withLock { () throws(HoardError) -> SettingsSuiteDamage? in
            var keptAside: SettingsSuiteDamage?
            var current: [String: Any]?
            switch try read() {
            case .values(let values):
                current = values
            case .damaged(let detail):
                keptAside = try keepAside(detail)
            }
            let merged = merge(current)
            if merged.isEmpty {
                try _FileSystem.removeFile(path)
                try listing(false)
                try _FileSystem.removeFile(lockPath)
            } else {
                try listing(true)
                try write(merged)
            }
            return keptAside
        }
        #endif
    }

    /// Whether a stored value is the one about to be written (only the types a
    /// settings store writes are compared; any other value counts as different).
    static func same(_ stored: Any?, _ value: Any) -> Bool {
        if let stored = stored as? Data, let value = value as? Data { return stored == value }
        if let stored = stored as? Bool, let value = value as? Bool { return stored == value }
        return false
    }

    // MARK: Files (Linux)

    /// The folder swift-corelibs-foundation keeps suites in: `$XDG_CONFIG_HOME`
    /// when it is an absolute path, `$HOME/.config` otherwise.
    static var folder: String {
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config }
        return (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.config"
    }

    /// The suite's file.
    var path: String { Self.folder + "/" + name + ".plist" }
    /// The lock file every change of the suite holds.
    var lockPath: String { path + ".lock" }
    /// What the name of a kept-aside copy starts with.
    var keptAsidePrefix: String { name + ".plist.damaged-" }

    /// The namespaces of the domain whose registry suite is named `registry` that
    /// have a suite file in ``folder``: every file `<registry>.<namespace>.plist`.
    /// What the registry lists when its own file was damaged and kept aside, or is
    /// missing, so that namespaces other processes wrote are not dropped from it.
    /// Empty on Apple platforms, where the suites' files are cfprefsd's.
    static func namespacesWithFiles(registry: String) -> [String] {
        #if canImport(Darwin)
        return []
        #else
        let prefix = registry + "."
        let suffix = ".plist"
        return ((try? _FileSystem.contents(of: folder)) ?? []).compactMap { name in
            guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count > prefix.count + suffix.count else {
                return nil
            }
            return String(name.dropFirst(prefix.count).dropLast(suffix.count))
        }
        #endif
    }

    /// The paths of the damaged files of this suite kept aside so far, oldest first.
    /// Empty on Apple platforms, where damage is cfprefsd's to handle.
    func keptAsideFiles() -> [String] {
        #if canImport(Darwin)
        return []
        #else
        let folder = Self.folder
        let prefix = keptAsidePrefix
        // A kept copy's suffix has no dot, so a namespace whose name extends this
        // one's (its file ends in ".plist") is never taken for one.
        let names = ((try? _FileSystem.contents(of: folder)) ?? []).filter { name in
            name.hasPrefix(prefix) && !name.dropFirst(prefix.count).contains(".")
        }
        return names.sorted().map { folder + "/" + $0 }
        #endif
    }

    /// What the suite's file holds.
    private enum Contents {
        case values([String: Any])
        /// Not a property-list dictionary: the sentence says what is wrong.
        case damaged(String)
    }

    /// Reads the suite's file; a missing file is an empty suite. Before a change,
    /// call under the lock.
    private func read() throws(HoardError) -> Contents {
        let path = path
        let fd: Int32
        // Without waiting for a writer, should the path name a FIFO.
        switch _POSIX.openFile(path, writable: false, create: false, nonBlocking: true) {
        case .success(let opened): fd = opened
        case .failure(let failure) where failure.isNoSuchFile: return .values([:])
        case .failure(let failure):
            throw _FileSystem.error("could not open the settings suite", path: path, errno: failure.code)
        }
        defer { _POSIX.closeFile(fd) }
        // Only a regular file is a suite: a FIFO would never end a read, nor would a
        // device such as /dev/zero. It is refused, and never kept aside or replaced.
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw _FileSystem.error("could not inspect the settings suite", path: path, errno: errno)
        }
        if let kind = _LogFile.nonRegularKind(info.st_mode) {
            throw HoardError(
                .ioFailed,
                "the settings suite's path names \(kind), not a regular file, so it holds no settings; it was not changed",
                path: path)
        }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1_024)
        while true {
            let result = chunk.withUnsafeMutableBytes { _POSIX.read(fd, into: $0, at: data.count) }
            switch result {
            case .success(let count):
                data.append(contentsOf: chunk[0..<count])
                if count < chunk.count { return Self.parse(data) }
            case .failure(let failure):
                throw _FileSystem.error("could not read the settings suite", path: path, errno: failure.code)
            }
        }
    }

    /// The values of a suite file's bytes, or what is wrong with them.
    private static func parse(_ data: Data) -> Contents {
        guard !data.isEmpty else { return .damaged("the file is empty (0 bytes), not a property list") }
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            return .damaged("the file's \(data.count) bytes are not a property list: \(error.localizedDescription)")
        }
        guard let values = object as? [String: Any] else {
            return .damaged("the file holds \(_SettingsValueDescription.describe(object)), not a dictionary")
        }
        return .values(values)
    }

    /// Renames the damaged file to a name no file has. Call under the lock.
    private func keepAside(_ detail: String) throws(HoardError) -> SettingsSuiteDamage {
        let time = String(Int(Date().timeIntervalSince1970))
        while true {
            let random = String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let kept = Self.folder + "/" + keptAsidePrefix + time + "-" + random
            // The placeholder, created exclusively, claims the name: the rename
            // then replaces only this empty file of ours, never a kept copy.
            switch _POSIX.openFile(kept, writable: true, create: true, exclusively: true) {
            case .success(let fd):
                _POSIX.closeFile(fd)
            case .failure(let failure) where failure.code == EEXIST:
                continue
            case .failure(let failure):
                throw _FileSystem.error(
                    "could not keep the damaged settings suite aside; nothing was changed", path: kept,
                    errno: failure.code)
            }
            guard rename(path, kept) == 0 else {
                let code = errno
                throw _FileSystem.error(
                    "could not keep the damaged settings suite aside; nothing was changed"
                        + Self.removing(kept, what: "its empty placeholder"), path: path, errno: code)
            }
            try _FileSystem.syncDirectory(Self.folder)
            return SettingsSuiteDamage(namespace: namespace, path: path, keptAsidePath: kept, detail: detail)
        }
    }

    /// Writes `values` as the suite's file, atomically. Call under the lock.
    private func write(_ values: [String: Any]) throws(HoardError) {
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
        } catch {
            throw HoardError(
                .ioFailed, "the settings suite \(name) could not be encoded as a property list; nothing was written",
                path: path, underlying: error)
        }
        let temporary = path + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let fd: Int32
        switch _POSIX.openFile(temporary, writable: true, create: true, exclusively: true) {
        case .success(let opened): fd = opened
        case .failure(let failure):
            throw _FileSystem.error(
                "could not create the settings suite's new file", path: temporary, errno: failure.code)
        }
        var failure: _POSIX.Failure?
        if case .failure(let failed) = data.withUnsafeBytes({ _POSIX.write(fd, $0, at: 0) }) {
            failure = failed
        } else if case .failure(let failed) = _POSIX.synchronize(fd) {
            failure = failed
        }
        _POSIX.closeFile(fd)
        if let failure {
            throw _FileSystem.error(
                "could not write the settings suite's new file; the suite is as it was"
                    + Self.removing(temporary, what: "the partial new file"), path: path, errno: failure.code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            throw _FileSystem.error(
                "could not move the settings suite's new file into place; the suite is as it was"
                    + Self.removing(temporary, what: "the new file"), path: path, errno: code)
        }
        try _FileSystem.syncDirectory(Self.folder)
    }

    /// Removes a file a failed step left, for that step's error message: nothing
    /// when it went, a clause saying what is left otherwise.
    private static func removing(_ path: String, what: String) -> String {
        switch _POSIX.removeFile(path) {
        case .success: return ""
        case .failure(let failure): return " (\(what), \(path), is left: \(failure))"
        }
    }

    /// Runs `body` holding the suite's lock file exclusively, creating the folder
    /// and the lock file when missing.
    private func withLock<R>(_ body: () throws(HoardError) -> R) throws(HoardError) -> R {
        let folder = Self.folder
        if _FileSystem.kind(at: folder, followingLinks: true) == .missing {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw HoardError(
                    .ioFailed, "could not create the folder settings suites are kept in", path: folder,
                    underlying: error)
            }
        }
        let lockPath = lockPath
        while true {
            let fd: Int32
            switch _POSIX.openFile(lockPath, writable: true, create: true) {
            case .success(let opened): fd = opened
            case .failure(let failure):
                throw _FileSystem.error(
                    "could not open the settings suite's lock file", path: lockPath, errno: failure.code)
            }
            defer { _POSIX.closeFile(fd) }
            if case .failure(let failure) = _POSIX.lock(fd, .exclusive) {
                throw _FileSystem.error("could not lock the settings suite", path: lockPath, errno: failure.code)
            }
            // The lock file may have been deleted (with an emptied suite) while this
            // waited: then the lock is on a file no one else will open.
            var held = stat()
            var named = stat()
            guard fstat(fd, &held) == 0, stat(lockPath, &named) == 0,
                held.st_dev == named.st_dev, held.st_ino == named.st_ino
            else { continue }
            return try body()
        }
    }
}
