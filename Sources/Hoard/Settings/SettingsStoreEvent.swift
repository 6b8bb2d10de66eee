/// Something a ``SettingsStore`` ran into that no caller asked about directly, as its
/// ``SettingsStore/events`` stream and ``SettingsStore/Configuration/onEvent``
/// handler report it.
public enum SettingsStoreEvent: Sendable {
    /// A read found a value it could not use and treated it as a miss; the value was
    /// left in place, since it may be another store's or another version's: reason
    /// ``StoreDamage/Reason/unexpectedType`` for a value of another type in the
    /// suite, ``StoreDamage/Reason/undecodableValue`` for bytes the codec refused.
    case undecodable(StoreDamage)
    /// Never sent: reads keep values they cannot decode and report
    /// ``undecodable(_:)``. Kept so that code matching it compiles.
    @available(*, deprecated, message: "reads keep values they cannot decode and report .undecodable instead")
    case removedDamaged(StoreDamage)
    /// A suite file could not be read as a property list (truncated, garbage): it
    /// was renamed aside, byte for byte, and the suite started a new file (Linux
    /// only). Reported by the store whose read or write found it, or, when the
    /// registry found it while opening the domain, by the first store opened on the
    /// namespace (or on any namespace, for the registry's own file).
    case suiteKeptAside(SettingsSuiteDamage)
    /// Work the store did on its own failed (decoding an update, reading a suite
    /// file while opening the domain). The store stays usable; `operation` says
    /// what was attempted, `key` which value.
    case failed(operation: String, key: String?, error: HoardError)
}
