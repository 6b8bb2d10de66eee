import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    @Suite("SettingsStore suite domains")
    struct SettingsSuiteDomainTests {
        @Test("A store in a suite domain of its own keeps its values and its item count apart")
        func separateDomains() throws {
            let name = "hoard-tests-\(UUID().uuidString.prefix(13)).public"
            let other = "hoard-tests-\(UUID().uuidString.prefix(13)).other"
            defer {
                SettingsTest.remove(_SettingsDomain(name: name))
                SettingsTest.remove(_SettingsDomain(name: other))
            }
            let own = try SettingsStore<String>(
                namespace: "com.example.app", configuration: .init(itemLimit: 2, suiteDomain: name))
            try own.set("a", for: "one")
            try own.set("b", for: "two")
            let error = #expect(throws: HoardError.self) { try own.set("c", for: "three") }
            #expect(error?.code == .settingsItemLimitReached)
            #expect(SettingsStore<String>.totalItemCount(inSuiteDomain: name) == 2)
            // The same namespace in another domain is another suite, with its own count
            let elsewhere = try SettingsStore<String>(
                namespace: "com.example.app", configuration: .init(itemLimit: 2, suiteDomain: other))
            #expect(elsewhere.value(for: "one") == nil)
            try elsewhere.set("c", for: "three")
            #expect(SettingsStore<String>.totalItemCount(inSuiteDomain: other) == 1)
            // A second instance in the same domain shares the values
            let again = try SettingsStore<String>(namespace: "com.example.app", configuration: .init(suiteDomain: name))
            #expect(again.value(for: "two") == "b")
        }

        @Test("A suite domain that breaks the naming rules is refused", arguments: ["", "../x", ".hidden", "a/b", "é"])
        func invalidDomain(_ domain: String) {
            let error = #expect(throws: HoardError.self) {
                try SettingsStore<String>(namespace: "ok", configuration: .init(suiteDomain: domain))
            }
            #expect(error?.code == .invalidName)
        }

        @Test("A suite domain under the default one is refused: its suites would be the default domain's namespaces")
        func domainUnderTheDefaultIsRefused() throws {
            let error = #expect(throws: HoardError.self) {
                try SettingsStore<String>(namespace: "ok", configuration: .init(suiteDomain: "hoard.settings.myapp"))
            }
            #expect(error?.code == .invalidName)
            #expect(error?.message.contains("hoard.settings") == true)
            // A domain that only starts with the same letters is another domain.
            let name = "hoard.settingsx-\(UUID().uuidString.prefix(13))"
            defer { SettingsTest.remove(_SettingsDomain(name: name)) }
            let store = try SettingsStore<String>(namespace: "ok", configuration: .init(suiteDomain: name))
            try store.set("v", for: "k")
            #expect(store.value(for: "k") == "v")
        }
    }
}
