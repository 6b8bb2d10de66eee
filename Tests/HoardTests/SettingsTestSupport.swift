import Foundation
import Synchronization
import Testing

@testable import Hoard

/// Helpers for tests of ``SettingsStore`` and ``LocalStorage``. Their suites are
/// nested in `DiskStoreSuites`, so they run one test at a time with the other
/// suites that block threads on files and child processes.
enum SettingsTest {
    /// A settings domain no other test or program uses; every suite it made is
    /// removed when `body` returns, so no test leaves preferences behind.
    static func withDomain<R>(_ body: (_SettingsDomain) throws -> R) throws -> R {
        let domain = _SettingsDomain(name: "hoard-tests-\(UUID().uuidString.prefix(13)).settings")
        defer { remove(domain) }
        return try body(domain)
    }

    /// The `async` form of ``withDomain(_:)``.
    static func withDomain<R>(_ body: (_SettingsDomain) async throws -> R) async throws -> R {
        let domain = _SettingsDomain(name: "hoard-tests-\(UUID().uuidString.prefix(13)).settings")
        defer { remove(domain) }
        return try await body(domain)
    }

    /// Removes every suite of `domain` and checks that no file of it is left.
    static func remove(_ domain: _SettingsDomain) {
        do {
            _ = try _SettingsRegistry.shared(domain).removeEverything()
        } catch {
            Issue.record("could not remove the test settings domain \(domain.name): \(error)")
        }
        #expect(suiteFiles(domain).isEmpty, "settings files left behind: \(suiteFiles(domain))")
    }

    /// Where swift-corelibs-foundation keeps suites: `$XDG_CONFIG_HOME` or
    /// `~/.config`. (On Apple platforms suites live elsewhere and this finds none.)
    static var preferencesFolder: URL {
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            return URL(fileURLWithPath: config, isDirectory: true)
        }
        return URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory(), isDirectory: true)
            .appendingPathComponent(".config", isDirectory: true)
    }

    /// The names of the files in ``preferencesFolder`` that belong to `domain`.
    static func suiteFiles(_ domain: _SettingsDomain) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: preferencesFolder.path)) ?? []
        return names.filter { $0.hasPrefix(domain.name) }.sorted()
    }

    /// The suite file of `namespace` where corelibs Foundation keeps it.
    static func suiteFile(_ namespace: String, _ domain: _SettingsDomain) -> URL {
        preferencesFolder.appendingPathComponent(domain.suiteName(for: namespace) + ".plist")
    }

    /// Removes the kept-aside copies of damaged suite files of `namespace`, which
    /// no removal of the domain deletes.
    static func removeKeptAside(_ namespace: String, _ domain: _SettingsDomain) {
        let prefix = domain.suiteName(for: namespace) + ".plist.damaged-"
        for name in suiteFiles(domain) where name.hasPrefix(prefix) {
            do {
                try FileManager.default.removeItem(at: preferencesFolder.appendingPathComponent(name))
            } catch {
                Issue.record("could not remove the kept-aside file \(name): \(error)")
            }
        }
    }

    /// A store of `namespace` in `domain`.
    static func store<Value: Sendable>(
        _ namespace: String, _ domain: _SettingsDomain, codec: ValueCodec<Value>,
        configuration: SettingsStore<Value>.Configuration = .init()
    ) throws -> SettingsStore<Value> {
        try SettingsStore(namespace: namespace, codec: codec, configuration: configuration, domain: domain)
    }

    /// Writes `value` under `key` of the suite of `namespace` as another program
    /// would, bypassing ``SettingsStore``, and lists the namespace in the registry.
    static func plant(_ value: Any, key: String, namespace: String, _ domain: _SettingsDomain) throws {
        let registry = try #require(UserDefaults(suiteName: domain.name))
        registry.set(true, forKey: namespace)
        #expect(registry.synchronize())
        let suite = try #require(UserDefaults(suiteName: domain.suiteName(for: namespace)))
        suite.set(value, forKey: key)
        #expect(suite.synchronize())
    }
}

/// Collects a settings store's events through its configuration's handler.
final class SettingsEventRecorder: Sendable {
    private let events = Mutex<[SettingsStoreEvent]>([])

    /// The handler to put in ``SettingsStore/Configuration/onEvent``.
    var handler: @Sendable (SettingsStoreEvent) -> Void {
        { [self] event in events.withLock { $0.append(event) } }
    }

    /// Every event so far, oldest first.
    var all: [SettingsStoreEvent] { events.withLock { $0 } }

    /// The values reads could not use so far (kept in place).
    var undecodable: [StoreDamage] {
        all.compactMap { if case .undecodable(let damage) = $0 { damage } else { nil } }
    }
}

extension SettingsEventRecorder {
    /// The damaged suite files kept aside so far.
    var keptAside: [SettingsSuiteDamage] {
        all.compactMap { if case .suiteKeptAside(let damage) = $0 { damage } else { nil } }
    }
}
