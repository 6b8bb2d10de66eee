import Foundation
import Synchronization

/// The process-wide state of one settings domain: its suites, the keys each holds,
/// the item count across all of them, and the observers of every open store.
///
/// One registry exists per domain and process, whatever number of ``SettingsStore``
/// instances and namespaces there are, so that the item limit counts everything.
/// It is created on first use by reading the registry suite and every suite it
/// lists: items written by earlier runs (or other processes before that moment)
/// count too.
///
/// Values are read from the registry's own copy of each suite's persistent domain,
/// loaded once and kept up to date by this process's writes, never with
/// `UserDefaults.object(forKey:)`: that answers first from the process's argument
/// domain (`-key value` on the command line), then from the global domain and
/// registered defaults, none of which are settings.
///
/// `UserDefaults` writes here touch only its in-memory copy, so they happen under
/// the lock, which keeps the count, the suites and the updates observers see in
/// one order. Loading a suite the first time and `synchronize()` (the file write)
/// happen outside it, except for that one-time load of a namespace.
final class _SettingsRegistry: Sendable {
    typealias Observers = _Observers<String, Data, SettingsStoreEvent>

    /// What a read found under a key.
    enum Stored {
        case missing
        case data(Data)
        /// A value of another type: someone else wrote it, or it is damaged.
        case other(typeName: String)
    }

    private struct State {
        var registry: UserDefaults
        /// Namespaces listed in the registry suite.
        var registered: Set<String>
        /// The suites opened so far, by namespace.
        var suites: [String: UserDefaults] = [:]
        /// What the suite of every namespace loaded so far holds: its persistent
        /// domain (its file) when first loaded, with this process's changes since.
        var values: [String: [String: Any]] = [:]
        var total = 0
        var nextObserverID = 0
        var observers: [String: [Int: Observers]] = [:]

        mutating func suite(_ domain: _SettingsDomain, _ namespace: String) -> UserDefaults {
            if let suite = suites[namespace] { return suite }
            // `UserDefaults(suiteName:)` returns nil only for the app's own bundle
            // identifier or the global domain, which no "<domain>.<namespace>" is.
            let suite = UserDefaults(suiteName: domain.suiteName(for: namespace)) ?? .standard
            suites[namespace] = suite
            return suite
        }

        /// Reads the suite of `namespace` into ``values`` the first time.
        mutating func load(_ domain: _SettingsDomain, _ namespace: String) {
            guard values[namespace] == nil else { return }
            let found = suite(domain, namespace).persistentDomain(forName: domain.suiteName(for: namespace)) ?? [:]
            values[namespace] = found
            total += found.count
        }

        /// What the suite of `namespace` itself holds under `key`, or `nil`.
        mutating func object(_ domain: _SettingsDomain, _ namespace: String, key: String) -> Any? {
            guard registered.contains(namespace) else { return nil }
            load(domain, namespace)
            return values[namespace]?[key]
        }

        func publish(_ namespace: String, key: String, data: Data?) {
            for observers in (observers[namespace] ?? [:]).values {
                observers.publishUpdate(key: key, value: data)
            }
        }
    }

    let domain: _SettingsDomain
    private let state: Mutex<State>

    private static let registries = Mutex<[_SettingsDomain: _SettingsRegistry]>([:])

    /// The registry of `domain` in this process.
    static func shared(_ domain: _SettingsDomain) -> _SettingsRegistry {
        registries.withLock { registries in
            if let registry = registries[domain] { return registry }
            let registry = _SettingsRegistry(domain: domain)
            registries[domain] = registry
            return registry
        }
    }

    private init(domain: _SettingsDomain) {
        self.domain = domain
        let registry = UserDefaults(suiteName: domain.name) ?? .standard
        let listed = registry.persistentDomain(forName: domain.name)?.keys ?? [:].keys
        // A listed name that is not a valid namespace was not written by Hoard:
        // it is never turned into a suite name.
        let valid = Set(listed.filter { (try? domain.validate($0)) != nil })
        var state = State(registry: registry, registered: valid)
        for namespace in valid { state.load(domain, namespace) }
        self.state = Mutex(state)
    }

    // MARK: Counting

    /// Items across every namespace of the domain.
    var totalCount: Int { state.withLock { $0.total } }

    /// The namespaces of the domain, each with its item count, sorted by name.
    func namespaces() -> [(name: String, count: Int)] {
        state.withLock { state in
            state.registered.sorted().map { ($0, state.values[$0]?.count ?? 0) }
        }
    }

    /// The keys of `namespace`, sorted.
    func keys(in namespace: String) -> [String] {
        state.withLock { state in
            guard state.registered.contains(namespace) else { return [] }
            state.load(domain, namespace)
            return state.values[namespace, default: [:]].keys.sorted()
        }
    }

    /// The encoded size of every value in `namespace` (values of another type count 0).
    func bytes(in namespace: String) -> Int {
        state.withLock { state in
            guard state.registered.contains(namespace) else { return 0 }
            return state.values[namespace, default: [:]].values.reduce(0) { sum, value in
                sum + ((value as? Data)?.count ?? 0)
            }
        }
    }

