#if Hummingbird
import Foundation
import Hoard
import Hummingbird
import ServiceLifecycle
import Synchronization

/// A Hummingbird `PersistDriver` backed by a Hoard `Cache`: a memory tier over a
/// disk store, Redis or PostgreSQL (any tiers the cache has), with invalidation
/// across instances when the cache has remote stores.
///
/// ```swift
/// let persist = try HoardPersistDriver(configuration: .init(name: "sessions"))
/// let app = Application(router: router, services: [persist])
/// try await persist.set(key: "session:42", value: session, expires: .seconds(3_600))
/// ```
///
/// Values are stored as JSON, as `ValueCodec.json` writes it: dates as ISO-8601
/// strings, like the rest of Hoard's JSON. A value whose dates are `JSONEncoder`'s
/// default (seconds since 2001) reads too.
/// What it guarantees, as the protocol asks:
/// - ``create(key:value:expires:)`` throws `PersistError.duplicate` when the key holds a
///   live value. Two creates of one key through one driver never both succeed;
///   through two drivers (or processes) sharing a remote store, they may.
/// - ``set(key:value:expires:)`` without `expires` keeps the lifetime the key had;
///   for a new key, and for ``create(key:value:expires:)`` without `expires`, the
///   value never expires (the cache's `defaultExpiry` is not applied).
/// - ``get(key:as:)`` returns `nil` for a value that does not decode as the type
///   asked for, and leaves it stored.
/// - ``getWithTTL(key:as:)`` returns the time left before the value expires, in
///   whole milliseconds, never negative, at most `.milliseconds(Int64.max)` (about
///   292 million years) for an expiry further away, infinitely far included; it
///   never traps on an expiry read back from a store.
/// - ``set(key:value:expires:)``, ``create(key:value:expires:)`` and
///   ``remove(key:)`` return once every store of the cache has the change: they
///   queue nothing. What queues is the cache's own work behind reads: a value
///   found in a slower tier (Redis, PostgreSQL, disk) is copied into the faster
///   stores behind the read. As a `Service`, ``run()`` serves until graceful
///   shutdown, then waits for those copies (``flush()``).
public struct HoardPersistDriver: PersistDriver {
    /// The cache values are kept in.
    public let cache: Cache<String, Data>
    private let clock: any CacheClock
    private let creating = _KeysBeingCreated()

    /// A driver over `cache`, whose clock must be `clock` (its expiry times are read
    /// with it).
    public init(cache: Cache<String, Data>, clock: any CacheClock = SystemClock()) {
        self.cache = cache
        self.clock = clock
    }

    /// A driver over a new cache with `configuration`.
    ///
    /// - Throws: What creating the cache throws (an invalid configuration, a store
    ///   directory that cannot be created), so a misconfiguration stops the server at
    ///   startup.
    public init(configuration: Cache<String, Data>.Configuration, clock: any CacheClock = SystemClock()) throws {
        self.init(cache: try Cache<String, Data>(configuration: configuration, clock: clock), clock: clock)
    }

    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        guard creating.begin(key) else { throw PersistError.duplicate }
        defer { creating.end(key) }
        if try await cache.entry(for: key) != nil { throw PersistError.duplicate }
        try await cache.set(try Self.encode(value), for: key, expires: expires.map(Self.expiry) ?? .never)
    }

    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let data = try Self.encode(value)
        if let expires {
            try await cache.set(data, for: key, expires: Self.expiry(expires))
        } else {
            // Keep the lifetime the key had (none for a new key).
            let kept = try await cache.entry(for: key)?.expiresAt
            try await cache.set(data, for: key, expires: kept.map { .at($0) } ?? .never)
        }
    }

    public func get<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> Object? {
        guard let data = try await cache.value(for: key) else { return nil }
        return Self.decode(Object.self, from: data)
    }

    public func getWithTTL<Object: Codable & Sendable>(
        key: String, as type: Object.Type
    ) async throws -> (object: Object, ttl: Duration?)? {
        guard let entry = try await cache.entry(for: key),
            let object = Self.decode(Object.self, from: entry.value)
        else { return nil }
        return (object, entry.expiresAt.flatMap { Self.timeLeft(until: $0, now: clock.now()) })
    }

    public func remove(key: String) async throws {
        try await cache.removeValue(for: key)
    }

    /// Serves until graceful shutdown (or cancellation), then waits for the writes the
    /// cache still queues.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch is CancellationError {
            // Cancelled instead of shut down gracefully: flush all the same.
        }
        await cache.flush()
    }

    /// Waits for the writes the cache still queues.
    public func shutdown() async throws {
        await cache.flush()
    }

    /// Waits until the writes the cache queued so far (copies of values read from
    /// slower tiers into faster stores) have reached the stores, as
    /// `Cache.flush()` does.
    public func flush() async {
        await cache.flush()
    }

    /// `value` as JSON, dates as ISO-8601 strings (``ValueCodec/json``).
    static func encode<Object: Codable & Sendable>(_ value: Object) throws -> Data {
        try ValueCodec<Object>.json.encode(value)
    }

    /// The object `data` holds: JSON with ISO-8601 dates, or, for a value stored
    /// before the driver wrote those, `JSONDecoder`'s default (dates as seconds
    /// since 2001); `nil` when it is neither.
    static func decode<Object: Codable & Sendable>(_ type: Object.Type, from data: Data) -> Object? {
        if let object = try? ValueCodec<Object>.json.decode(data) { return object }
        return try? JSONDecoder().decode(Object.self, from: data)
    }

    /// The time from `now` until `expiresAt`, rounded to whole milliseconds and
    /// clamped to `.zero...milliseconds(Int64.max)`; `nil` when the expiry is not a
    /// number (such an entry never expires, as far as the cache is concerned).
    static func timeLeft(until expiresAt: Date, now: Date) -> Duration? {
        let milliseconds = (expiresAt.timeIntervalSince(now) * 1000).rounded()
        if milliseconds.isNaN { return nil }
        if milliseconds <= 0 { return .zero }
        return .milliseconds(Int64(exactly: milliseconds) ?? .max)
    }

    static func expiry(_ duration: Duration) -> Expiry {
        let (seconds, attoseconds) = duration.components
        return .seconds(max(0, Double(seconds) + Double(attoseconds) / 1e18))
    }
}

/// The keys a driver is creating now, so that two creates of one key never both
/// succeed.
final class _KeysBeingCreated: Sendable {
    private let keys = Mutex<Set<String>>([])

    /// Marks `key`; `false` when it was already.
    func begin(_ key: String) -> Bool { keys.withLock { $0.insert(key).inserted } }

    func end(_ key: String) { _ = keys.withLock { $0.remove(key) } }
}
#endif
