#if Postgres
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardPostgres

/// Keys are `bytea` holding UTF-8, so "é" (U+00E9) and "e" + U+0301 (canonically
/// equivalent Swift strings, different bytes) are two rows. `write(_:)` must apply
/// a change to each of them.
@Suite(
    "PostgresStore batches with canonically equivalent keys",
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipMessage),
    .timeLimit(.minutes(2)))
struct PostgresCanonicalKeyBatchTests {
    static let composed = "\u{E9}"  // é, 2 UTF-8 bytes
    static let decomposed = "e\u{301}"  // e + combining acute, 3 UTF-8 bytes

    @Test("write(_:) applies a set to both of two keys that differ in bytes but compare equal as Strings")
    func batchKeepsBothKeys() async throws {
        #expect(Self.composed == Self.decomposed)  // Swift says equal…
        #expect(Array(Self.composed.utf8) != Array(Self.decomposed.utf8))  // …the table does not
        let configuration = try PostgresTestServer.configuration()
        let store = try PostgresStore(configuration: configuration)
        defer {
            Task {
                await store.shutdown()
                await PostgresTestServer.drop(configuration)
            }
        }

        // One by one, the store keeps them apart: two rows.
        try await store.set(Data("old".utf8), for: Self.composed, in: "ns", storedAt: .now, expiresAt: nil)
        try await store.set(Data("other-old".utf8), for: Self.decomposed, in: "ns", storedAt: .now, expiresAt: nil)
        #expect(try await store.entry(for: Self.composed, in: "ns")?.data == Data("old".utf8))
        #expect(try await store.entry(for: Self.decomposed, in: "ns")?.data == Data("other-old".utf8))

        // One batch setting both: it returns without an error…
        try await store.write([
            .set(Data("new".utf8), for: Self.composed, in: "ns", storedAt: .now, expiresAt: nil),
            .set(Data("other-new".utf8), for: Self.decomposed, in: "ns", storedAt: .now, expiresAt: nil),
        ])
        // …so both sets must be on the server.
        let composed = try await store.entry(for: Self.composed, in: "ns")?.data
        let decomposed = try await store.entry(for: Self.decomposed, in: "ns")?.data
        #expect(decomposed == Data("other-new".utf8))
        #expect(
            composed == Data("new".utf8),
            "write(_:) reported success, but the set of \"\\u{E9}\" is not on the server: it holds \(composed.map { String(decoding: $0, as: UTF8.self) } ?? "nothing")"
        )
    }
}
#endif
