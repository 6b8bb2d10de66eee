import Foundation
import Synchronization

extension DiskStore {
    /// The folder, in the user's cache directory, that holds the stores this program
    /// opens by name (``init(named:configuration:clock:)``, a ``Cache``'s default
    /// disk store, the HTTP caches' stores): two programs of one user never share
    /// or trim each other's stores.
    ///
    /// By default the bundle identifier on Apple platforms (the executable's name
    /// when there is none) and the executable's name elsewhere, with every
    /// character but ASCII letters, digits, `-`, `_` and `.` made a `-` (at most
    /// 128 bytes; "hoard" when nothing is left). ``useProgramFolder(named:)``
    /// chooses another for the whole process.
    public static var programFolderName: String { _ProgramFolder.name.withLock { $0 } }

    /// Makes `name` the folder of this program's stores (``programFolderName``),
    /// for every store opened by name from now on; stores already open stay where
    /// they are. Call it once, at start, before any store or cache opens:
    /// `try DiskStore.useProgramFolder(named: "com.example.feeds")`.
    ///
    /// - Throws: ``HoardError/Code/invalidName`` unless `name` is 1–128 ASCII
    ///   letters, digits, `-`, `_` and `.`, with no leading or trailing dot and no
    ///   `..`; nothing changes then.
    public static func useProgramFolder(named name: String) throws(HoardError) {
        try _LocalNames.validate(name, what: "a program folder name")
        _ProgramFolder.name.withLock { $0 = name }
    }
}

/// The process's program folder, and finding a store where an earlier version put
/// it (directly in the cache directory).
enum _ProgramFolder {
    static let name = Mutex(defaultName(for: program))

    /// What names the running program: its bundle identifier on Apple platforms
    /// when it has one, else the executable's name.
    static var program: String {
        #if canImport(Darwin)
        if let identifier = Bundle.main.bundleIdentifier, !identifier.isEmpty { return identifier }
        #endif
        return ProcessInfo.processInfo.processName
    }

    /// `program` as a valid folder name: every character but ASCII letters, digits,
    /// `-`, `_` and `.` becomes `-`, runs of dots become one, dots and dashes are
    /// trimmed from both ends, at most 128 bytes; "hoard" when nothing is left.
    static func defaultName(for program: String) -> String {
        var safe = ""
        for scalar in program.unicodeScalars {
            let kept =
                scalar.isASCII
                && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                    || scalar == "-" || scalar == "_" || scalar == ".")
            let character: Character = kept ? Character(scalar) : "-"
            if character == ".", safe.last == "." { continue }
            safe.append(character)
        }
        func trimmed(_ text: Substring) -> Substring {
            let isEdge: (Character) -> Bool = { $0 == "." || $0 == "-" }
            guard let start = text.firstIndex(where: { !isEdge($0) }), let end = text.lastIndex(where: { !isEdge($0) })
            else { return "" }
            return text[start...end]
        }
        // Every character is ASCII: one byte each.
        let base = trimmed(trimmed(Substring(safe)).prefix(_LocalNames.maximumLength))
        return base.isEmpty ? "hoard" : String(base)
    }

    /// The directory of the store `name` of `program` in `caches`:
    /// `<caches>/<program>/<name>`. A store left at `<caches>/<name>` by an earlier
    /// version (when there is none at the new place) is moved there first, so it
    /// is found again; if it cannot be moved, it is used where it is. When
    /// `<caches>/<program>` is itself an old store (one named like the program), it
    /// is moved into a new program folder of that name.
    ///
    /// A store is moved only while no instance has it open (in any process: the
    /// move holds its lock file exclusive): an open instance keeps using its
    /// directory by path, and would find its value files gone. One in use is used
    /// where it is, and moved by a later open.
    static func directory(named name: String, program: String, in caches: URL) -> URL {
        let folder = caches.appendingPathComponent(program, isDirectory: true)
        let new = folder.appendingPathComponent(name, isDirectory: true)
        let old = caches.appendingPathComponent(name, isDirectory: true)
        if isStore(folder.path) {
            // `<caches>/<program>` is an old store: only the store of that very
            // name moves, through a temporary name, into a folder of its own.
            guard name == program, let lock = unusedStoreLock(folder.path) else { return old }
            defer { close(lock) }
            let moving = caches.appendingPathComponent(".\(program).moving-\(getpid())", isDirectory: true)
            guard rename(folder.path, moving.path) == 0 else { return old }
            guard (try? _FileSystem.makeDirectory(folder.path)) != nil, rename(moving.path, new.path) == 0 else {
                // Put it back where it was, and use it there.
                _ = rmdir(folder.path)
                _ = rename(moving.path, folder.path)
                return old
            }
            return new
        }
        guard _FileSystem.kind(at: new.path) == .missing, isStore(old.path) else { return new }
        guard let lock = unusedStoreLock(old.path) else { return old }
        defer { close(lock) }
        guard (try? _FileSystem.makeDirectory(folder.path)) != nil, _FileSystem.kind(at: folder.path) == .directory,
            rename(old.path, new.path) == 0
        else {
            // Another process moved it meanwhile, or the folder cannot be written.
            return _FileSystem.kind(at: new.path) == .directory ? new : old
        }
        return new
    }

    /// The store at `path`'s lock file, opened and held exclusive, when no instance
    /// has the store open (each holds it shared); `nil` when one has, or the lock
    /// cannot be taken. The caller closes the descriptor, which releases it.
    static func unusedStoreLock(_ path: String) -> Int32? {
        let fd = open(path + "/" + _StoreDirectory.lockName, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return nil }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Whether `path` is a real directory (not a link) holding a Hoard store.
    static func isStore(_ path: String) -> Bool {
        guard _FileSystem.kind(at: path) == .directory else { return false }
        return (try? _StoreDirectory.inspect(path)) == .store
    }
}
