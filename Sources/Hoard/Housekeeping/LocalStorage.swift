import Foundation

/// Everything Hoard keeps on this machine for the current user, in its default
/// locations: list it, clear parts of it, or delete all of it.
///
/// It covers
/// - the ``DiskStore``s in the user's cache directory (the ones
///   ``DiskStore/init(named:configuration:clock:)`` opens): each directory in a
///   program's folder there (``DiskStore/programFolderName``) that holds a Hoard
///   store, named `<program>/<store>`, and each directory directly there that does
///   (where earlier versions kept them), named `<store>`;
/// - the ``MessageLog`` files in `hoard-logs` inside it (the ones
///   ``MessageLog/defaultFileURL(named:)`` names);
/// - the suites of every ``SettingsStore`` namespace.
///
/// ```swift
/// let storage = try LocalStorage()
/// for store in try storage.inventory().stores {
///     print(store.name, store.entryCount, store.bytesOnDisk)
/// }
/// try storage.clearNamespace("thumbnails", inStore: "com.example.app/thumbnails")
/// ```
///
/// ## What it guarantees
///
/// Nothing outside Hoard's own folders and suites is ever changed. A directory
/// counts as a store only when ``DiskStore`` itself would open it as one (a Hoard
/// index, recognised by its header); a file counts as a log only when it starts
/// with a message log's header. Symbolic links are never followed: a store, log,
/// `blobs` folder or index that is a link is not Hoard's and is left alone, and
/// deleting removes only the file names a store writes, so a link planted inside
/// a store is removed as a link, its target untouched. A name given to a method is
/// one path component at most; anything else is refused with
/// ``HoardError/Code/invalidName`` (a store's name is one component, or two:
/// `<program>/<store>`).
///
/// A store another instance or process has open is not deleted: it is reported
/// as kept. Clearing (removing entries) is safe while others use a store.
public struct LocalStorage: Sendable {
    /// The folder whose subdirectories are the stores: the user's cache directory
    /// unless another was given.
    public let cachesDirectory: URL
    /// The settings suites this instance lists and deletes.
    let settingsDomain: _SettingsDomain

    /// The name of the folder in ``cachesDirectory`` that holds message logs.
    public static let logsFolderName = "hoard-logs"

    /// The folder holding message logs in the default location:
    /// `<cachesDirectory>/hoard-logs`.
    public var logsDirectory: URL {
        cachesDirectory.appendingPathComponent(Self.logsFolderName, isDirectory: true)
    }

    /// Hoard's storage in the default locations: `$XDG_CACHE_HOME` (or `~/.cache`)
    /// on Linux, `~/Library/Caches` on Apple platforms, and the standard settings
    /// suites.
    ///
    /// - Throws: ``HoardError/Code/ioFailed`` when the cache directory cannot be
    ///   determined.
    public init() throws(HoardError) {
        self.init(cachesDirectory: try Self.standardCachesDirectory())
    }

    /// Hoard's storage with stores and logs under `cachesDirectory` (tests and tools
    /// pass their own) and the standard settings suites.
    public init(cachesDirectory: URL) {
        self.init(cachesDirectory: cachesDirectory, settingsDomain: .standard)
    }

    /// Storage in a given settings domain (tests use their own).
    init(cachesDirectory: URL, settingsDomain: _SettingsDomain) {
        self.cachesDirectory = cachesDirectory.standardizedFileURL
        self.settingsDomain = settingsDomain
    }

    /// The user's cache directory, where ``DiskStore/defaultDirectory(named:)`` puts
    /// stores.
    ///
    /// - Throws: ``HoardError/Code/ioFailed`` when it cannot be determined.
    public static func standardCachesDirectory() throws(HoardError) -> URL {
        guard let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first else {
            throw HoardError(.ioFailed, "the user's cache directory could not be determined")
        }
        // Standardised here, once, for stores opened by name and for the listing
        // alike: `link/..` in `$XDG_CACHE_HOME` resolves through the link when the
        // directory exists, but only as text below it, where a store's path would
        // otherwise be standardised.
        return caches.standardizedFileURL
    }

    var settings: _SettingsRegistry { _SettingsRegistry.shared(settingsDomain) }

    // MARK: Clearing

