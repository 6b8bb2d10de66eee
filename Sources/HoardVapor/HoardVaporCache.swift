#if Vapor
import Foundation
import Hoard
import NIOCore
import Vapor

/// A Vapor `Cache` backed by a Hoard `Cache`: a memory tier over a disk store,
/// Redis or PostgreSQL (any tiers the cache has), with single-flight reads and
/// invalidation across instances when the cache has remote stores.
///
/// ```swift
/// try app.caches.use(.hoard(configuration: .init(name: "vapor")))
/// try await req.cache.set("greeting", to: "hello", expiresIn: .minutes(5))
/// let greeting = try await req.cache.get("greeting", as: String.self)
/// ```
///
/// Values are stored as JSON (`JSONEncoder`'s defaults). A value that does not
/// decode as the type asked for reads as `nil` and stays stored; setting `nil`
/// removes the key. `set` without `expiresIn` stores a value that never expires:
/// the cache's `defaultExpiry` is not applied.
public struct HoardVaporCache: Vapor.Cache, Sendable {
    /// The cache values are kept in.
    public let cache: Hoard.Cache<String, Data>
    /// The event loop futures complete on.
    public let eventLoop: any EventLoop

    /// A Vapor cache over `cache`, completing its futures on `eventLoop`.
    public init(cache: Hoard.Cache<String, Data>, on eventLoop: any EventLoop) {
        self.cache = cache
        self.eventLoop = eventLoop
    }

    /// The value for `key` from any tier of the cache (or its fetch closure),
    /// decoded from JSON as `type`; `nil` when there is none or it does not decode.
    /// The future completes on ``eventLoop``.
    public func get<T>(_ key: String, as type: T.Type) -> EventLoopFuture<T?> where T: Decodable & Sendable {
        let cache = self.cache
        return eventLoop.makeFutureWithTask { try await cache.value(for: key) }.map { data in
            data.flatMap { try? JSONDecoder().decode(T.self, from: $0) }
        }
    }

    /// Stores `value` as JSON for `key`, never expiring, or removes `key` when
    /// `value` is `nil`; as ``set(_:to:expiresIn:)`` with no lifetime.
    public func set<T>(_ key: String, to value: T?) -> EventLoopFuture<Void> where T: Encodable {
        set(key, to: value, expiresIn: nil)
    }

    /// Stores `value` as JSON for `key` with a lifetime of `expirationTime` (none
    /// when `nil`), or removes `key` when `value` is `nil`. The future succeeds once
    /// every store of the cache has the change, and fails with the encoding error or
    /// the first store error.
    public func set<T>(
        _ key: String, to value: T?, expiresIn expirationTime: CacheExpirationTime?
    ) -> EventLoopFuture<Void> where T: Encodable {
        let data: Data?
        do {
            data = try value.map { try JSONEncoder().encode($0) }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let cache = self.cache
        return eventLoop.makeFutureWithTask {
            guard let data else { return try await cache.removeValue(for: key) }
            try await cache.set(
                data, for: key, expires: expirationTime.map { .seconds(TimeInterval($0.seconds)) } ?? .never)
        }
    }

    /// The same cache, completing its futures on `request`'s event loop.
    public func `for`(_ request: Request) -> HoardVaporCache {
        HoardVaporCache(cache: cache, on: request.eventLoop)
    }
}

extension Application.Caches.Provider {
    /// Vapor's caches backed by `cache`: `app.caches.use(.hoard(cache))`.
    public static func hoard(_ cache: Hoard.Cache<String, Data>) -> Self {
        .init { application in
            application.caches.use { application in
                HoardVaporCache(cache: cache, on: application.eventLoopGroup.any())
            }
        }
    }

    /// Vapor's caches backed by a new Hoard cache with `configuration`.
    ///
    /// - Throws: What creating the cache throws (an invalid configuration, a store
    ///   directory that cannot be created), so a misconfiguration stops the
    ///   application at startup.
    public static func hoard(configuration: Hoard.Cache<String, Data>.Configuration) throws -> Self {
        .hoard(try Hoard.Cache<String, Data>(configuration: configuration))
    }
}
#endif
