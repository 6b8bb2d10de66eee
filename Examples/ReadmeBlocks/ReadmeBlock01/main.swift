import Foundation
import Hoard
import Logging

let logger = Logger(label: "feeds")
/// Stands in for your HTTP client: `nil` for a feed that does not exist.
let download: @Sendable (String) async throws -> Data? = { url in url == "missing" ? nil : Data(url.utf8) }

var configuration = Cache<String, Data>.Configuration(name: "feeds")
configuration.memory = .init(countLimit: 500, policy: .tinyLFU)
configuration.defaultExpiry = .minutes(5)
configuration.staleWhileRevalidate = 60   // serve an expired value for up to 60 s while refreshing once
configuration.negativeCaching = 30        // remember "not found" for 30 s
configuration.expiryJitter = 0.1          // lifetimes spread ±10%
configuration.onError = { failure in print(failure) }   // write-behind and other background failures
configuration.logger = logger             // the same failures, logged with hoard.* metadata
let feeds = try Cache(configuration: configuration) { url in try await download(url) }

print(feeds.statistics)   // memory (hits 0, misses 0, promotions 0), local (hits 0, ...), ..., misses 0, ...
