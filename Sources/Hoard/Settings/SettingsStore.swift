import Foundation

/// Small typed settings in a namespace of their own, kept in `UserDefaults`.
///
/// Each namespace is its own `UserDefaults` suite, named `hoard.settings.<namespace>`
/// (on Linux a property list in `$XDG_CONFIG_HOME` or `~/.config`); values are
/// stored as the bytes their ``ValueCodec`` makes.
///
/// ```swift
/// let settings = try SettingsStore<String>(namespace: "com.example.app")
/// try settings.set("john", for: "username")
/// let username = settings.value(for: "username")      // "john", also after a restart
/// ```
///
/// ## What it guarantees
///
/// - **Limits.** At most ``Configuration/itemLimit`` items (1,024 by default) across
///   every settings store of the process and what earlier runs left in their
///   suites, and at most ``Configuration/valueByteLimit`` bytes (1 KiB) per encoded
///   value. A write beyond either throws an error naming the limit
///   (``HoardError/Code/settingsItemLimitReached``,
///   ``HoardError/Code/settingsValueTooLarge``) and stores nothing.
/// - **Persistence.** A write that returned has been written to the suite's file:
///   it survives the process ending, however it ends.
/// - **Several processes.** Writes to one namespace from several processes all
///   survive: on Linux each write locks the suite's file against the others
///   (an advisory lock file beside it), reads what the file holds then, merges its
///   change in and replaces the file atomically; on Apple platforms `cfprefsd`
///   merges them. On Linux a namespace is listed in (and removed from) the
///   domain's registry under that same lock, so a write that returned stays
///   listed, seen by stores opened afterwards and by ``LocalStorage``, even when
///   another process removed the namespace before or while it wrote; only a
///   removal that comes after it removes it.
/// - **A damaged suite file is kept.** On Linux, a suite file that is not a
///   property list (truncated, garbage) is never read as empty and written over:
///   it is renamed aside, byte for byte, to a name no file had (see
///   ``keptAsideFiles``), reported as ``SettingsStoreEvent/suiteKeptAside(_:)``
///   (and logged, with ``Configuration/logger``), and a new file is started.
/// - **Reads never destroy data.** A value of another type in the suite, or bytes
///   the codec cannot decode (another store's values in a shared namespace, an older
///   version of the type), is a miss reported as
///   ``SettingsStoreEvent/undecodable(_:)``, and stays where it is. Reads never
///   throw and never trap.
/// - **Names.** A namespace is 1–128 ASCII letters, digits, `-`, `_` and `.`,
///   without a leading or trailing dot or `..`; anything else is refused with
///   ``HoardError/Code/invalidName``, so no name reaches another suite or file.
///   Keys may be any string; they are compared as Swift compares strings
///   (stored in Unicode canonical composition, NFC).
/// - **Only the namespace's own values.** A store reads what its suite's file holds
///   and this process wrote to it, never what `UserDefaults` would add for the
///   suite: registered defaults, the global domain, or `-key value` on the
///   process's command line (the argument domain), even under a key it holds.
/// - **Several instances** of one namespace in a process share its values and see
///   each other's changes, updates included. Another process's changes are seen
///   up to the moment this process first opens a store of the namespace (a
///   namespace another process created after this one opened others included);
///   after that, values are read from memory (a write merges this process's
///   change with the file).
///
/// Every method is synchronous and thread-safe.
public final class SettingsStore<Value: Sendable>: Sendable {
    /// The store's namespace.
    public let namespace: String
    /// The limits and event handler the store was created with.
    public let configuration: Configuration
    /// How values become bytes and back.
    public let codec: ValueCodec<Value>

    let registry: _SettingsRegistry
    let observers = _Observers<String, Data, SettingsStoreEvent>()
    private let attachment: Int

    /// Opens the settings of `namespace`, decoding them with `codec`.
    ///
    /// - Parameters:
    ///   - namespace: The namespace: 1–128 ASCII letters, digits, `-`, `_`, `.`,
    ///     no leading or trailing dot, no `..`. A reverse-DNS name such as
    ///     `"com.example.app"` keeps it apart from other programs' settings.
    ///   - codec: How values become bytes and back.
    ///   - configuration: Limits and the event handler. Defaults to 1,024 items and
    ///     1 KiB per value.
    /// - Throws: ``HoardError/Code/invalidName`` for an unusable namespace or
    ///   ``Configuration/suiteDomain``; ``HoardError/Code/invalidConfiguration`` for a
    ///   limit below 1.
    public convenience init(
        namespace: String, codec: ValueCodec<Value>, configuration: Configuration = .init()
    ) throws(HoardError) {
        try self.init(namespace: namespace, codec: codec, configuration: configuration, domain: configuration.domain)
    }

    /// Opens the settings of `namespace` with the codec the value type gets with no
    /// extra code: its ``CacheValue`` encoding, or JSON for `Codable` types.
    ///
    /// - Throws: As ``init(namespace:codec:configuration:)``, and
    ///   ``HoardError/Code/noCodec`` when `Value` is neither `CacheValue` nor `Codable`.
    public convenience init(namespace: String, configuration: Configuration = .init()) throws(HoardError) {
        try self.init(
            namespace: namespace, codec: .automatic(), configuration: configuration, domain: configuration.domain)
    }

