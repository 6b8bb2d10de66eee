/// Something a ``SettingsStore`` ran into that no caller asked about directly, as its
/// ``SettingsStore/events`` stream and ``SettingsStore/Configuration/onEvent``
/// handler report it.
public enum SettingsStoreEvent: Sendable {
    /// A read found a value it could not use and treated it as a miss; the value was
    /// left in place, since it may be another store's or another version's: reason
    /// ``StoreDamage/Reason/unexpectedType`` for a value of another type in the
    /// suite, ``StoreDamage/Reason/undecodableValue`` for bytes the codec refused.
    case undecodable(StoreDamage)
    /// Never sent: reads no longer remove values they cannot decode (they report
    /// ``undecodable(_:)`` and keep them). Kept so that code matching it compiles.
    @available(*, deprecated, message: "reads keep values they cannot decode and report .undecodable instead")
    case removedDamaged(StoreDamage)
    /// Work the store did on its own failed (removing a damaged value). The store
    /// stays usable; `operation` says what was attempted, `key` which value.
    case failed(operation: String, key: String?, error: HoardError)
}
