#if Postgres
import Foundation
import Hoard
import HoardRemoteTestSupport
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

@testable import HoardPostgres

/// The PostgreSQL server the server tests use: the one `HOARD_POSTGRES_URL` names.
///
/// `scripts/test` starts a throwaway cluster and sets the variable. Without it the
/// tests that need a server are skipped, and say how to run them.
enum PostgresTestServer {
    static let url = ProcessInfo.processInfo.environment["HOARD_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// Whether a server was given.
    static var isAvailable: Bool { url != nil }

    /// Why the server tests are skipped.
    static let skipMessage: Comment =
        "needs a PostgreSQL server: set HOARD_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres (scripts/test starts one)"

    /// A configuration for the server with a table no other test uses, and
    /// generous time limits.
    static func configuration(table: String = "hoard_test_\(UUID().uuidString.prefix(8).lowercased())") throws
        -> PostgresStore.Configuration
    {
        var configuration = try PostgresStore.Configuration(url: url ?? "postgres://postgres@127.0.0.1:5432/postgres")
        configuration.table = table
        // Generous limits: other suites may hold both threads of the cooperative pool
        // for many seconds, starving the pool's connection attempts. Tests of the
        // limits set their own.
        configuration.connectionWaitTimeout = .seconds(60)
        configuration.commandTimeout = .seconds(60)
        return configuration
    }

    /// Runs one SQL statement on a connection of its own and returns its rows'
    /// first columns as text.
    static func sql(_ statement: String) async throws -> [String?] {
        let configuration = try configuration()
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(),
            configuration: .init(
                host: configuration.host, port: configuration.port, username: configuration.username,
                password: configuration.password, database: configuration.database, tls: .disable),
            id: 1, logger: PostgresStore.silentLogger
        ).get()
        defer { Task { try? await connection.close() } }
        var values: [String?] = []
        let rows = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresStore.silentLogger)
        for try await row in rows {
            let cell = row.makeRandomAccess()[0]
            values.append(cell.bytes.map { String(buffer: $0) })
        }
        return values
    }

    /// Drops a test's table when the test is done.
    static func drop(_ configuration: PostgresStore.Configuration) async {
        _ = try? await sql(
            "DROP TABLE IF EXISTS \(_PostgresStatements(schema: configuration.schema, table: configuration.table, isUnlogged: false).qualifiedTable)"
        )
    }
}

/// Waits until `store` listens (its first `LISTEN` confirmed).
func waitUntilListening(_ store: PostgresStore) async -> Bool {
    await eventually { store.isListening }
}

/// A date with whole milliseconds, which survives timestamptz's microseconds exactly.
func wholeMilliseconds(_ date: Date = Date()) -> Date {
    Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
}

/// A temporary directory, removed after `body`.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hoard-pg-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
#endif
