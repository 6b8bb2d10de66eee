import Foundation

extension LocalStorage {
    /// What Hoard keeps in the default locations, as ``LocalStorage/inventory()``
    /// found it.
    public struct Inventory: Sendable {
        /// The stores in ``LocalStorage/cachesDirectory``, sorted by name.
        public var stores: [Store]
        /// The message logs in ``LocalStorage/logsDirectory``, sorted by name.
        public var logs: [Log]
        /// The settings namespaces, sorted by name.
        public var settings: [Settings]
        /// The directories in ``LocalStorage/cachesDirectory`` that could not be looked
        /// into, sorted by name: a store in one (or the directory itself, when it is
        /// a store) is not in ``stores``.
        public var unreadableFolders: [UnreadableFolder]
    }

    /// A directory in ``LocalStorage/cachesDirectory`` that could not be looked into
    /// (no permission to list it, a read error), so it is not known whether it is or
    /// holds a ``DiskStore``.
    public struct UnreadableFolder: Sendable {
        /// Its name: `<folder>` directly in the cache directory, or
        /// `<program>/<directory>` in a program's folder.
        public var name: String
        /// The directory.
        public var directory: URL
        /// Why it could not be looked into.
        public var problem: HoardError

        /// Whether a store whose name starts with `prefix` could be this directory or
        /// be in it (what ``LocalStorage/deleteAll(namePrefix:)`` and
        /// ``LocalStorage/clearDiskStores(namePrefix:)`` with that prefix report).
        public func mayHoldStore(namedWithPrefix prefix: String) -> Bool {
            LocalStorage.mayHoldStore(unreadable: name, namedWithPrefix: prefix)
        }
    }

    /// Whether a store whose name starts with `prefix` could be the directory `name`
    /// (`<folder>` or `<program>/<directory>`) or be in it.
    static func mayHoldStore(unreadable name: String, namedWithPrefix prefix: String) -> Bool {
        (name + "/").hasPrefix(prefix) || prefix.hasPrefix(name + "/")
    }

    /// One ``DiskStore`` directory.
    public struct Store: Sendable {
        /// The store's name: `<program>/<store>` for a store in a program's folder
        /// (``DiskStore/programFolderName``), `<store>` for one directly in the
        /// cache directory (where earlier versions kept them). What
        /// ``LocalStorage/clearNamespace(_:inStore:)`` takes.
        public var name: String
        /// The program whose folder holds the store, or `nil` for a store directly
        /// in the cache directory.
        public var program: String? {
            guard let slash = name.firstIndex(of: "/") else { return nil }
            return String(name[..<slash])
        }
        /// The store's directory name: what
        /// ``DiskStore/init(named:configuration:clock:)`` takes in that program.
        public var storeName: String {
            guard let slash = name.firstIndex(of: "/") else { return name }
            return String(name[name.index(after: slash)...])
        }
        /// The store's directory.
        public var directory: URL
        /// Entries and value bytes per namespace; empty when ``problem`` is set.
        public var namespaces: [String: StoreUsage]
        /// The bytes of every regular file in the directory and its `blobs` folder:
        /// index, SQLite's write-ahead log and shared-memory files, value files.
        /// Measured while the store is open (a store that cannot be opened: as
        /// found), so it agrees with what `hoard stats` reports for the store.
        public var bytesOnDisk: Int
        /// Why the store could not be read (busy, damaged, …), or `nil`.
        public var problem: HoardError?

        /// Entries across all namespaces.
        public var entryCount: Int { namespaces.values.reduce(0) { $0 + $1.count } }
    }

    /// One ``MessageLog`` file.
    public struct Log: Sendable {
        /// The file's name, `.log` included.
        public var name: String
        /// The file.
        public var file: URL
        /// How many messages it holds, as its header counts them; 0 when ``problem``
        /// is set.
        public var messageCount: Int
        /// The file's size.
        public var bytesOnDisk: Int
        /// Why the log could not be read (damaged header, newer format, …), or `nil`.
        public var problem: HoardError?
    }

    /// One ``SettingsStore`` namespace.
    public struct Settings: Sendable {
        /// The namespace.
        public var namespace: String
        /// How many values it holds.
        public var itemCount: Int
        /// The encoded bytes of its values.
        public var bytes: Int
    }

    /// Lists every store with its namespaces, every log and every settings
    /// namespace, with entry counts and sizes. No entry, value or message is
    /// changed: stores are opened without creating a store, collecting orphaned
    /// files or migrating a store of an older format (one is listed with that as
    /// its ``Store/problem``), logs for reading. Opening a store still creates its
    /// lock file, a missing `blobs/` folder and its full-disk reserve file.
    ///
    /// A store or log that cannot be read is still listed, with its ``Store/problem``
    /// or ``Log/problem``; a directory that cannot be looked into is listed in
    /// ``Inventory/unreadableFolders``, never taken for one that holds no store.
    ///
    /// - Throws: ``HoardError`` when ``cachesDirectory`` or ``logsDirectory`` exists
    ///   but cannot be listed.
    public func inventory() throws(HoardError) -> Inventory {
        let listing = try storeListing()
        var stores: [Store] = []
        for name in listing.names {
            let directory = cachesDirectory.appendingPathComponent(name, isDirectory: true)
            var store = Store(
                name: name, directory: directory, namespaces: [:], bytesOnDisk: Self.bytes(in: directory.path),
                problem: nil)
            do {
                let opened = try openStore(named: name, migratingFormat: false)
                store.namespaces = try opened.namespaces()
                // Measured again while the store is open (with its write-ahead log and
                // shared-memory files), as `hoard stats` measures it: both say the same.
                store.bytesOnDisk = Self.bytes(in: directory.path)
            } catch {
                store.problem = error
            }
            stores.append(store)
        }
        var logs: [Log] = []
        for name in try logNames() {
            let file = logsDirectory.appendingPathComponent(name, isDirectory: false)
            var log = Log(
                name: name, file: file, messageCount: 0, bytesOnDisk: _FileSystem.fileSize(at: file.path) ?? 0,
                problem: nil)
            do {
                log.messageCount = try MessageLog<Data>(forReadingFrom: file, codec: .cacheValue).count
            } catch {
                log.problem = error
            }
            logs.append(log)
        }
        // Namespaces other processes wrote since this process read the registry.
        try self.settings.takeInNamespacesOnDisk()
        let settings = settings.namespaces().map { namespace, count in
            Settings(namespace: namespace, itemCount: count, bytes: self.settings.bytes(in: namespace))
        }
        let unreadable = listing.unreadable.map { name, error in
            UnreadableFolder(
                name: name, directory: cachesDirectory.appendingPathComponent(name, isDirectory: true), problem: error)
        }
        return Inventory(stores: stores, logs: logs, settings: settings, unreadableFolders: unreadable)
    }

    /// The bytes of the regular files in a store directory and its `blobs` folder,
    /// links not followed.
    static func bytes(in directory: String) -> Int {
        var total = 0
        for folder in [directory, directory + "/" + _StoreDirectory.blobsName] {
            guard _FileSystem.kind(at: folder) == .directory else { continue }
            // A folder that cannot be listed counts 0 bytes; opening the store (which
            // the inventory does next) reports why it cannot be read.
            for name in (try? _FileSystem.contents(of: folder)) ?? [] {
                var info = stat()
                if lstat(folder + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                    total += Int(info.st_size)
                }
            }
        }
        return total
    }
}
