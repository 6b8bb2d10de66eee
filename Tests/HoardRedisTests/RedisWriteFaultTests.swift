#if Redis
import Foundation
import Hoard
import NIOCore
import Testing

@testable import HoardRedis

/// `write(_:)` against a scripted server that fails chosen commands: every round trip
/// of a batch is attempted, and the error names what was not applied.
@Suite("RedisStore batches with failures", .timeLimit(.minutes(10)))
struct RedisWriteFaultTests {
    @Test(
        "A failed round trip ends no batch: later rounds are applied and announced; the error names what was not")
    func failedRoundTrip() async throws {
        let server = try await ScriptedRedisServer { words in
            let mentions = { (text: String) in words.dropFirst().contains { $0.contains(text) } }
            switch words.first {
            case "SET" where mentions("lost"): return .close
            case "SET" where mentions("refused"): return .reply(.error("ERR refused by the script"))
            case "SET": return .reply(.simpleString("OK"))
            case "SCAN": return .reply(.array([.bulkString(ByteBuffer(string: "0")), .array([])]))
            default: return .reply(.integer(0))
            }
        }
        defer { Task { await server.close() } }
        let store = try RedisStore(configuration: .init(port: server.port, keyPrefix: "fault"))
        defer { Task { await store.shutdown() } }
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let batch: [CacheStoreWrite] = [
            .set(Data([1]), for: "lost", in: "ns", storedAt: date, expiresAt: nil),
            .removeAll(in: "other"),
            .set(Data([2]), for: "refused", in: "ns", storedAt: date, expiresAt: nil),
            .set(Data([3]), for: "kept", in: "ns", storedAt: date, expiresAt: nil),
            .removeValue(for: "gone", in: "ns"),
        ]
        let error = await #expect(throws: RedisError.self) { try await store.write(batch) }
        #expect(error?.code == .connectionClosed, "\(String(describing: error))")
        #expect(error?.unappliedChanges == [batch[0], batch[2]])
        #expect(error?.description.contains("set lost in ns") == true)
        #expect(error?.description.contains("set refused in ns") == true)

        let commands = server.commands
        func position(_ name: String, mentioning text: String) -> Int? {
            commands.lastIndex { $0.first == name && $0.dropFirst().contains { $0.contains(text) } }
        }
        // Every round was sent, in order, after the one whose connection closed.
        let lost = try #require(position("SET", mentioning: "lost"))
        let scan = try #require(commands.firstIndex { $0.first == "SCAN" })
        let kept = try #require(position("SET", mentioning: "kept"))
        let gone = try #require(position("UNLINK", mentioning: "gone"))
        #expect(lost < scan && scan < kept && kept < gone)
        // The lost round's change may have been applied: it is announced once every
        // round was attempted.
        let announced = try #require(position("PUBLISH", mentioning: "lost"))
        #expect(announced > gone)
        #expect(position("PUBLISH", mentioning: "kept").map { $0 > gone } == true)
    }
}
#endif