    /// Removes every entry of `namespace` in the store named `store`; other
    /// namespaces and stores are not touched.
    ///
    /// - Parameters:
    ///   - namespace: The namespace inside the store (any string).
    ///   - store: The store's name as ``inventory()`` lists it: `<program>/<store>`,
    ///     or `<store>` for one directly in ``cachesDirectory``.
    /// - Returns: How many entries were removed.
    /// - Throws: ``HoardError/Code/invalidName`` when `store` is neither `<store>`
    ///   nor `<program>/<store>` (each part one path component: not empty, `.` or
    ///   `..`, no NUL, at most 255 bytes); ``HoardError/Code/notAStore`` when there is no Hoard store by
    ///   that name (nothing is changed); otherwise as ``DiskStore/removeAll(in:)``.
    @discardableResult
    public func clearNamespace(_ namespace: String, inStore store: String) throws(HoardError) -> Int {
        try openStore(named: store).removeAll(in: namespace)
    }

    /// Removes every value of the settings namespace `namespace` and its suite.
    ///
    /// - Returns: How many values were removed.
    /// - Throws: ``HoardError/Code/invalidName`` for a name no settings namespace
    ///   can have; ``HoardError/Code/ioFailed`` when the registry cannot be written.
    @discardableResult
    public func clearSettings(namespace: String) throws(HoardError) -> Int {
        try settingsDomain.validate(namespace)
        // Other processes may have written namespaces since this process read the
        // registry: what is on disk now is what is cleared.
        try settings.takeInNamespacesOnDisk()
        return try settings.removeAll(in: namespace)
    }

    /// Removes every entry of every store in ``cachesDirectory`` (or of those whose
    /// names start with `namePrefix`); the stores stay, empty. Logs and settings are
    /// not touched.
    ///
    /// - Parameter namePrefix: Clear only the stores whose names start with this
    ///   prefix (say, one program's `com.example.app/`); `nil` (the default) clears
    ///   every store.
    /// - Returns: Each store's name with the number of entries removed, sorted by
    ///   name.
    /// - Throws: ``HoardError`` when ``cachesDirectory`` cannot be listed, or when a
    ///   directory in it that could be or hold a store of that prefix cannot be
    ///   looked into (no permission to list it, a read error): then nothing is
    ///   cleared, and the error names the directory. Otherwise the first error a
    ///   store throws; the stores before it are cleared.
    @discardableResult
    public func clearDiskStores(namePrefix: String? = nil) throws(HoardError) -> [(store: String, removed: Int)] {
        let listing = try storeListing()
        if let (name, error) = listing.unreadable(matching: namePrefix).first {
            throw HoardError(
                error.code,
                "a directory in the cache directory cannot be looked into (\(error.message)), so a store in it "
                    + "could not be cleared; nothing was cleared",
                path: cachesDirectory.path + "/" + name, underlying: error.underlying)
        }
        var cleared: [(store: String, removed: Int)] = []
        for name in listing.names where namePrefix.map({ name.hasPrefix($0) }) ?? true {
            cleared.append((name, try openStore(named: name).removeAll()))
        }
        return cleared
    }

    // MARK: Finding

    /// Opens the store named `name` (`<program>/<store>` or `<store>`) without
    /// creating anything; a store of an older format is migrated only when
    /// `migratingFormat` is `true` (see ``DiskStore/Configuration/migratesFormat``).
    func openStore(named name: String, migratingFormat: Bool = true) throws(HoardError) -> DiskStore {
        let components = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard components.count <= 2 else {
            throw HoardError(.invalidName, "a store name is <program>/<store> or <store>, not \"\(name.prefix(60))\"")
        }
        for component in components { try _LocalNames.validateComponent(component, what: "a store name") }
        let path = cachesDirectory.path + "/" + name
        if components.count == 2, _FileSystem.kind(at: cachesDirectory.path + "/" + components[0]) != .directory {
            throw HoardError(
                .notAStore, "there is no program folder by this name (a symbolic link is not one)",
                path: cachesDirectory.path + "/" + components[0])
        }
        guard _FileSystem.kind(at: path) == .directory else {
            throw HoardError(
                .notAStore, "there is no store directory by this name (a symbolic link is not one)", path: path)
        }
        guard try _StoreDirectory.inspect(path) == .store else {
            throw HoardError(.notAStore, "the directory holds no Hoard store", path: path)
        }
        return try DiskStore(
            directory: URL(fileURLWithPath: path, isDirectory: true),
            configuration: .init(createsStore: false, collectsOrphansAtOpen: false, migratesFormat: migratingFormat))
    }