    /// Opens `namespace` in a given domain (tests use their own).
    init(
        namespace: String, codec: ValueCodec<Value>, configuration: Configuration, domain: _SettingsDomain
    ) throws(HoardError) {
        try domain.validate(namespace)
        try configuration.validate()
        self.namespace = namespace
        self.configuration = configuration
        self.codec = codec
        registry = _SettingsRegistry.shared(domain)
        registry.beginUse(of: namespace)
        let (attachment, unreported) = registry.attach(observers, to: namespace)
        self.attachment = attachment
        for event in unreported { report(event) }
    }

    deinit {
        registry.detach(attachment, from: namespace)
        observers.finishAll()
    }

    /// How many items all settings stores of the default suite domain together hold:
    /// every namespace, including values earlier runs left. This is the count
    /// ``Configuration/itemLimit`` limits.
    public static var totalItemCount: Int {
        _SettingsRegistry.shared(.standard).totalCount
    }

    /// How many items the settings stores of `suiteDomain` hold together (see
    /// ``Configuration/suiteDomain``).
    public static func totalItemCount(inSuiteDomain suiteDomain: String) -> Int {
        _SettingsRegistry.shared(_SettingsDomain(name: suiteDomain)).totalCount
    }

    // MARK: Reading

    /// The value for `key`, or `nil`.
    ///
    /// A value of another type in the suite, or bytes the codec cannot decode, is a
    /// miss reported as ``SettingsStoreEvent/undecodable(_:)``; the value is not
    /// removed (it may be another store's, or another version's).
    ///
    /// - Complexity: A dictionary lookup in memory and one decode.
    public func value(for key: some CacheKey) -> Value? {
        let key = _normalized(key.cacheKeyString)
        switch registry.stored(namespace, key: key) {
        case .missing:
            return nil
        case .data(let data):
            do {
                return try codec.decode(data)
            } catch {
                report(
                    .undecodable(
                        StoreDamage(
                            namespace: namespace, key: key, reason: .undecodableValue,
                            detail:
                                "\(data.count) bytes do not decode as \(Value.self): \(error.message); the value was kept"
                        )))
                return nil
            }
        case .other(let description):
            report(
                .undecodable(
                    StoreDamage(
                        namespace: namespace, key: key, reason: .unexpectedType,
                        detail:
                            "the suite holds \(description), not the encoded bytes a SettingsStore writes; the value was kept"
                    )))
            return nil
        }
    }

    /// Whether the namespace holds a value under `key` (decodable or not).
    public func contains(_ key: some CacheKey) -> Bool {
        if case .missing = registry.stored(namespace, key: _normalized(key.cacheKeyString)) { return false }
        return true
    }

    /// Every key of the namespace, sorted.
    public var keys: [String] {
        registry.keys(in: namespace)
    }

    /// How many values the namespace holds.
    public var count: Int {
        registry.keys(in: namespace).count
    }

    // MARK: Writing

    /// Stores `value` under `key` and writes the suite to disk before returning.
    ///
    /// Every update stream of `key` in this process gets the new value.
    ///
    /// - Throws: ``HoardError/Code/settingsValueTooLarge`` when the encoded value is
    ///   over ``Configuration/valueByteLimit``;
    ///   ``HoardError/Code/settingsItemLimitReached`` when `key` is new and all
    ///   settings stores already hold ``Configuration/itemLimit`` items (in both
    ///   cases nothing is stored); ``HoardError/Code/encodingFailed`` from the
    ///   codec; ``HoardError/Code/ioFailed`` when the suite could not be written to
    ///   disk (the value then holds in this process only).
    public func set(_ value: Value, for key: some CacheKey) throws(HoardError) {
        let key = _normalized(key.cacheKeyString)
        let data = try codec.encode(value)
        guard data.count <= configuration.valueByteLimit else {
            throw HoardError(
                .settingsValueTooLarge,
                "the encoded value is \(data.count) bytes and the value size limit (valueByteLimit) is \(configuration.valueByteLimit) bytes; nothing was stored",
                key: key)
        }
        try registry.set(data, for: key, in: namespace, itemLimit: configuration.itemLimit, report: report)
    }

    /// Removes the value for `key` and writes the suite to disk.
    ///
    /// - Returns: Whether there was a value.
    /// - Throws: ``HoardError/Code/ioFailed`` when the suite could not be written.
    @discardableResult
    public func removeValue(for key: some CacheKey) throws(HoardError) -> Bool {
        try registry.remove(_normalized(key.cacheKeyString), in: namespace, report: report)
    }

    /// Removes every value of the namespace and deletes its suite. Other namespaces
    /// are not touched.
    ///
    /// - Returns: How many values were removed.
    /// - Throws: ``HoardError/Code/ioFailed`` when the registry could not be written.
    @discardableResult
    public func removeAll() throws(HoardError) -> Int {
        try registry.removeAll(in: namespace, report: report)
    }

    /// The paths of the damaged suite files of this namespace that were kept aside
    /// (see ``SettingsSuiteDamage``), oldest first: each holds the bytes the damaged
    /// file had. Hoard never deletes them. Always empty on Apple platforms, where
    /// `cfprefsd` owns the suite files.
    public var keptAsideFiles: [String] {
        registry.keptAsideFiles(of: namespace)
    }

    // MARK: Events

    func report(_ event: SettingsStoreEvent) {
        if let logger = configuration.logger { log(event, to: logger) }
        configuration.onEvent?(event)
        observers.publish(event)
    }
}
