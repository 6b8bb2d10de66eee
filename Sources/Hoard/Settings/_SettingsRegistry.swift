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
/// Values are read from the registry's own copy of each suite, loaded once and kept
/// up to date by this process's changes, never with `UserDefaults.object(forKey:)`:
/// that answers first from the process's argument domain (`-key value` on the
/// command line), then from the global domain and registered defaults, none of
/// which are settings.
///
/// A change is made in memory under the lock, which keeps the count, the suites and
/// the updates observers see in one order; then, outside it, the suite is changed on
/// disk by ``_SettingsSuite/update(listing:_:)``, which merges into what the suite holds then
/// (other processes' changes included) the value each changed key has in memory at
/// that moment. Two changes of one key by two threads may reach the disk in either
/// order; the one that writes last writes the latest value, so the file ends with
/// what memory holds. File work never happens under the lock (lock order: a suite's
/// lock file, then the registry suite's lock file, then this lock).
///
/// Whether the registry suite lists a namespace is changed only while the
/// namespace's suite is locked (``_SettingsSuite/update(listing:_:)``): a change
/// that leaves values in the suite lists it, as the registry suite says then (not
/// as this process last read it), before writing them; a removal of the namespace
/// deletes its file and unlists it before another process can change the suite.
/// So a namespace whose suite holds values is listed, whichever processes write and
/// remove it in whatever order: what lists the domain (``beginUse(of:)``,
/// ``takeInNamespacesOnDisk()``) finds every value a write left.
final class _SettingsRegistry: Sendable {
    typealias Observers = _Observers<String, Data, SettingsStoreEvent>

    /// What a read found under a key; memory holds the last two kinds.
    enum Stored: Sendable {
        case missing
        case data(Data)
        /// A value of another type (someone else wrote it, or it is damaged), and
        /// what it is in words: "an integer", "a string".
        case other(description: String)

        /// A suite's value as memory holds it.
        init(_ value: Any) {
            if let data = value as? Data {
                self = .data(data)
            } else {
                self = .other(description: _SettingsValueDescription.describe(value))
            }
        }

        /// The bytes a settings store wrote, or `nil`.
        var data: Data? {
            if case .data(let data) = self { return data }
            return nil
        }
    }

    /// Which values a change of a suite writes.
    private enum Written {
        /// These keys, merged into what the suite holds.
        case keys([String])
        /// Everything: the suite is to hold what memory holds (after a removal of
        /// all its values, nothing).
        case everything
    }

    private struct State {
        /// Namespaces listed in the registry suite.
        var registered: Set<String>
        /// Namespaces this process has used: a store of it opened, or a change made
        /// (``_SettingsRegistry/beginUse(of:)``).
        var used: Set<String> = []
        /// What the suite of every namespace loaded so far holds: its content when
        /// first loaded, with this process's changes since.
        var values: [String: [String: Stored]] = [:]
        var total = 0
        var nextObserverID = 0
        var observers: [String: [Int: Observers]] = [:]
        /// What loading the suites found before a store of their namespace was open
        /// (a damaged file kept aside, a file that could not be read), for the first
        /// store that opens the namespace to report; `nil` namespace: the registry's.
        var unreported: [(namespace: String?, event: SettingsStoreEvent)] = []

        /// Lists `namespace`, holding `values` as read from its suite (in place of
        /// what memory held of it), counted in ``total``.
        mutating func list(_ namespace: String, holding values: [String: Stored]) {
            total += values.count - (self.values[namespace]?.count ?? 0)
            self.values[namespace] = values
            registered.insert(namespace)
        }

        /// What the suite of `namespace` holds under `key`, or `nil`.
        func object(_ namespace: String, key: String) -> Stored? {
            guard registered.contains(namespace) else { return nil }
            return values[namespace]?[key]
        }

        func publish(_ namespace: String, key: String, data: Data?) {
            for observers in (observers[namespace] ?? [:]).values {
                observers.publishUpdate(key: key, value: data)
            }
        }
    }

