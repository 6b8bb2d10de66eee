#if Redis
import Foundation
import Hoard
import HoardRemoteTestSupport
import Testing

@testable import HoardRedis

/// Namespaces are written as UTF-8 bytes (`<prefix>:<n>:<namespace>:<key>`, channel
/// `<prefix>:invalidate:<n>:<namespace>`), so "é" (U+00E9) and "e" + U+0301
/// (canonically equivalent Swift strings, different bytes) are two namespaces with
/// two channels. A batch touching both must announce each key on its own
/// namespace's channel.
@Suite(
    "RedisStore batches over canonically equivalent namespaces",
    .enabled(
        if: RedisTestServer.isAvailable,
        "needs a Redis server: set HOARD_REDIS_URL=redis://127.0.0.1:PORT/0 (scripts/test starts one)"),
    .timeLimit(.minutes(2)))
struct RedisCanonicalNamespaceTests {
    static let composed = "\u{E9}"
    static let decomposed = "e\u{301}"

    @Test("A batch setting a key in each of two byte-distinct namespaces announces each on its own channel")
    func batchAnnouncesBothNamespaces() async throws {
        #expect(Self.composed == Self.decomposed)
        #expect(Array(Self.composed.utf8) != Array(Self.decomposed.utf8))
        let configuration = try RedisTestServer.configuration()
        let writer = try RedisStore(configuration: configuration)
        let reader = try RedisStore(configuration: configuration)
        defer {
            Task {
                await writer.shutdown()
                await reader.shutdown()
            }
        }
        // Two namespaces on the server: two keys, two channels.
        #expect(writer.keyspace.key("k", in: Self.composed) != writer.keyspace.key("k", in: Self.decomposed))
        let decomposedChannel = String(buffer: reader.keyspace.channel(for: Self.decomposed))
        let seen = InvalidationRecorder(reader.invalidations(in: Self.decomposed))
        defer { seen.cancel() }
        #expect(
            try await eventually {
                try await writer.command("PUBSUB", "NUMSUB", decomposedChannel).elements?.last == .integer(1)
            })

        // The reader holds "y" of the decomposed namespace; the writer replaces it in a
        // batch that also touches the composed namespace.
        try await writer.set(Data("stale".utf8), for: "y", in: Self.decomposed, storedAt: .now, expiresAt: nil)
        #expect(await seen.wait(forCount: 1) == [.key("y")])
        try await writer.write([
            .set(Data("x".utf8), for: "x", in: Self.composed, storedAt: .now, expiresAt: nil),
            .set(Data("fresh".utf8), for: "y", in: Self.decomposed, storedAt: .now, expiresAt: nil),
        ])
        // The value changed on the server…
        #expect(try await reader.entry(for: "y", in: Self.decomposed)?.data == Data("fresh".utf8))
        // …and a later change ends the wait: by then the batch's announcement of "y" must have come.
        try await writer.set(Data("z".utf8), for: "z", in: Self.decomposed, storedAt: .now, expiresAt: nil)
        #expect(await eventually { seen.all.contains(.key("z")) })
        let received = seen.all
        #expect(
            received == [.key("y"), .key("y"), .key("z")],
            "the batch's change of \"y\" in the decomposed namespace was never announced on its channel: \(received)")
    }
}
#endif
