import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Cache where Key == URL, Value == Data {
    /// A cache of HTTP resources: a miss downloads the URL with `session`, and the
    /// bytes are kept as the configuration says, whatever the server said about them.
    /// For a cache that follows the server's `Cache-Control`, validators and `Vary`,
    /// use ``HTTPResponseCache``.
    ///
    /// ```swift
    /// let images = try Cache.http(configuration: .init(name: "images"))
    /// let png = try await images.value(for: url)   // downloaded once, then memory and disk
    /// ```
    ///
    /// A response outside 200–299 throws ``HoardError/Code/httpFailed`` (carrying the
    /// URL) and stores nothing; transport errors are thrown as `URLSession` reports them.
    /// The URL's full absolute string is the key, so URLs differing in query or port are
    /// different entries.
    ///
    /// - Parameters:
    ///   - configuration: The cache's configuration. Defaults to a cache named
    ///     `<program>.http` with a disk store in the default location, where
    ///     `<program>` is the bundle identifier on Apple platforms (the executable's
    ///     name when there is none) and the executable's name elsewhere, with every
    ///     character but ASCII letters, digits, `-`, `_` and `.` made a `-`: two
    ///     programs keep separate caches. A configuration given keeps its name.
    ///   - session: The session that downloads. Defaults to `URLSession.shared`.
    ///   - clock: Where every tier reads the time.
    public static func http(
        configuration: Configuration = .init(name: _HTTPStoreName.name("http")),
        session: URLSession = .shared,
        clock: any CacheClock = SystemClock()
    ) throws(HoardError) -> Cache<URL, Data> {
        try Cache(configuration: configuration, clock: clock) { url in
            try await _HTTPFetch.data(from: url, session: session)
        }
    }
}

/// A ready-made, process-wide HTTP cache.
public enum HTTPCache {
    /// A `Cache<URL, Data>` named `<program>.http`, as `Cache.http()` names it by
    /// default (one cache per program), with a disk store in the default location,
    /// fetching with `URLSession.shared`.
    ///
    /// If the disk store cannot be opened, the cache runs on memory alone and
    /// ``openingError`` says why.
    public static let shared: Cache<URL, Data> = opened.cache

    /// Why ``shared`` runs without its disk store, or `nil` when it has one.
    public static var openingError: HoardError? { opened.error }

    private static let opened: (cache: Cache<URL, Data>, error: HoardError?) = {
        do throws(HoardError) {
            return (try Cache.http(), nil)
        } catch {
            var memoryOnly = Cache<URL, Data>.Configuration(name: _HTTPStoreName.name("http"))
            memoryOnly.localStores = .none
            // Cannot throw: a memory-only cache with a valid name opens nothing.
            let cache = try! Cache.http(configuration: memoryOnly)
            return (cache, error)
        }
    }()
}

/// Downloads with `URLSession`, failing on a non-2xx status.
enum _HTTPFetch {
    static func data(from url: URL, session: URLSession) async throws -> Data {
        let (data, response) = try await session.data(from: url)
        if let http = response as? HTTPURLResponse { try _HTTPSuccess.check(http.statusCode, for: url) }
        return data
    }
}