    let domain: _SettingsDomain
    private let registrySuite: _SettingsSuite
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
        registrySuite = _SettingsSuite(name: domain.name, namespace: nil)
        var unreported: [(namespace: String?, event: SettingsStoreEvent)] = []
        var listed: [String] = []
        do {
            let loaded = try registrySuite.load()
            listed = Array(loaded.values.keys)
            if let damage = loaded.keptAside {
                unreported.append((nil, .suiteKeptAside(damage)))
                // The list is lost with the damaged file: the suites on disk say it.
                listed = _SettingsSuite.namespacesWithFiles(registry: domain.name)
            }
        } catch {
            unreported.append((nil, .failed(operation: "reading the settings registry", key: nil, error: error)))
        }
        // A listed name that is not a valid namespace was not written by Hoard:
        // it is never turned into a suite name.
        let valid = Set(listed.filter { (try? domain.validate($0)) != nil })
        var state = State(registered: valid)
        for namespace in valid {
            do {
                let loaded = try _SettingsSuite(name: domain.suiteName(for: namespace), namespace: namespace).load()
                state.values[namespace] = loaded.values.mapValues(Stored.init)
                state.total += loaded.values.count
                if let damage = loaded.keptAside { unreported.append((namespace, .suiteKeptAside(damage))) }
            } catch {
                // Read as empty in memory; a write reads the file again, and fails
                // rather than write over values it could not read.
                state.values[namespace] = [:]
                unreported.append(
                    (namespace, .failed(operation: "reading the settings suite", key: nil, error: error)))
            }
        }
        state.unreported = unreported
        self.state = Mutex(state)
    }

    private func suite(_ namespace: String) -> _SettingsSuite {
        _SettingsSuite(name: domain.suiteName(for: namespace), namespace: namespace)
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
            return state.values[namespace, default: [:]].keys.sorted()
        }
    }

    /// The encoded size of every value in `namespace` (values of another type count 0).
    func bytes(in namespace: String) -> Int {
        state.withLock { state in
            guard state.registered.contains(namespace) else { return 0 }
            return state.values[namespace, default: [:]].values.reduce(0) { sum, value in
                sum + (value.data?.count ?? 0)
            }
        }
    }

    /// The paths of the damaged suite files of `namespace` kept aside so far.
    func keptAsideFiles(of namespace: String) -> [String] {
        suite(namespace).keptAsideFiles()
    }

    // MARK: Reading and writing

    /// What `namespace` holds under `key`.
    func stored(_ namespace: String, key: String) -> Stored {
        state.withLock { state in
            state.object(namespace, key: key) ?? .missing
        }
    }

    /// Stores `data` under `key`, then writes the suite to disk.
    ///
    /// - Parameter report: Gets what the change ran into on the way (a damaged
    ///   suite file kept aside), outside every lock.
    /// - Throws: ``HoardError/Code/settingsItemLimitReached`` when `key` is new and
    ///   the domain already holds `itemLimit` items (nothing is stored);
    ///   ``HoardError/Code/ioFailed`` when the suite could not be written to disk.
    func set(
        _ data: Data, for key: String, in namespace: String, itemLimit: Int,
        report: (SettingsStoreEvent) -> Void = { _ in }
    ) throws(HoardError) {
        try load(namespace, report: report)
        try state.withLock { (state) throws(HoardError) in
            let newNamespace = !state.registered.contains(namespace)
            if state.values[namespace]?[key] == nil {
                guard state.total < itemLimit else {
                    throw HoardError(
                        .settingsItemLimitReached,
                        "all settings stores together hold \(state.total) items and the item limit (itemLimit) is \(itemLimit); nothing was stored",
                        key: key)
                }
                state.total += 1
            }
            state.values[namespace, default: [:]][key] = .data(data)
            state.used.insert(namespace)
            if newNamespace { state.registered.insert(namespace) }
            state.publish(namespace, key: key, data: data)
        }
        // Lists the namespace in the registry suite first when that does not list
        // it (new, or removed by another process since this one read it).
        try write(namespace, .keys([key]), report: report)
    }

    /// Reads the suite of a namespace no change or read has loaded yet (one other
    /// processes may have written), outside the lock; a namespace loaded meanwhile
    /// keeps what it holds.
    private func load(_ namespace: String, report: (SettingsStoreEvent) -> Void) throws(HoardError) {
        guard state.withLock({ $0.values[namespace] == nil }) else { return }
        let loaded = try suite(namespace).load()
        let damage = loaded.keptAside
        let values = loaded.values.mapValues(Stored.init)
        state.withLock { state in
            guard state.values[namespace] == nil else { return }
            state.total += values.count
            state.values[namespace] = values
        }
        if let damage { report(.suiteKeptAside(damage)) }
    }

    /// Removes `key` from `namespace`.
    ///
    /// - Returns: Whether a value was removed.
    func remove(
        _ key: String, in namespace: String, report: (SettingsStoreEvent) -> Void = { _ in }
    ) throws(HoardError) -> Bool {
        let removed = state.withLock { state -> Bool in
            guard state.object(namespace, key: key) != nil else { return false }
            state.values[namespace]?[key] = nil
            state.total -= 1
            state.publish(namespace, key: key, data: nil)
            return true
        }
        guard removed else { return false }
        try write(namespace, .keys([key]), report: report)
        return true
    }

    /// Removes every value of `namespace`, its suite and its registry entry.
    ///
    /// - Returns: How many values were removed.
    func removeAll(in namespace: String, report: (SettingsStoreEvent) -> Void = { _ in }) throws(HoardError) -> Int {
        let count = state.withLock { state -> Int? in
            guard state.registered.contains(namespace) else { return nil }
            let keys = state.values[namespace, default: [:]].keys
            state.total -= keys.count
            state.values[namespace] = [:]
            state.registered.remove(namespace)
            for key in keys { state.publish(namespace, key: key, data: nil) }
            return keys.count
        }
        guard let count else { return 0 }
        // Deletes the suite's file (on Linux: the plist in ~/.config) and unlists
        // the namespace under the suite's lock, unless a write that came after this
        // removal put a value back in memory.
        try write(namespace, .everything, report: report)
        return count
    }

    /// Removes every namespace's suite, those other processes listed since this
    /// registry read the registry suite included, and the registry suite itself.
    ///
    /// Each namespace is unlisted under its suite's lock, with its file: a namespace
    /// another process writes while this runs stays listed with what it wrote, and
    /// the registry suite then stays, listing it. Names that are no namespace
    /// (crafted, or another program's), which no settings store writes, go.
    ///
    /// - Returns: The namespaces removed, with their item counts.
    /// - Throws: ``HoardError`` when the registry suite or a namespace's suite cannot
    ///   be read or written; the namespaces removed before stay removed.
    func removeEverything() throws(HoardError) -> [(name: String, count: Int)] {
        try takeInNamespacesOnDisk()
        let removed = namespaces()
        for (namespace, _) in removed {
            _ = try removeAll(in: namespace)
        }
        _ = try registrySuite.update { current in
            guard let current else {
                // A damaged registry file, just kept aside: the namespaces with a
                // suite file, and those a write of this process listed meanwhile.
                var listed = state.withLock { $0.registered }
                for other in _SettingsSuite.namespacesWithFiles(registry: domain.name)
                where (try? domain.validate(other)) != nil {
                    listed.insert(other)
                }
                return Dictionary(uniqueKeysWithValues: listed.map { ($0, true as Any) })
            }
            return current.filter { (try? domain.validate($0.key)) != nil }
        }
        return removed
    }

    /// Writes the change of `namespace` to its suite: the values memory holds now
    /// for `written`, merged into what the suite holds. When the suite's file was
    /// damaged and has just been kept aside, or `written` is everything, the suite
    /// gets the values memory holds that a settings store wrote (values of another
    /// type, which only another program's file can have held, are not rewritten).
    ///
    /// Under the suite's lock, the registry suite is brought in line: a suite left
    /// holding values is listed before they are written; one that `written` emptied
    /// whole (a removal of the namespace) is unlisted after its file is deleted,
    /// unless memory lists the namespace again. A suite emptied key by key stays
    /// listed, as the namespace stays in memory.
    private func write(
        _ namespace: String, _ written: Written, report: (SettingsStoreEvent) -> Void
    ) throws(HoardError) {
        var registryDamage: SettingsSuiteDamage?
        let listing = { (holdsValues: Bool) throws(HoardError) in
            if holdsValues {
                registryDamage = try self.list(namespace)
            } else if case .everything = written {
                registryDamage = try self.writeRegistry(namespace)
            }
        }
        defer { if let registryDamage { report(.suiteKeptAside(registryDamage)) } }
        let damage = try suite(namespace).update(listing: listing) { current in
            // Only `Data` leaves the lock: the values a settings store writes.
            let (changed, everything) = state.withLock { state -> ([String: Data], [String: Data]) in
                let memory = state.values[namespace] ?? [:]
                let everything = memory.compactMapValues(\.data)
                guard case .keys(let keys) = written else { return ([:], everything) }
                var changed: [String: Data] = [:]
                for key in keys { changed[key] = memory[key]?.data }
                return (changed, everything)
            }
            guard var merged = current, case .keys(let keys) = written else { return everything }
            for key in keys { merged[key] = changed[key] }
            return merged
        }
        if let damage { report(.suiteKeptAside(damage)) }
    }

    /// Lists `namespace` in the registry suite unless that lists it already; call
    /// with the namespace's suite locked, before values are written to it. The
    /// registry suite is read as it is on disk now: no other process can unlist the
    /// namespace until the suite's lock is released.
    ///
    /// - Returns: The registry suite's damaged file that was kept aside, if any.
    private func list(_ namespace: String) throws(HoardError) -> SettingsSuiteDamage? {
        let onDisk = try registrySuite.load()
        guard onDisk.values[namespace] == nil else { return onDisk.keptAside }
        return try writeRegistry(namespace, listed: true) ?? onDisk.keptAside
    }

    /// Writes whether `namespace` is listed to the registry suite: as `listed`
    /// says, or when that is `nil`, as memory says now.
    ///
    /// - Returns: The registry suite's damaged file that was kept aside, if any.
    private func writeRegistry(_ namespace: String, listed: Bool? = nil) throws(HoardError) -> SettingsSuiteDamage? {
        try registrySuite.update { current in
            var registered = state.withLock { $0.registered }
            if let listed {
                if listed { registered.insert(namespace) } else { registered.remove(namespace) }
            }
            guard var merged = current, !merged.isEmpty else {
                // No registry file (never written, or kept aside as damaged by an
                // earlier read), or a damaged one just kept aside: every namespace
                // with a suite file stays listed, not only those this process knows.
                var listed = registered
                for other in _SettingsSuite.namespacesWithFiles(registry: domain.name)
                where (try? domain.validate(other)) != nil {
                    listed.insert(other)
                }
                if !registered.contains(namespace) { listed.remove(namespace) }
                return Dictionary(uniqueKeysWithValues: listed.map { ($0, true as Any) })
            }
            merged[namespace] = registered.contains(namespace) ? true : nil
            return merged
        }
    }

    /// Reads `namespace` from disk again when this process has not used it yet (no
    /// store of it opened, nothing written to it), so that a store opened on it
    /// sees what other processes wrote up to now: a namespace they registered
    /// after this registry was made (it reads the registry suite again), and
    /// values they wrote after the registry first loaded the namespace's suite.
    /// The values are counted against the item limit, and can be removed. Called
    /// when a store of the namespace opens, outside the lock; what it runs into is
    /// left for that store to report.
    ///
    /// From the first use on, the namespace's values come from memory, kept up to
    /// date by this process's changes (``SettingsStore`` says so).
    func beginUse(of namespace: String) {
        guard state.withLock({ !$0.used.contains(namespace) }) else { return }
        var problems: [SettingsStoreEvent] = []
        defer {
            if !problems.isEmpty {
                state.withLock { state in state.unreported += problems.map { (namespace, $0) } }
            }
        }
        let listed: Bool
        do {
            let onDisk = try namespacesListedOnDisk()
            if let damage = onDisk.keptAside { problems.append(.suiteKeptAside(damage)) }
            listed = onDisk.names.contains(namespace)
        } catch {
            problems.append(.failed(operation: "reading the settings registry", key: nil, error: error))
            state.withLock { state in _ = state.used.insert(namespace) }
            return
        }
        var values: [String: Stored] = [:]
        if listed {
            do {
                let loaded = try suite(namespace).load()
                if let damage = loaded.keptAside { problems.append(.suiteKeptAside(damage)) }
                values = loaded.values.mapValues(Stored.init)
            } catch {
                // As when the registry is made: read as empty in memory; a write
                // reads the file again, and fails rather than write over what it
                // could not read.
                problems.append(.failed(operation: "reading the settings suite", key: nil, error: error))
            }
        }
        state.withLock { state in
            // Another store of it opened meanwhile, or a change was made: memory
            // is what this process uses from now on.
            guard state.used.insert(namespace).inserted, listed else { return }
            state.list(namespace, holding: values)
        }
    }

    /// The namespaces listed on disk: those in the registry suite, and on Linux,
    /// when that file is missing or was just kept aside as damaged, those with a
    /// suite file too (what ``writeRegistry(_:listed:)`` lists then).
    private func namespacesListedOnDisk() throws(HoardError) -> (names: Set<String>, keptAside: SettingsSuiteDamage?) {
        let registry = try registrySuite.load()
        var names = Set(registry.values.keys)
        if registry.keptAside != nil || names.isEmpty {
            names.formUnion(_SettingsSuite.namespacesWithFiles(registry: domain.name))
        }
        return (names, registry.keptAside)
    }

    /// Takes in every namespace listed on disk that this process does not list:
    /// those in the registry suite, and on Linux, when that file is missing or was
    /// damaged, those with a suite file. Each one's suite is read and its values
    /// counted, so that ``LocalStorage`` lists, clears and deletes what other
    /// processes wrote since this registry was made.
    ///
    /// - Throws: ``HoardError`` when the registry suite or a namespace's suite
    ///   cannot be read; namespaces taken in before stay.
    func takeInNamespacesOnDisk() throws(HoardError) {
        let listed = try namespacesListedOnDisk().names
        let known = state.withLock { $0.registered }
        for namespace in listed.subtracting(known).sorted() where (try? domain.validate(namespace)) != nil {
            let values = try suite(namespace).load().values.mapValues(Stored.init)
            state.withLock { state in
                guard !state.registered.contains(namespace) else { return }
                state.list(namespace, holding: values)
            }
        }
    }

    // MARK: Observers

    /// Registers a store's observers; they get every change to its namespace.
    ///
    /// - Returns: The attachment's id, and what loading the namespace's suite (or
    ///   the registry's) ran into that no store has reported yet, for this one to
    ///   report.
    func attach(_ observers: Observers, to namespace: String) -> (id: Int, unreported: [SettingsStoreEvent]) {
        state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.observers[namespace, default: [:]][id] = observers
            let claimed = state.unreported.filter { $0.namespace == nil || $0.namespace == namespace }
            state.unreported.removeAll { $0.namespace == nil || $0.namespace == namespace }
            return (id, claimed.map(\.event))
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
            continuation.yield(state.object(namespace, key: key)?.data)
            return id
        }
    }
}
