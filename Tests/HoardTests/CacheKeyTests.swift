import Foundation
import Hoard
import Testing

@Suite("CacheKey")
struct CacheKeyTests {
    @Test("URLs differing in query, port or fragment are different keys")
    func urlKeysKeepEveryPart() throws {
        let base = try #require(URL(string: "https://example.com/a?x=1"))
        let otherQuery = try #require(URL(string: "https://example.com/a?x=2"))
        let otherPort = try #require(URL(string: "https://example.com:8443/a?x=1"))
        let withFragment = try #require(URL(string: "https://example.com/a?x=1#top"))
        let strings = Set([base, otherQuery, otherPort, withFragment].map(\.cacheKeyString))
        #expect(strings.count == 4)
        #expect(base.cacheKeyString == "https://example.com/a?x=1")
    }

    @Test("Built-in keys have stable string forms")
    func builtInStringForms() throws {
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(uuid.cacheKeyString == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(42.cacheKeyString == "42")
        #expect(Int64(-7).cacheKeyString == "-7")
        #expect("a/b".cacheKeyString == "a/b")
    }

    struct AvatarKey: CacheKey {
        var userID: Int
        var size: Int
        var cacheKeyString: String { "avatar/\(userID)/\(size)" }
    }

    @Test("A custom struct conforms by giving its string form")
    func customKey() throws {
        let cache = try MemoryCache<AvatarKey, String>()
        cache[AvatarKey(userID: 1, size: 64)] = "small"
        cache[AvatarKey(userID: 1, size: 128)] = "large"
        #expect(cache[AvatarKey(userID: 1, size: 64)] == "small")
        #expect(AvatarKey(userID: 1, size: 128).cacheKeyString == "avatar/1/128")
    }
}
