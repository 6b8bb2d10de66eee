#if Redis
import Testing

@testable import HoardRedis

@Suite("RedisStore configuration")
struct RedisConfigurationTests {
    @Test("redis:// URLs give host, port, credentials and database")
    func urls() throws {
        let plain = try RedisStore.Configuration(url: "redis://127.0.0.1:6380/2")
        #expect(plain.host == "127.0.0.1" && plain.port == 6380 && plain.database == 2)
        #expect(plain.username == nil && plain.password == nil && plain.keyPrefix == "hoard")

        let password = try RedisStore.Configuration(url: "redis://:s3cret@cache.internal")
        #expect(password.host == "cache.internal" && password.port == 6379 && password.database == 0)
        #expect(password.username == nil && password.password == "s3cret")

        let user = try RedisStore.Configuration(url: "redis://alice:p%40ss%3Aword@[::1]:7000/0")
        #expect(user.host == "::1" && user.port == 7000)
        #expect(user.username == "alice" && user.password == "p@ss:word")
    }

    @Test(
        "Bad URLs and out-of-range settings are refused",
        arguments: [
            "rediss://host", "http://host", "redis://", "redis://host/db", "not a url",
        ])
    func badURLs(url: String) {
        #expect(throws: RedisError.self) { _ = try RedisStore.Configuration(url: url) }
    }

    @Test("A store refuses an invalid configuration")
    func validation() {
        let invalid: [RedisStore.Configuration] = [
            .init(host: ""), .init(port: 0), .init(port: 70_000), .init(database: -1), .init(username: "alice"),
            .init(maximumConnections: 0), .init(pipeliningLimit: 0), .init(commandTimeout: .zero),
            .init(initialReconnectDelay: .seconds(2), maximumReconnectDelay: .seconds(1)), .init(maximumReplyDepth: 0),
            .init(invalidationPingInterval: .zero), .init(invalidationPingTimeout: .milliseconds(-1)),
        ]
        for configuration in invalid {
            #expect(throws: RedisError.self) { _ = try RedisStore(configuration: configuration) }
        }
        #expect(throws: Never.self) { _ = try RedisStore(configuration: .init()) }
    }

    @Test("The invalidation connection's PING check is on by default, every 5 s; nil turns it off")
    func pingCheck() {
        #expect(RedisStore.Configuration().invalidationPingInterval == .seconds(5))
        #expect(throws: Never.self) { _ = try RedisStore(configuration: .init(invalidationPingInterval: nil)) }
        var configuration = RedisStore.Configuration()
        configuration.invalidationPingInterval = nil
        #expect(throws: Never.self) { _ = try RedisStore(configuration: configuration) }
        configuration.invalidationPingInterval = .milliseconds(-1)
        #expect(throws: RedisError.self) { _ = try RedisStore(configuration: configuration) }
    }
}
#endif
