#if Postgres
import Foundation
import Hoard
import HoardPostgres
import Testing

/// The README's PostgreSQL example, done as the README does it, so it cannot rot.
@Suite(
    "README PostgreSQL example",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(3)))
struct PostgresReadmeExamplesTests {
    @Test("PostgresStore: configure from a URL, set, get, multi-get, remove, clear, maintain, under a Cache")
    func postgresExample() async throws {
        var configuration = try PostgresStore.Configuration(url: PostgresTestServer.url!)
        configuration.table = "shop_cache_\(UUID().uuidString.prefix(8).lowercased())"
        configuration.isUnlogged = true
        configuration.maximumRows = 1_000_000
        configuration.commandTimeout = .seconds(2)
        // Not in the README: other suites may starve this one's tasks for seconds.
        configuration.commandTimeout = .seconds(60)
        configuration.connectionWaitTimeout = .seconds(60)
        let store = try PostgresStore(configuration: configuration)

        try await store.set(Data("Ada".utf8), for: "user:42", in: "profiles", storedAt: .now, expiresAt: .now + 300)
        let entry = try await store.entry(for: "user:42", in: "profiles")
        #expect(entry?.data == Data("Ada".utf8))
        let many = try await store.entries(for: ["user:1", "user:42"], in: "profiles")
        #expect(Array(many.keys) == ["user:42"])
        try await store.removeValue(for: "user:42", in: "profiles")
        #expect(try await store.entry(for: "user:42", in: "profiles") == nil)
        try await store.removeAll(in: "profiles")
        try await store.maintain()

        var cacheConfiguration = Cache<String, String>.Configuration(name: "profiles")
        cacheConfiguration.localStores = .none  // the README keeps the default disk store
        cacheConfiguration.remoteStores = [store]
        let profiles = try Cache<String, String>(configuration: cacheConfiguration)
        try await profiles.set("Grace", for: "user:7")
        #expect(try await store.entry(for: "user:7", in: "profiles")?.data == Data("Grace".utf8))

        await store.shutdown()
        await PostgresTestServer.drop(configuration)
    }
}
#endif
