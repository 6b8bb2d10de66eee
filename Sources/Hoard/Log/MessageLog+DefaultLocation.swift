import Foundation

extension MessageLog {
    /// The file of the log named `name` in the default location:
    /// `$XDG_CACHE_HOME/hoard-logs/<name>.log` or `~/.cache/hoard-logs/<name>.log` on
    /// Linux, `~/Library/Caches/hoard-logs/<name>.log` on Apple platforms.
    ///
    /// ```swift
    /// let log = try MessageLog<Event>(
    ///     fileURL: MessageLog<Event>.defaultFileURL(named: "events"),
    ///     maximumBytes: 1 << 20, overwritesOldMessages: true, codec: .json)
    /// ```
    ///
    /// The folder is created (mode 0700) when missing, so the URL can be opened at
    /// once. ``LocalStorage`` lists, clears and deletes the logs in this folder.
    ///
    /// - Parameter name: The log's name, without extension: 1–128 ASCII letters,
    ///   digits, `-`, `_` and `.`, no leading or trailing dot, no `..`.
    /// - Throws: ``HoardError/Code/invalidName`` for an unusable name;
    ///   ``HoardError/Code/ioFailed`` or ``HoardError/Code/permissionDenied`` when the
    ///   folder cannot be created.
    public static func defaultFileURL(named name: String) throws(HoardError) -> URL {
        try _LocalNames.validate(name, what: "a log name")
        let folder = try LocalStorage().logsDirectory
        try _FileSystem.makeDirectories(folder.path)
        return folder.appendingPathComponent(name + ".log", isDirectory: false)
    }
}
