import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    @Suite("SettingsStore", .timeLimit(.minutes(3)))
    struct SettingsStoreTests {
        struct Profile: Codable, Equatable {
            var name: String
            var age: Int
        }

        @Test("set, get, remove, keys and removeAll; namespaces are apart; instances share values")
        func basics() throws {
            try SettingsTest.withDomain { domain in
                // Given two namespaces
                let names = try SettingsTest.store("app.names", domain, codec: ValueCodec<String>.cacheValue)
                let profiles = try SettingsTest.store("app.profiles", domain, codec: ValueCodec<Profile>.json)

                // When values are set
                try names.set("john", for: "username")
                try names.set("dark", for: "theme")
                try profiles.set(Profile(name: "Ann", age: 40), for: "me")

                // Then they read back, by this and another instance of the namespace
                #expect(names.value(for: "username") == "john")
                #expect(profiles.value(for: "me") == Profile(name: "Ann", age: 40))
                let again = try SettingsTest.store("app.names", domain, codec: ValueCodec<String>.cacheValue)
                #expect(again.value(for: "theme") == "dark")
                #expect(names.keys == ["theme", "username"])
                #expect(names.count == 2)
                #expect(names.contains("theme"))
                #expect(names.value(for: "missing") == nil)

                // Replacing keeps one item; removing reports whether there was one
                try names.set("jane", for: "username")
                #expect(again.value(for: "username") == "jane")
                #expect(try names.removeValue(for: "username"))
                #expect(try !names.removeValue(for: "username"))
                #expect(names.value(for: "username") == nil)

                // Clearing a namespace leaves the other one alone
                #expect(try names.removeAll() == 1)
                #expect(names.keys.isEmpty)
                #expect(profiles.value(for: "me") == Profile(name: "Ann", age: 40))
                #expect(_SettingsRegistry.shared(domain).totalCount == 1)
                #expect(_SettingsRegistry.shared(domain).namespaces().map(\.name) == ["app.profiles"])
            }
        }

        @Test("A namespace's values are read from disk when this process first opens it, not when it opened the domain")
        func firstOpenReadsTheSuiteAgain() throws {
            try SettingsTest.withDomain { domain in
                // Given a namespace another program wrote, and this process using the domain
                try SettingsTest.plant(Data("one".utf8), key: "one", namespace: "late", domain)
                let first = try SettingsTest.store("first", domain, codec: ValueCodec<String>.cacheValue)
                try first.set("x", for: "x")

                // When the other program writes again before this process opens "late"
                try SettingsTest.plant(Data("two".utf8), key: "two", namespace: "late", domain)
                let late = try SettingsTest.store("late", domain, codec: ValueCodec<String>.cacheValue)

                // Then the store sees both values, and the domain counts them
                #expect(late.keys == ["one", "two"])
                #expect(late.value(for: "two") == "two")
                #expect(_SettingsRegistry.shared(domain).totalCount == 3)

                // And from then on values come from memory: a later outside write is
                // not seen, and a second store of the namespace shares the first's
                try SettingsTest.plant(Data("three".utf8), key: "three", namespace: "late", domain)
                let again = try SettingsTest.store("late", domain, codec: ValueCodec<String>.cacheValue)
                #expect(again.keys == ["one", "two"])
                #expect(try late.removeAll() == 2)
            }
        }

        @Test("Keys are compared as Swift compares strings (NFC)")
        func unicodeKeys() throws {
            try SettingsTest.withDomain { domain in
                let settings = try SettingsTest.store("keys", domain, codec: ValueCodec<Int>.json)
                try settings.set(1, for: "caf\u{E9}")
                #expect(settings.value(for: "cafe\u{301}") == 1)
                try settings.set(2, for: "a/../b\u{0}c")
                #expect(settings.value(for: "a/../b\u{0}c") == 2)
                #expect(settings.count == 2)
            }
        }

        @Test(
            "A date its JSON text cannot carry back (before year 1, far past year 9999, NaN, infinite) is refused, not stored to read back wrong",
            arguments: [-1e11, 1e15, Double.nan, Double.infinity])
        func unrepresentableDate(secondsSince1970: Double) throws {
            try SettingsTest.withDomain { domain in
                // Given a store of dates holding one, and a date ISO 8601 text cannot carry
                let settings = try SettingsTest.store("dates", domain, codec: ValueCodec<Date>.json)
                let kept = Date(timeIntervalSince1970: 1_700_000_000.25)
                try settings.set(kept, for: "kept")
                let date = Date(timeIntervalSince1970: secondsSince1970)

                // When it is set, new or replacing
                let error = try #require(throws: HoardError.self) { try settings.set(date, for: "new") }
                let replacing = try #require(throws: HoardError.self) { try settings.set(date, for: "kept") }

                // Then the write is refused as an encoding failure, and nothing changed
                #expect(error.code == .encodingFailed, "\(error)")
                #expect(replacing.code == .encodingFailed)
                #expect(!settings.contains("new"))
                #expect(settings.value(for: "kept") == kept)
            }
        }

        @Test("A value over valueByteLimit is refused, names the limit and stores nothing")
        func valueSizeLimit() throws {
            try SettingsTest.withDomain { domain in
                // Given a store with the default 1 KiB limit and a value under a key
                let settings = try SettingsTest.store("sizes", domain, codec: ValueCodec<Data>.cacheValue)
                #expect(settings.configuration.valueByteLimit == 1_024)
                try settings.set(Data(count: 1_024), for: "fits")
                try settings.set(Data([1]), for: "kept")

                // When a larger value is set, new or replacing
                let error = try #require(throws: HoardError.self) { try settings.set(Data(count: 1_025), for: "big") }
                let replacing = try #require(throws: HoardError.self) {
                    try settings.set(Data(count: 2_000), for: "kept")
                }

                // Then the error says which limit, its value and the value's size; nothing changed
                #expect(error.code == .settingsValueTooLarge)
                #expect(error.message.contains("1025 bytes"))
                #expect(error.message.contains("valueByteLimit) is 1024"))
                #expect(error.key == "big")
                #expect(replacing.code == .settingsValueTooLarge)
                #expect(settings.value(for: "big") == nil)
                #expect(settings.value(for: "kept") == Data([1]))
                #expect(settings.keys == ["fits", "kept"])

                // A configured limit applies instead
                let small = try SettingsTest.store(
                    "sizes", domain, codec: ValueCodec<Data>.cacheValue, configuration: .init(valueByteLimit: 4))
                #expect(throws: HoardError.self) { try small.set(Data(count: 5), for: "five") }
                try small.set(Data(count: 4), for: "four")
            }
        }

        @Test("The item limit counts every store and namespace; replacing always fits")
        func itemLimitAcrossStores() throws {
            try SettingsTest.withDomain { domain in
                // Given two namespaces limited to 3 items together
                let limited = SettingsStore<Int>.Configuration(itemLimit: 3)
                let first = try SettingsTest.store("first", domain, codec: ValueCodec<Int>.json, configuration: limited)
                let second = try SettingsTest.store(
                    "second", domain, codec: ValueCodec<Int>.json, configuration: limited)
                try first.set(1, for: "a")
                try first.set(2, for: "b")
                try second.set(3, for: "c")

                // When a fourth item is added to either
                let error = try #require(throws: HoardError.self) { try second.set(4, for: "d") }

                // Then it is refused, saying which limit and the count; nothing is stored
                #expect(error.code == .settingsItemLimitReached)
                #expect(error.message.contains("hold 3 items"))
                #expect(error.message.contains("(itemLimit) is 3"))
                #expect(second.value(for: "d") == nil)
                #expect(second.keys == ["c"])
                #expect(throws: HoardError.self) { try first.set(4, for: "d") }

                // Replacing fits; removing one makes room for one
                try first.set(10, for: "a")
                #expect(first.value(for: "a") == 10)
                try first.removeValue(for: "b")
                try second.set(4, for: "d")
                #expect(_SettingsRegistry.shared(domain).totalCount == 3)

                // A store with the default limit (1,024) sees the same count and has room
                let roomy = try SettingsTest.store("third", domain, codec: ValueCodec<Int>.json)
                #expect(roomy.configuration.itemLimit == 1_024)
                try roomy.set(5, for: "e")
                #expect(_SettingsRegistry.shared(domain).totalCount == 4)
            }
        }

        @Test("Concurrent writers to several namespaces never pass the item limit together")
        func itemLimitUnderConcurrency() async throws {
            try await SettingsTest.withDomain { domain in
                // Given 8 threads, each adding 20 new keys to one of 4 namespaces, limited to 100 items
                let stores: [SettingsStore<Int>] = try (0..<4).map { i in
                    try SettingsTest.store(
                        "ns\(i)", domain, codec: ValueCodec<Int>.json, configuration: .init(itemLimit: 100))
                }
                // When they all write at once
                let outcomes = try await DiskTest.onThreads(8) { thread in
                    (0..<20).map { (i: Int) -> String in
                        do throws(HoardError) {
                            try stores[thread % 4].set(i, for: "t\(thread)-k\(i)")
                            return "stored"
                        } catch {
                            return error.code == .settingsItemLimitReached ? "refused" : "\(error)"
                        }
                    }
                }
                // Then exactly 100 writes went in, the rest were refused for the limit,
                // and the count matches what the namespaces hold
                let all = outcomes.joined()
                #expect(all.filter { $0 == "stored" }.count == 100)
                #expect(all.filter { $0 == "refused" }.count == 60)
                #expect(_SettingsRegistry.shared(domain).totalCount == 100)
                #expect(stores.map(\.count).reduce(0, +) == 100)
            }
        }

        @Test("Limits below 1 are refused")
        func invalidLimits() throws {
            try SettingsTest.withDomain { domain in
                for configuration in [SettingsStore<Int>.Configuration(itemLimit: 0), .init(valueByteLimit: 0)] {
                    let error = try #require(throws: HoardError.self) {
                        try SettingsTest.store(
                            "limits", domain, codec: ValueCodec<Int>.json, configuration: configuration)
                    }
                    #expect(error.code == .invalidConfiguration)
                }
            }
        }

        @Test(
            "A crafted namespace is refused before any suite is touched",
            arguments: [
                "", ".", "..", "../escape", "../../etc/passwd", "a/b", "/abs", ".hidden", "trailing.", "a..b",
                "nul\u{0}byte", "new\nline", "space d", "caf\u{E9}", String(repeating: "x", count: 129),
            ])
        func craftedNamespaces(namespace: String) throws {
            try SettingsTest.withDomain { domain in
                let before = SettingsTest.suiteFiles(domain)
                let error = try #require(throws: HoardError.self) {
                    try SettingsTest.store(namespace, domain, codec: ValueCodec<String>.cacheValue)
                }
                #expect(error.code == .invalidName)
                #expect(SettingsTest.suiteFiles(domain) == before)
                #expect(_SettingsRegistry.shared(domain).namespaces().isEmpty)
                #expect(throws: HoardError.self) {
                    try LocalStorage(cachesDirectory: URL(fileURLWithPath: "/nonexistent"), settingsDomain: domain)
                        .clearSettings(namespace: namespace)
                }
            }
        }

        @Test("A crafted name planted in the registry never becomes a suite name")
        func craftedRegistryEntry() throws {
            try SettingsTest.withDomain { domain in
                // Given a registry that other code filled with names that would escape
                let registry = try #require(UserDefaults(suiteName: domain.name))
                for crafted in ["../../escape", "/tmp/x", "", ".hidden"] { registry.set(true, forKey: crafted) }
                #expect(registry.synchronize())
                try SettingsTest.plant(Data("ok".utf8), key: "k", namespace: "fine", domain)

                // When the domain is opened, listed and deleted
                let storage = LocalStorage(
                    cachesDirectory: URL(fileURLWithPath: "/nonexistent"), settingsDomain: domain)
                let listed = try storage.inventory().settings
                let report = try storage.deleteAll()

                // Then only the valid namespace was seen and deleted
                #expect(listed.map(\.namespace) == ["fine"])
                #expect(report.deletedSettings.map(\.namespace) == ["fine"])
                #expect(_SettingsRegistry.shared(domain).totalCount == 0)
            }
        }

        @Test(
            "Well-formed namespaces are accepted",
            arguments: ["com.example.app", "a", "A-b_c.9", String(repeating: "x", count: 128)])
        func validNamespaces(namespace: String) throws {
            try SettingsTest.withDomain { domain in
                let settings = try SettingsTest.store(namespace, domain, codec: ValueCodec<String>.cacheValue)
                try settings.set("v", for: "k")
                #expect(settings.value(for: "k") == "v")
            }
        }

        @Test("Registered defaults, which UserDefaults answers for every suite, are not settings of any namespace")
        func registeredDefaultsAreNotSettings() throws {
            try SettingsTest.withDomain { domain in
                // Given a default registered process-wide under a key a namespace also uses
                let key = "registered-\(UUID().uuidString.prefix(8))"
                UserDefaults.standard.register(defaults: [key: Data("from the registration domain".utf8)])
                let settings = try SettingsTest.store("app", domain, codec: ValueCodec<String>.cacheValue)
                try settings.set("kept", for: "other")

                // Then the namespace does not hold it
                #expect(settings.value(for: key) == nil)
                #expect(!settings.contains(key))
                #expect(try !settings.removeValue(for: key))
                #expect(settings.keys == ["other"])

                // And once the namespace stores the key itself, its own value is read and removed
                try settings.set("own", for: key)
                #expect(settings.value(for: key) == "own")
                #expect(try settings.removeValue(for: key))
                #expect(settings.value(for: key) == nil)
            }
        }

        @Test("A key the namespace holds reads the namespace's value, not the command line's (-key value)")
        func argumentDomainDoesNotShadowTheSuite() async throws {
            try await SettingsTest.withDomain { domain in
                // Given a namespace that holds "theme"
                let settings = try SettingsTest.store("shadowed", domain, codec: ValueCodec<String>.cacheValue)
                try settings.set("own", for: "theme")

                // When a process started with -theme and -font, as property-list data that
                // would decode as Strings, reads both (UserDefaults answers every suite from
                // the command line first)
                let hex = Data("from the arguments".utf8).map { String(format: "%02x", $0) }.joined()
                let fromArguments = "<\(hex)>"
                let child = try await DiskTest.onThread {
                    try DiskTest.runChild([
                        "settings-read", domain.name, "shadowed", "theme", "font",
                        "-theme", fromArguments, "-font", fromArguments,
                    ])
                }

                // Then it reads the namespace's own value, and none for the key only the
                // command line has
                #expect(child.status == 0)
                #expect(child.lines == ["theme: own", "font: miss"])
            }
        }

        @Test("A value of another type in the suite is a miss and a report, and stays")
        func wrongTypeInSuite() async throws {
            try await SettingsTest.withDomain { domain in
                // Given a suite where other code stored a number and a dictionary
                try SettingsTest.plant(42, key: "count", namespace: "planted", domain)
                try SettingsTest.plant(["a": 1], key: "dict", namespace: "planted", domain)
                let recorder = SettingsEventRecorder()
                let settings = try SettingsTest.store(
                    "planted", domain, codec: ValueCodec<Int>.json, configuration: .init(onEvent: recorder.handler))
                let events = settings.events
                #expect(settings.keys == ["count", "dict"])
                try settings.set(7, for: "good")

                // When they are read
                #expect(settings.value(for: "count") == nil)
                #expect(settings.value(for: "dict") == nil)

                // Then each was reported with its reason, and nothing was removed
                #expect(recorder.undecodable.map(\.reason) == [.unexpectedType, .unexpectedType])
                #expect(recorder.undecodable.map(\.key) == ["count", "dict"])
                #expect(recorder.undecodable.allSatisfy { $0.namespace == "planted" })
                var iterator = events.makeAsyncIterator()
                guard case .undecodable(let first) = await iterator.next() else {
                    Issue.record("no event on the stream")
                    return
                }
                #expect(first.key == "count")
                #expect(settings.keys == ["count", "dict", "good"])
                #expect(settings.value(for: "good") == 7)
                #expect(_SettingsRegistry.shared(domain).totalCount == 3)
                let suite = try #require(UserDefaults(suiteName: domain.suiteName(for: "planted")))
                #expect(suite.integer(forKey: "count") == 42)
            }
        }

        @Test("A value of another type is reported as what it is (an integer, a string, …), never as Optional<Any>")
        func otherTypeIsNamed() throws {
            try SettingsTest.withDomain { domain in
                // Given a suite where other code stored values of every property-list kind
                let planted: [(key: String, value: Any, described: String)] = [
                    ("int", 42, "an integer"), ("string", "text", "a string"),
                    ("date", Date(timeIntervalSinceReferenceDate: 0), "a date"),
                    ("array", [1, 2], "an array of 2 elements"), ("real", 1.5, "a floating-point number"),
                    ("dict", ["a": 1], "a dictionary of 1 entry"), ("flag", true, "a boolean"),
                ]
                for (key, value, _) in planted { try SettingsTest.plant(value, key: key, namespace: "kinds", domain) }
                let recorder = SettingsEventRecorder()
                let settings = try SettingsTest.store(
                    "kinds", domain, codec: ValueCodec<Data>.cacheValue, configuration: .init(onEvent: recorder.handler)
                )

                // When each is read
                for (key, _, _) in planted { #expect(settings.value(for: key) == nil) }

                // Then each report says what the suite holds
                let details = recorder.undecodable.map(\.detail)
                #expect(details.count == planted.count)
                for ((key, _, described), detail) in zip(planted, details) {
                    #expect(
                        detail.hasPrefix("the suite holds \(described), not the encoded bytes"), "\(key): \(detail)")
                    #expect(!detail.contains("Optional"), "\(key): \(detail)")
                }
            }
        }

        @Test(
            "Two stores of different types in one namespace: a read of the other's value is a miss, and the value stays"
        )
        func undecodableValue() throws {
            try SettingsTest.withDomain { domain in
                // Given a value written as a String, read back as a Profile
                let strings = try SettingsTest.store("mixed", domain, codec: ValueCodec<String>.cacheValue)
                try strings.set("not json", for: "me")
                try strings.set("{\"name\":\"Bo\",\"age\":3}", for: "other")
                let recorder = SettingsEventRecorder()
                let profiles = try SettingsTest.store(
                    "mixed", domain, codec: ValueCodec<Profile>.json, configuration: .init(onEvent: recorder.handler))

                // When read as the wrong type, twice
                #expect(profiles.value(for: "me") == nil)
                #expect(profiles.value(for: "me") == nil)

                // Then reported each time and kept: the String store still reads it
                #expect(recorder.undecodable.map(\.reason) == [.undecodableValue, .undecodableValue])
                #expect(recorder.undecodable.first?.detail.contains("8 bytes do not decode") == true)
                #expect(strings.value(for: "me") == "not json")
                #expect(profiles.contains("me"))
                #expect(profiles.value(for: "other") == Profile(name: "Bo", age: 3))
                #expect(strings.keys == ["me", "other"])
            }
        }

        @Test("updates(for:) yields the current value, then every change from any instance")
        func updates() async throws {
            try await SettingsTest.withDomain { domain in
                let settings = try SettingsTest.store("observed", domain, codec: ValueCodec<String>.cacheValue)
                let other = try SettingsTest.store("observed", domain, codec: ValueCodec<String>.cacheValue)
                try settings.set("light", for: "theme")
                var iterator = settings.updates(for: "theme").makeAsyncIterator()
                #expect(await iterator.next() == .some("light"))

                try other.set("dark", for: "theme")
                try other.set("other key", for: "font")
                try settings.removeValue(for: "theme")
                try settings.set("blue", for: "theme")
                try other.removeAll()

                #expect(await iterator.next() == .some("dark"))
                #expect(await iterator.next() == .some(nil))
                #expect(await iterator.next() == .some("blue"))
                #expect(await iterator.next() == .some(nil))
            }
        }

        @Test("Values written by a child process are read by the parent and count toward the limit")
        func survivesRestart() async throws {
            try await SettingsTest.withDomain { domain in
                // Given a child process that wrote 5 values and exited
                let child = try await DiskTest.onThread {
                    try DiskTest.runChild(["settings-write", domain.name, "restarted", "5"])
                }
                #expect(child.status == 0)
                #expect(child.lines == ["done"])

                // When this process opens the namespace
                let settings = try SettingsTest.store(
                    "restarted", domain, codec: ValueCodec<String>.cacheValue, configuration: .init(itemLimit: 6))

                // Then it reads every value, and the count includes them
                #expect(settings.keys == (0..<5).map { "key-\($0)" }.sorted())
                #expect(settings.value(for: "key-3") == "value-3")
                #expect(_SettingsRegistry.shared(domain).totalCount == 5)
                try settings.set("sixth", for: "key-5")
                let error = try #require(throws: HoardError.self) { try settings.set("seventh", for: "key-6") }
                #expect(error.code == .settingsItemLimitReached)
            }
        }
    }
}
