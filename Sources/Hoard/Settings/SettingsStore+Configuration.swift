extension SettingsStore {
    /// The limits of a ``SettingsStore`` and where it reports.
    ///
    /// ```swift
    /// let flags = try SettingsStore<Bool>(namespace: "com.example.app.flags", configuration: .init(
    ///     itemLimit: 4_096,            // items across all settings stores
    ///     valueByteLimit: 256,         // bytes per encoded value
    ///     onEvent: { event in logger.warning("\(event)") }))
    /// ```
    public struct Configuration: Sendable {
        /// The most items all settings stores together may hold when this store adds
        /// one. Defaults to 1,024. Must be at least 1.
        ///
        /// The count covers every namespace, including values earlier runs of the
        /// program left in their suites. A write that would add an item beyond it
        /// throws ``HoardError/Code/settingsItemLimitReached`` and stores nothing;
        /// replacing an existing item always fits.
        public var itemLimit: Int

        /// The most bytes one encoded value may take. Defaults to 1,024 (1 KiB). Must
        /// be at least 1.
        ///
        /// A larger value throws ``HoardError/Code/settingsValueTooLarge`` and
        /// stores nothing. It is the codec's output that is measured: a `String` by
        /// its UTF-8 bytes, a `Codable` value by its JSON.
        public var valueByteLimit: Int

        /// Called with every event the store reports (damaged values removed, failed
        /// clean-ups), on the thread that caused it, never while a lock is held.
        /// Defaults to `nil`.
        public var onEvent: (@Sendable (SettingsStoreEvent) -> Void)?

        /// Creates a configuration; every parameter defaults as its property says.
        public init(
            itemLimit: Int = 1_024,
            valueByteLimit: Int = 1_024,
            onEvent: (@Sendable (SettingsStoreEvent) -> Void)? = nil
        ) {
            self.itemLimit = itemLimit
            self.valueByteLimit = valueByteLimit
            self.onEvent = onEvent
        }

        /// Checks every setting.
        func validate() throws(HoardError) {
            guard itemLimit >= 1 else {
                throw HoardError(.invalidConfiguration, "itemLimit must be at least 1, not \(itemLimit)")
            }
            guard valueByteLimit >= 1 else {
                throw HoardError(.invalidConfiguration, "valueByteLimit must be at least 1, not \(valueByteLimit)")
            }
        }
    }
}
