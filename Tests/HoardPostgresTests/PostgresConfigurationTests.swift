#if Postgres
import Foundation
import Testing

@testable import HoardPostgres

@Suite("PostgresStore configuration")
struct PostgresConfigurationTests {
    @Test("URLs: user, password, host, port, database and sslmode are read; others are refused")
    func urls() throws {
        let full = try PostgresStore.Configuration(
            url: "postgresql://app%40x:p%3Ass@db.internal:6543/my%20db?sslmode=disable")
        #expect(full.username == "app@x")
        #expect(full.password == "p:ss")
        #expect(full.host == "db.internal")
        #expect(full.port == 6543)
        #expect(full.database == "my db")

        let bare = try PostgresStore.Configuration(url: "postgres://[::1]")
        #expect(bare.host == "::1")
        #expect(bare.port == 5432)
        #expect(bare.username == "postgres")
        #expect(bare.database == nil)
        #expect(bare.password == nil)
        _ = try PostgresStore.Configuration(url: "postgres://h/db?sslmode=require")

        for url in ["", "http://h/db", "postgres:///db", "postgres://h/db?sslmode=sometimes", "not a url at all"] {
            #expect(throws: PostgresStoreError.self, "\(url)") { try PostgresStore.Configuration(url: url) }
        }
    }

    @Test(
        "statement_timeout is commandTimeout in whole milliseconds within 1...Int32.max; a huge timeout is no trap",
        arguments: [
            (Duration.seconds(5), 5_000), (.microseconds(1), 1), (.milliseconds(1_500), 1_500),
            (.milliseconds(Int64(Int32.max)), Int(Int32.max)), (.seconds(Int64(Int32.max)), Int(Int32.max)),
            (.seconds(Int64.max), Int(Int32.max)),
        ])
    func statementTimeout(_ timeout: Duration, _ milliseconds: Int) throws {
        #expect(PostgresStore.Configuration.statementTimeout(timeout) == milliseconds)
        var configuration = try PostgresStore.Configuration(url: "postgres://h/db")
        configuration.commandTimeout = timeout
        let client = configuration.clientConfiguration(connections: 1, keepsConnectionsOpen: false)
        let parameters = client.options.additionalStartupParameters
        #expect(parameters.first { $0.0 == "statement_timeout" }?.1 == String(milliseconds))
    }

    @Test("Out-of-range settings and names PostgreSQL would truncate or refuse are invalidConfiguration")
    func validation() throws {
        var cases: [(String, PostgresStore.Configuration)] = []
        func bad(_ what: String, _ change: (inout PostgresStore.Configuration) -> Void) {
            var configuration = PostgresStore.Configuration()
            change(&configuration)
            cases.append((what, configuration))
        }
        bad("empty table") { $0.table = "" }
        bad("49-byte table") { $0.table = String(repeating: "t", count: 49) }
        bad("NUL in table") { $0.table = "a\0b" }
        bad("64-byte schema") { $0.schema = String(repeating: "s", count: 64) }
        bad("empty schema") { $0.schema = "" }
        bad("quote in channel") { $0.notificationChannel = "a\"b" }
        bad("64-byte channel") { $0.notificationChannel = String(repeating: "c", count: 64) }
        bad("port 0") { $0.port = 0 }
        bad("empty host") { $0.host = "" }
        bad("empty user") { $0.username = "" }
        bad("no connections") { $0.maximumConnections = 0 }
        bad("zero command timeout") { $0.commandTimeout = .zero }
        bad("zero wait") { $0.connectionWaitTimeout = .zero }
        bad("backoff upside down") { $0.maximumReconnectDelay = .milliseconds(1) }
        bad("negative rows") { $0.maximumRows = -1 }
        bad("negative bytes") { $0.maximumBytes = -1 }
        bad("negative interval") { $0.maintenanceInterval = -1 }
        for (what, configuration) in cases {
            do {
                _ = try PostgresStore(configuration: configuration)
                Issue.record("\(what) should be refused")
            } catch {
                #expect(error.code == .invalidConfiguration, "\(what)")
                #expect(!error.message.isEmpty)
            }
        }
        // The longest names allowed are accepted.
        var longest = PostgresStore.Configuration()
        longest.table = String(repeating: "t", count: 48)
        longest.schema = String(repeating: "s", count: 63)
        let store = try PostgresStore(configuration: longest)
        #expect(store.channel.hasPrefix("hoard:") && store.channel.utf8.count <= 63)
    }

    @Test("The channel is hoard:<schema>.<table> when that is safe, a hash otherwise; a set channel is used as is")
    func channels() {
        var configuration = PostgresStore.Configuration()
        #expect(configuration.channel == "hoard:public.hoard_cache")
        configuration.table = "we\"ird table"
        let hashed = configuration.channel
        #expect(hashed.hasPrefix("hoard:") && !hashed.contains("\"") && hashed.utf8.count <= 63)
        configuration.table = "we\"ird table2"
        #expect(configuration.channel != hashed, "different tables, different channels")
        configuration.notificationChannel = "shared:cache"
        #expect(configuration.channel == "shared:cache")
    }

    @Test("Identifiers are quoted with embedded quotes doubled")
    func quoting() {
        #expect(_PostgresStatements.quote("plain") == "\"plain\"")
        #expect(_PostgresStatements.quote("a\"; DROP TABLE x; --") == "\"a\"\"; DROP TABLE x; --\"")
        let statements = _PostgresStatements(schema: "s\"", table: "t", isUnlogged: true)
        #expect(statements.qualifiedTable == "\"s\"\"\".\"t\"")
        #expect(statements.createTable.hasPrefix("CREATE UNLOGGED TABLE IF NOT EXISTS \"s\"\"\".\"t\""))
        #expect(statements.createSchema == "CREATE SCHEMA IF NOT EXISTS \"s\"\"\"")
        #expect(_PostgresStatements(schema: "public", table: "t", isUnlogged: false).createSchema == nil)
    }
}
#endif
