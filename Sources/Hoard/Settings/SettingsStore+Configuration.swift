import Logging

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

        /// The family of `UserDefaults` suites the store keeps its values in: the
        /// namespace's values go to the suite `<suiteDomain>.<namespace>`, and the
        /// item count ``itemLimit`` limits is kept per domain, in the suite
        /// `<suiteDomain>`. Defaults to `"hoard.settings"`, the domain ``LocalStorage``
        /// and the `hoard` tool see. Separate programs, or tests, that must not share
        /// one item count give each their own domain. Must follow the namespace rules
        /// (ASCII letters, digits, `-`, `_`, `.`, no leading or trailing dot, no `..`).
        ///
        /// Suite names join domain and namespace with a dot, so a domain that is
        /// another domain followed by a dot shares suites with it: `d.a`'s registry
        /// is `d`'s namespace `a`, and `d.a`'s namespace `b` is `d`'s namespace `a.b`.
        /// Give separate programs domains that do not extend one another. A domain
        /// under the default one (`hoard.settings.` followed by anything) is refused
        /// with ``HoardError/Code/invalidName`` for that reason.
        ///
        /// Every namespace gets a suite of its own, so an app group's single shared
        /// suite is not a domain: on Apple platforms, a domain named after the group
        /// is kept in the app's container, not the group's.
        public var suiteDomain: String

        /// Where the store logs what it runs into (a damaged suite file kept aside
        /// at `error`, failures at `warning`, undecodable values at `notice`), besides
        /// ``onEvent`` and ``SettingsStore/events``. Defaults to `nil`: no logging.
        public var logger: Logger?

        /// Called with every event the store reports (values it cannot read, damaged
        /// suite files kept aside, failures of its own work), on the thread that
        /// caused it, never while a lock is held.
        /// Defaults to `nil`.
        public var onEvent: (@Sendable (SettingsStoreEvent) -> Void)?

        /// Creates a configuration; every parameter defaults as its property says.
        public init(
            itemLimit: Int = 1_024,
            valueByteLimit: Int = 1_024,
            suiteDomain: String = "hoard.settings",
            onEvent: (@Sendable (SettingsStoreEvent) -> Void)? = nil,
            logger: Logger? = nil
        ) {
            self.itemLimit = itemLimit
            self.valueByteLimit = valueByteLimit
            self.suiteDomain = suiteDomain
            self.onEvent = onEvent
            self.logger = logger
        }

        /// The domain ``suiteDomain`` names.
        var domain: _SettingsDomain { _SettingsDomain(name: suiteDomain) }

        /// Checks every setting.
        func validate() throws(HoardError) {
            guard itemLimit >= 1 else {
                throw HoardError(.invalidConfiguration, "itemLimit must be at least 1, not \(itemLimit)")
            }
            guard valueByteLimit >= 1 else {
                throw HoardError(.invalidConfiguration, "valueByteLimit must be at least 1, not \(valueByteLimit)")
            }
            try _LocalNames.validate(suiteDomain, what: "a settings suite domain")
            let standard = _SettingsDomain.standard.name + "."
            guard !suiteDomain.hasPrefix(standard) else {
                throw HoardError(
                    .invalidName,
                    "the settings suite domain \"\(suiteDomain)\" is under \"\(_SettingsDomain.standard.name)\", "
                        + "so its suites would be namespaces of the default domain; choose a domain outside it")
            }
        }
    }
}