    /// What ``storeListing()`` found in ``cachesDirectory``.
    struct StoreListing {
        /// The names of the stores, sorted: `<program>/<store>` for a directory
        /// holding a Hoard store in a program's folder, `<store>` for one directly in
        /// ``cachesDirectory``.
        var names: [String] = []
        /// The directories that could not be looked into, by the same kind of name
        /// (`<folder>`, or `<program>/<directory>`), sorted, each with the error:
        /// a store in one, or the directory itself when it is a store, is not in
        /// ``names``.
        var unreadable: [(name: String, error: HoardError)] = []

        /// The unreadable directories that could be, or hold, a store whose name
        /// starts with `prefix` (every one for `nil`).
        func unreadable(matching prefix: String?) -> [(name: String, error: HoardError)] {
            guard let prefix else { return unreadable }
            return unreadable.filter { LocalStorage.mayHoldStore(unreadable: $0.name, namedWithPrefix: prefix) }
        }
    }

    /// The stores in ``cachesDirectory`` and the directories there that could not be
    /// looked into. A store whose index ``DiskStore`` recognises as its own but
    /// damaged is one (it is listed with its problem, and deleted). Links and
    /// anything else ``DiskStore`` would refuse are left out.
    ///
    /// Every directory that is not a store is looked into, the logs folder and one
    /// that looks like an empty store included: a program may name a store `blobs`,
    /// or its folder `hoard-logs`. One that cannot be (no permission to list it, a
    /// read error) is in ``StoreListing/unreadable``, never taken for an empty one.
    ///
    /// - Throws: ``HoardError`` when ``cachesDirectory`` exists but cannot be listed.
    func storeListing() throws(HoardError) -> StoreListing {
        var listing = StoreListing()
        guard _FileSystem.kind(at: cachesDirectory.path) == .directory else { return listing }
        for name in try _FileSystem.contents(of: cachesDirectory.path).sorted() {
            let path = cachesDirectory.path + "/" + name
            guard _FileSystem.kind(at: path) == .directory else { continue }
            do throws(HoardError) {
                if try Self.holdsStore(path) {
                    listing.names.append(name)
                    continue
                }
                // A program's folder when it holds stores.
                for inner in try _FileSystem.contents(of: path).sorted() {
                    do throws(HoardError) {
                        if try Self.holdsStore(path + "/" + inner) { listing.names.append(name + "/" + inner) }
                    } catch {
                        listing.unreadable.append((name + "/" + inner, error))
                    }
                }
            } catch {
                listing.unreadable.append((name, error))
            }
        }
        listing.names.sort()
        return listing
    }

    /// Whether `path` is a real directory holding a Hoard store, intact or with an
    /// index ``DiskStore`` recognises as its own but damaged. A directory
    /// ``DiskStore`` refuses as another program's is not one: leaving it out is the
    /// answer, not a lost error.
    ///
    /// - Throws: ``HoardError`` when the directory or its index cannot be read
    ///   (``HoardError/Code/permissionDenied``, ``HoardError/Code/ioFailed``): it
    ///   may be a store.
    static func holdsStore(_ path: String) throws(HoardError) -> Bool {
        guard _FileSystem.kind(at: path) == .directory else { return false }
        do {
            return try _StoreDirectory.inspect(path) == .store
        } catch {
            switch error.code {
            case .storeDamaged: return true
            case .notAStore: return false
            default: throw error
            }
        }
    }

    /// The names of the message log files in ``logsDirectory``, sorted: regular
    /// files (not links) that start with a log's magic number.
    func logNames() throws(HoardError) -> [String] {
        let folder = logsDirectory.path
        guard _FileSystem.kind(at: folder) == .directory else { return [] }
        return try _FileSystem.contents(of: folder).filter { name in
            let path = folder + "/" + name
            guard _FileSystem.kind(at: path) == .file, let prefix = _FileSystem.prefix(ofFile: path, count: 8) else {
                return false
            }
            return prefix == Array("HOARDLOG".utf8)
        }.sorted()
    }
}
