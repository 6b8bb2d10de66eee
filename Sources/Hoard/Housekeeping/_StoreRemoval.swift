import Foundation

/// Deletes one store directory, touching only the names a store writes, through
/// directory descriptors opened with `O_NOFOLLOW` so that no link is followed.
enum _StoreRemoval {
    /// Deletes the store at `path` (already recognised as one).
    ///
    /// - Returns: `nil` when the directory is gone; otherwise why it was kept.
    static func delete(_ path: String) throws(HoardError) -> String? {
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directory >= 0 else { throw _FileSystem.error("could not open the store directory", path: path) }
        defer { close(directory) }

        // The store's own lock, exclusive: no instance anywhere has it open.
        let lock = openat(directory, _StoreDirectory.lockName, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        if lock >= 0 {
            defer { close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
                return "the store is open in this or another process"
            }
            return try deleteFiles(directory, path: path)
        }
        guard errno == ENOENT else { throw _FileSystem.error("could not open the store's lock file", path: path) }
        return try deleteFiles(directory, path: path)
    }

    /// Removes value files, the index and the lock file, then the directory.
    private static func deleteFiles(_ directory: Int32, path: String) throws(HoardError) -> String? {
        let blobs = openat(directory, _StoreDirectory.blobsName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if blobs >= 0 {
            defer { close(blobs) }
            for name in try names(in: blobs, path: path + "/" + _StoreDirectory.blobsName)
            where _BlobFiles.isValidName(name) || _BlobFiles.isTemporaryName(name) {
                // Without AT_REMOVEDIR: a directory by that name is not removed; a
                // link is removed as a link.
                if unlinkat(blobs, name, 0) != 0, errno != ENOENT, errno != EISDIR {
                    throw _FileSystem.error("could not remove a value file", path: path + "/blobs/" + name)
                }
            }
            // Fails when files Hoard did not write are left in it; the directory's
            // own removal below then reports what is left.
            _ = unlinkat(directory, _StoreDirectory.blobsName, AT_REMOVEDIR)
        }
        let index = _StoreDirectory.indexName
        let storeFiles = try names(in: directory, path: path).filter { name in
            name == index || name == index + "-wal" || name == index + "-shm" || name == index + "-journal"
                || name == _SpaceReserve.name || name.hasPrefix(_StoreDirectory.creatingName)
                || name == _StoreDirectory.lockName
        }
        // The index first, the lock file last: an interrupted deletion leaves
        // something no instance opens as a store, or an empty store.
        for name in storeFiles.sorted(by: { rank($0) < rank($1) }) {
            if unlinkat(directory, name, 0) != 0, errno != ENOENT, errno != EISDIR {
                throw _FileSystem.error("could not remove a store file", path: path + "/" + name)
            }
        }
        if rmdir(path) == 0 { return nil }
        guard errno == ENOTEMPTY || errno == EEXIST else {
            throw _FileSystem.error("could not remove the store directory", path: path)
        }
        let left = ((try? names(in: directory, path: path)) ?? []).sorted()
        return "the directory holds files Hoard did not write: \(left.prefix(5).joined(separator: ", "))"
    }

    private static func rank(_ name: String) -> Int {
        name == _StoreDirectory.indexName ? 0 : name == _StoreDirectory.lockName ? 2 : 1
    }

    /// The names in the directory open as `descriptor`.
    private static func names(in descriptor: Int32, path: String) throws(HoardError) -> [String] {
        let copy = dup(descriptor)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            throw _FileSystem.error("could not list a directory", path: path)
        }
        defer { closedir(stream) }
        // The copy shares the original's position: start from the beginning.
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
