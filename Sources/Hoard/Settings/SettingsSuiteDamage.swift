/// A settings suite file that could not be read as a property list, and the copy of
/// it that was kept: reported as ``SettingsStoreEvent/suiteKeptAside(_:)``.
///
/// The damaged file is never read as empty and written over: it is renamed, byte for
/// byte as it was found, to ``keptAsidePath`` (a name no other file had, so no kept
/// copy is ever overwritten), and the suite starts a new file. Nothing Hoard does
/// removes a kept copy; ``SettingsStore/keptAsideFiles`` lists them.
public struct SettingsSuiteDamage: Sendable, Hashable, CustomStringConvertible {
    /// The namespace whose suite file was damaged, or `nil` for the registry suite
    /// that lists a domain's namespaces.
    public var namespace: String?
    /// The path the damaged suite file had, where the new file now goes.
    public var path: String
    /// The path of the kept copy: the damaged bytes, unchanged.
    public var keptAsidePath: String
    /// A sentence saying what is wrong with the file.
    public var detail: String

    /// Creates a damage report.
    public init(namespace: String?, path: String, keptAsidePath: String, detail: String) {
        self.namespace = namespace
        self.path = path
        self.keptAsidePath = keptAsidePath
        self.detail = detail
    }

    public var description: String {
        let suite = namespace.map { "the settings suite of namespace \"\($0.prefix(100))\"" } ?? "the settings registry"
        return "\(suite) (\(path)) was damaged and kept aside as \(keptAsidePath): \(detail)"
    }
}
