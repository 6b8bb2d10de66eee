import Foundation
import Synchronization

/// The database files this process has open through ``_SQLiteConnection``, by
/// device and inode, with how many connections each.
///
/// SQLite locks a database with POSIX `fcntl` locks, which belong to the process
/// and the file: closing *any* descriptor of the file, anywhere in the process,
/// releases every one of them, SQLite's included. Another process can then take
/// the exclusive lock, checkpoint and delete the write-ahead log this process goes
/// on writing to, and reads this process's later commits never reach. So Hoard
/// reads a database file itself (the index header a ``DiskStore`` checks before
/// SQLite may touch the file) only through ``readUnlessOpen(_:_:)``: not at all
/// while a connection of this process has the file open (it was checked when
/// that connection's store opened it), and with no connection opened meanwhile.
enum _SQLiteOpenFiles {
    /// A file's identity, which a path does not give: a rename keeps it, and a
    /// new file at the same path has another.
    struct FileID: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// Connections per open file.
    private static let open = Mutex<[FileID: Int]>([:])

    /// The identity of the file at `path`, following links as SQLite does; `nil`
    /// when there is none.
    static func id(of path: String) -> FileID? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Counts a connection just opened to the file at `path`, before anything is
    /// run on it (so before SQLite takes any lock); returns the identity to give
    /// back to ``closed(_:)``.
    static func opened(_ path: String) -> FileID? {
        open.withLock { open in
            guard let id = id(of: path) else { return nil }
            open[id, default: 0] += 1
            return id
        }
    }

    /// Forgets a connection counted by ``opened(_:)``.
    static func closed(_ id: FileID) {
        open.withLock { open in
            guard let count = open[id] else { return }
            open[id] = count > 1 ? count - 1 : nil
        }
    }

    /// Runs `read`, which opens, reads and closes the file at `path` itself,
    /// unless a connection of this process has that file open; returns whether it
    /// ran. No connection is counted, so none starts locking, while it runs.
    static func readUnlessOpen(_ path: String, _ read: () throws(HoardError) -> Void) throws(HoardError) -> Bool {
        try open.withLock { (open) throws(HoardError) -> Bool in
            if let id = id(of: path), open[id] != nil { return false }
            try read()
            return true
        }
    }
}
