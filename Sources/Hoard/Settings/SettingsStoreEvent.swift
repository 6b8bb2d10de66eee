/// Something a ``SettingsStore`` ran into that no caller asked about directly, as its
/// ``SettingsStore/events`` stream and ``SettingsStore/Configuration/onEvent``
/// handler report it.
public enum SettingsStoreEvent: Sendable {
    /// A read found a value it could not use, treated it as a miss and removed it:
    /// reason ``StoreDamage/Reason/unexpectedType`` for a value of another type in
    /// the suite, ``StoreDamage/Reason/undecodableValue`` for bytes the codec
    /// refused.
    case removedDamaged(StoreDamage)
    /// Work the store did on its own failed (removing a damaged value). The store
    /// stays usable; `operation` says what was attempted, `key` which value.
    case failed(operation: String, key: String?, error: HoardError)
}