    // MARK: Reading and writing

    /// What `namespace` holds under `key`.
    func stored(_ namespace: String, key: String) -> Stored {
        state.withLock { state in
            guard let object = state.object(domain, namespace, key: key) else { return .missing }
            if let data = object as? Data { return .data(data) }
            return .other(typeName: "\(type(of: object))")
        }
    }

    /// Stores `data` under `key`, then writes the suite to disk.
    ///
    /// - Throws: ``HoardError/Code/settingsItemLimitReached`` when `key` is new and
    ///   the domain already holds `itemLimit` items (nothing is stored);
    ///   ``HoardError/Code/ioFailed`` when the suite could not be written to disk.
    func set(_ data: Data, for key: String, in namespace: String, itemLimit: Int) throws(HoardError) {
        let (suite, registry, newNamespace) = try state.withLock {
            (state) throws(HoardError) -> (UserDefaults, UserDefaults, Bool) in
            let newNamespace = !state.registered.contains(namespace)
            state.load(domain, namespace)
            if state.values[namespace]?[key] == nil {
                guard state.total < itemLimit else {
                    throw HoardError(
                        .settingsItemLimitReached,
                        "all settings stores together hold \(state.total) items and the item limit (itemLimit) is \(itemLimit); nothing was stored",
                        key: key)
                }
                state.total += 1
            }
            state.values[namespace, default: [:]][key] = data
            if newNamespace {
                state.registered.insert(namespace)
                state.registry.set(true, forKey: namespace)
            }
            let suite = state.suite(domain, namespace)
            suite.set(data, forKey: key)
            state.publish(namespace, key: key, data: data)
            return (suite, state.registry, newNamespace)
        }
        // The registry first: a namespace on disk is always listed.
        if newNamespace { try synchronize(registry, name: domain.name) }
        try synchronize(suite, name: domain.suiteName(for: namespace))
    }

    /// Removes `key` from `namespace`.
    ///
    /// - Returns: Whether a value was removed.
    func remove(_ key: String, in namespace: String) throws(HoardError) -> Bool {
        let suite = state.withLock { state -> UserDefaults? in
            guard state.object(domain, namespace, key: key) != nil else { return nil }
            let suite = state.suite(domain, namespace)
            suite.removeObject(forKey: key)
            state.values[namespace]?[key] = nil
            state.total -= 1
            state.publish(namespace, key: key, data: nil)
            return suite
        }
        guard let suite else { return false }
        try synchronize(suite, name: domain.suiteName(for: namespace))
        return true
    }

    /// Removes every value of `namespace`, its suite and its registry entry.
    ///
    /// - Returns: How many values were removed.
    func removeAll(in namespace: String) throws(HoardError) -> Int {
        let (count, registry) = state.withLock { state -> (Int, UserDefaults?) in
            guard state.registered.contains(namespace) else { return (0, nil) }
            state.load(domain, namespace)
            let keys = state.values[namespace, default: [:]].keys
            let suite = state.suite(domain, namespace)
            // Deletes the suite's file (on Linux: the plist in ~/.config).
            suite.removePersistentDomain(forName: domain.suiteName(for: namespace))
            state.total -= keys.count
            state.values[namespace] = [:]
            state.registered.remove(namespace)
            state.registry.removeObject(forKey: namespace)
            for key in keys { state.publish(namespace, key: key, data: nil) }
            return (keys.count, state.registry)
        }
        if let registry { try synchronize(registry, name: domain.name) }
        return count
    }

    /// Removes every namespace's suite and the registry suite itself.
    ///
    /// - Returns: The namespaces removed, with their item counts.
    func removeEverything() throws(HoardError) -> [(name: String, count: Int)] {
        let removed = namespaces()
        for (namespace, _) in removed {
            _ = try removeAll(in: namespace)
        }
        state.withLock { state in
            state.registry.removePersistentDomain(forName: domain.name)
        }
        return removed
    }

    private func synchronize(_ suite: UserDefaults, name: String) throws(HoardError) {
        guard suite.synchronize() else {
            throw HoardError(
                .ioFailed,
                "the settings suite \(name) could not be written to disk; the change holds in this process only")
        }
    }

    // MARK: Observers

    /// Registers a store's observers; they get every change to its namespace.
    func attach(_ observers: Observers, to namespace: String) -> Int {
        state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.observers[namespace, default: [:]][id] = observers
            return id
        }
    }

    func detach(_ id: Int, from namespace: String) {
        state.withLock { state in
            state.observers[namespace]?[id] = nil
            if state.observers[namespace]?.isEmpty == true { state.observers[namespace] = nil }
        }
    }

    /// Adds an update stream for `key` and yields the current bytes to it, under
    /// the lock: no change can come between the current value and the first update.
    func addUpdates(
        _ observers: Observers, namespace: String, key: String, continuation: AsyncStream<Data?>.Continuation
    ) -> Int {
        state.withLock { state in
            let id = observers.addUpdates(for: key, continuation)
            continuation.yield(state.object(domain, namespace, key: key) as? Data)
            return id
        }
    }
}
