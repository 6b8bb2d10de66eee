import Foundation

/// The family of `UserDefaults` suites Hoard's settings live in, and the rules that
/// keep every suite name inside it.
///
/// ```
/// hoard.settings                 the registry: one key per namespace ever written
/// hoard.settings.<namespace>     one suite per namespace: key → encoded value (Data)
/// ```
///
/// On Linux, swift-corelibs-foundation keeps a suite in
/// `$XDG_CONFIG_HOME/<suite>.plist` (`~/.config/<suite>.plist` when unset), and Hoard
/// reads and writes that file itself (see ``_SettingsSuite``). A suite name is used
/// as a file name there as it is, so
/// a namespace must never hold `/` or start with a dot: ``validate(_:)`` applies
/// ``_LocalNames``'s rules.
///
/// Tests use their own domain name (internal initializers take one) so that they
/// never share a registry with the user's real settings.
struct _SettingsDomain: Sendable, Hashable {
    /// The domain every public API uses.
    static let standard = _SettingsDomain(name: "hoard.settings")

    /// The registry suite's name; namespace suites are named `<name>.<namespace>`.
    let name: String

    /// The suite holding `namespace`'s settings. Call with a validated namespace.
    func suiteName(for namespace: String) -> String {
        name + "." + namespace
    }

    /// Checks that `namespace` can become part of a suite name without reaching
    /// outside the domain, and that the suite is not the program's own defaults
    /// (`UserDefaults(suiteName:)` refuses the main bundle's identifier).
    ///
    /// - Throws: ``HoardError/Code/invalidName``, saying what is wrong.
    func validate(_ namespace: String) throws(HoardError) {
        try _LocalNames.validate(namespace, what: "a settings namespace")
        guard suiteName(for: namespace) != Bundle.main.bundleIdentifier else {
            throw HoardError(
                .invalidName, "the settings namespace \"\(namespace)\" would name the program's own defaults suite")
        }
    }
}
