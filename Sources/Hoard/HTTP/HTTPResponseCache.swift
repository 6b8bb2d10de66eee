import Foundation
import Logging
import Synchronization

/// An HTTP cache that follows HTTP caching (RFC 9111) over any Hoard tiers: memory,
/// disk, Redis, PostgreSQL.
///
/// ```swift
/// let http = try HTTPResponseCache()
/// let response = try await http.response(for: url, headers: ["Accept-Language": "en"])
/// let fresh = response.isFromCache       // true when no request reached the origin
/// let body = try await http.data(from: url)   // throws on a non-2xx status
/// ```
///
/// What it does, as a shared cache (``Configuration/isShared``, the default):
/// - Stores only responses to `GET` with a final status that may be stored: never
///   with `no-store` (request or response), `private` (unless the cache is private),
///   or to a request with `Authorization` unless the response says `public`,
///   `must-revalidate` or `s-maxage`; and only when the response gives a freshness
///   lifetime or its status is cacheable by default (200, 203, 204, 300, 301, 308,
///   404, 405, 410, 414, 501). `Vary: *` is never stored.
/// - Freshness from `s-maxage`, then `max-age`, then `Expires` minus `Date`, else a
///   tenth of the time since `Last-Modified` (at most a day, by default) for statuses
///   cacheable by default; age as RFC 9111, section 4.2.3 computes it.
/// - A fresh response is served without a request. A stale one (or any with
///   `no-cache`, or when the request says `no-cache` or a `max-age` it exceeds) is
///   revalidated with `If-None-Match` / `If-Modified-Since`; a `304` refreshes the
///   stored headers and dates without a body. `stale-while-revalidate` serves a stale
///   response while one background request revalidates it; `stale-if-error` serves
///   it when the origin fails or answers 5xx; without it, a stale response is
///   served only when the origin cannot be reached at all (see
///   ``Configuration/servesStaleWhenDisconnected``). `must-revalidate` (and, for a
///   shared cache, `proxy-revalidate` and `s-maxage`, which implies it) forbids
///   serving the response stale: neither applies, nor does a request's `max-stale`.
/// - A response that arrives without `Date` is given one, the time it arrived
///   (RFC 9110, section 6.6.1), before it is stored or returned.
/// - Responses are stored under the request's target URI: its URL without the
///   fragment, with scheme and host in lowercase, no default port, an escaped
///   unreserved character decoded (`%7E` is `~`), other escapes in uppercase hex
///   (`%3a` is `%3A`), no dot-segments in the path (`/a/./b/../c` is `/a/c`) and
///   an empty path as `/` (RFC 9110, sections 4.2.3 and 7.1; RFC 3986, section
///   6.2.2), so a `GET` and an unsafe method's invalidation agree on which URLs are
///   one resource; URLs that differ otherwise in their path or query (its order,
///   or a reserved character escaped or not, `%2F` and `/`) are not.
/// - The stored response is chosen by the request header fields its `Vary` names;
///   up to ``Configuration/maximumVariants`` are kept per URL. A request with
///   obs-text in such a field (an ISO-8859-1 value, see
///   ``HTTPHeaderFields/Field/ValueEncoding``) is sent to the origin and its
///   response returned unstored: the selecting values are kept as text, which
///   cannot tell those bytes from UTF-8.
/// - Field values keep their bytes: a value with obs-text (bytes 0x80–0xFF that are
///   not UTF-8) is stored and served with the bytes the origin sent, a
///   revalidation sends the stored `ETag` and `Last-Modified` with their bytes, and
///   validators are compared byte for byte (a client's `If-None-Match` and
///   `If-Range`, those of a `304` or of a `200` to a `HEAD`).
/// - Concurrent requests for the same URL with the same header fields make one
///   request to the origin.
/// - Responses reach the storage's stores behind the requests (in its default
///   write-behind mode): a short-lived program calls ``flush()`` before it exits.
public final class HTTPResponseCache: Sendable {
    /// How an ``HTTPResponseCache`` stores and decides.
    public struct Configuration: Sendable {
        /// Where responses are stored, as any ``Cache``: memory, local and remote
        /// tiers. Defaults to a cache named `<program>.http-responses` with a disk
        /// store in the default location and 64 MiB of bodies in memory, where
        /// `<program>` is the bundle identifier on Apple platforms (the executable's
        /// name when there is none) and the executable's name elsewhere, with every
        /// character but ASCII letters, digits, `-`, `_` and `.` made a `-`: two
        /// programs keep separate caches. A storage given keeps its name.
        public var storage: Cache<String, HTTPStoredResponses>.Configuration
        /// Whether the cache is shared between users (RFC 9111's shared cache, as a
        /// server's is): `s-maxage` and `proxy-revalidate` apply, `private`
        /// responses are not stored. Defaults to `true`.
        public var isShared: Bool
        /// The fraction of the time since `Last-Modified` a response without an
        /// explicit lifetime stays fresh. Defaults to 0.1.
        public var heuristicFraction: Double
        /// The longest heuristic lifetime, in seconds. Defaults to one day.
        public var maximumHeuristicLifetime: TimeInterval
        /// The most responses kept per URL for different `Vary` selections.
        /// Defaults to 8.
        public var maximumVariants: Int
        /// Whether a stale response that nothing forbids serving stale
        /// (`must-revalidate`, `no-cache`, and for a shared cache `proxy-revalidate`
        /// and `s-maxage`) is served when the origin cannot be reached: the
        /// transport throws (RFC 9111, section 4.2.4, a disconnected cache). A
        /// response from the origin, a 5xx included, is returned as it is unless
        /// `stale-if-error` allows the stale one. Defaults to `true`.
        public var servesStaleWhenDisconnected: Bool
        /// The name of a targeted `Cache-Control` field (RFC 9213), such as
        /// `CDN-Cache-Control`, whose directives a shared cache follows instead of
        /// `Cache-Control` when a response has it; `nil` (the default) reads
        /// `Cache-Control` only. A private cache ignores it.
        public var targetedCacheControl: String?
        /// Where background revalidation failures (still counted in
        /// ``Statistics/backgroundFailures``) and responses that could not be stored
        /// are logged; `nil` logs nothing.
        public var logger: Logger?

        /// Creates a configuration; every parameter defaults as its property says.
        public init(
            storage: Cache<String, HTTPStoredResponses>.Configuration? = nil, isShared: Bool = true,
            heuristicFraction: Double = 0.1, maximumHeuristicLifetime: TimeInterval = 86_400,
            maximumVariants: Int = 8, servesStaleWhenDisconnected: Bool = true, targetedCacheControl: String? = nil,
            logger: Logger? = nil
        ) {
            if let storage {
                self.storage = storage
            } else {
                var storage = Cache<String, HTTPStoredResponses>.Configuration(
                    name: _HTTPStoreName.name("http-responses"))
                storage.memory = .init(costLimit: 64 << 20)
                self.storage = storage
            }
            self.isShared = isShared
            self.heuristicFraction = heuristicFraction
            self.maximumHeuristicLifetime = maximumHeuristicLifetime
            self.maximumVariants = maximumVariants
            self.servesStaleWhenDisconnected = servesStaleWhenDisconnected
            self.targetedCacheControl = targetedCacheControl
            self.logger = logger
        }
    }

    /// How requests were answered since the cache was created.
    public struct Statistics: Sendable, Hashable {
        /// Served fresh from storage, with no request to the origin.
        public var freshHits = 0
        /// Served stale from storage (`stale-while-revalidate`, `stale-if-error`,
        /// `max-stale`).
        public var staleHits = 0
        /// Revalidated with a `304`, served from storage.
        public var revalidations = 0
        /// Answered by a full response from the origin.
        public var fetches = 0
        /// Requests sent to the origin (conditional ones and background ones
        /// included).
        public var originRequests = 0
        /// Requests that waited for a request to the origin another caller had
        /// started, instead of sending their own.
        public var coalescedWaits = 0
        /// Background revalidations that failed.
        public var backgroundFailures = 0
    }

    /// The configuration the cache was created with.
    public let configuration: Configuration
    /// Where responses are stored.
    public let storage: Cache<String, HTTPStoredResponses>
    let transport: any HTTPCacheTransport
    let clock: any CacheClock
    let flights = _SingleFlight<String, HTTPCachedResponse>()
    let counters = Mutex(Statistics())
    /// Orders the updates of one URL's stored variants.
    let variantUpdates = _HTTPKeyedLock()
    /// The stores and background revalidations ``flush()`` waits for.
    let pendingWork = _HTTPPendingWork()

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - configuration: Storage and policy.
    ///   - transport: How requests reach the origin. Defaults to
    ///     ``URLSessionHTTPTransport``.
    ///   - clock: Where the cache reads the time, for ages and freshness.
    /// - Throws: ``HoardError/Code/invalidConfiguration`` for a setting out of
    ///   range, and what opening the storage throws.
    public init(
        configuration: Configuration = .init(), transport: any HTTPCacheTransport = URLSessionHTTPTransport(),
        clock: any CacheClock = SystemClock()
    ) throws(HoardError) {
        guard configuration.maximumVariants >= 1 else {
            throw HoardError(.invalidConfiguration, "maximumVariants must be at least 1")
        }
        guard (0...1).contains(configuration.heuristicFraction), configuration.maximumHeuristicLifetime >= 0 else {
            throw HoardError(
                .invalidConfiguration,
                "heuristicFraction must be between 0 and 1 and maximumHeuristicLifetime not negative")
        }
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        storage = try Cache(configuration: configuration.storage, clock: clock)
    }

    /// How requests were answered so far.
    public var statistics: Statistics { counters.withLock { $0 } }

    /// The body of a `GET` of `url`, from storage when HTTP allows, else from the
    /// origin.
    ///
    /// - Throws: ``HoardError/Code/httpFailed`` when the response's status is not
    ///   2xx (nothing is stored unless HTTP allows it, as for 404), and what the
    ///   transport throws.
    public func data(from url: URL, headers: [String: String] = [:]) async throws -> Data {
        let response = try await response(for: url, headers: headers)
        try _HTTPSuccess.check(response.statusCode, for: url)
        return response.body
    }

    /// The response to a `GET` of `url` with the request header fields `headers`:
    /// a stored one when HTTP allows it, a revalidated one, or the origin's.
    ///
    /// - Throws: What the transport throws when no stored response may be served
    ///   instead (see `stale-if-error`), and `CancellationError` when the calling
    ///   task is cancelled while the storage is read.
    public func response(for url: URL, headers: [String: String] = [:]) async throws -> HTTPCachedResponse {
        try await response(to: HTTPCacheRequest(url: url, headers: HTTPHeaderFields(headers)))
    }

    /// The response to `request`, any method, as an HTTP cache answers it:
    /// - `GET`: from storage when HTTP allows (a fresh response, one revalidated, or
    ///   a stale one `stale-while-revalidate`, `stale-if-error` or `max-stale`
    ///   allows), else from the origin, stored when HTTP allows. A response from
    ///   storage carries an `Age` field with its current age (RFC 9111, section
    ///   5.1), answers the request's own `If-None-Match` / `If-Modified-Since`
    ///   with a `304` when they match, and a single byte `Range` of a stored `200`
    ///   with a `206` (or a `416` when no byte of it is in the response).
    /// - `HEAD`: from a stored response to `GET` when one may be served without
    ///   asking the origin (no body), else sent to the origin; never stored itself,
    ///   but a `200` whose `ETag` / `Last-Modified` (and `Content-Length`) match
    ///   the stored `GET` response updates its header fields and freshness, as a
    ///   `304` would (RFC 9111, section 4.3.5).
    /// - `OPTIONS`, `TRACE`: sent to the origin; never stored.
    /// - Any other method (`POST`, `PUT`, `DELETE`, `PATCH`, unknown ones): sent to
    ///   the origin; a response with a status below 400 removes what is stored
    ///   for the request's URL and for the URLs of its `Location` and
    ///   `Content-Location` fields on the same origin (RFC 9111, section 4.4),
    ///   before the call returns. A response to `POST` whose `Content-Location`
    ///   is the request's URL and that has an explicit lifetime is then stored
    ///   for `GET`s of that URL.
    ///
    /// - Throws: What the transport throws when no stored response may be served
    ///   instead, and `CancellationError` when the calling task is cancelled while
    ///   the storage is read.
    public func response(to request: HTTPCacheRequest) async throws -> HTTPCachedResponse {
        let request = _HTTPRequest(request)
        switch request.method {
        case "GET", "HEAD":
            return try await retrieve(request)
        case "OPTIONS", "TRACE":
            return try await passThrough(request)
        default:
            let response = try await passThrough(request)
            guard response.statusCode < 400 else { return response }
            await invalidate(after: response, to: request)
            if request.method == "POST", isReusableForGet(response, to: request) {
                await store(response, for: request.asGet)
            }
            return response
        }
    }

    /// A `GET` (or a `HEAD` answered as far as storage allows).
    private func retrieve(_ request: _HTTPRequest) async throws -> HTTPCachedResponse {
        let requestControl = request.cacheControl
        let isHead = request.method == "HEAD"
        // `only-if-cached` with `no-store`: nothing is stored, and the origin is
        // still not asked (RFC 9111, section 5.2.1.7).
        if requestControl.noStore && !isHead && !requestControl.onlyIfCached {
            return try await flights.run(request.flightKey, joined: { self.count { $0.coalescedWaits += 1 } }) {
                try await self.fetch(request, storing: false)
            }
        }
        // Without a fetch closure, the storage throws only on cancellation.
        let stored = try await storage.value(for: request.key)
        let now = clock.now()
        guard let candidate = stored?.responses.first(where: { request.selects($0) }) else {
            if requestControl.onlyIfCached { return request.gatewayTimeout(now: now) }
            if isHead { return try await passThrough(request) }
            return try await flights.run(request.flightKey, joined: { self.count { $0.coalescedWaits += 1 } }) {
                try await self.fetch(request, storing: true)
            }
        }
        let control = effectiveControl(candidate)
        let policy = _HTTPFreshness(candidate, control: control, configuration: configuration, now: now)
        // RFC 9111, section 5.2.2.10: for a shared cache, `s-maxage` implies
        // `proxy-revalidate`, which is `must-revalidate` for shared caches.
        let mayServeStale =
            !control.mustRevalidate && !control.noCache
            && !(configuration.isShared && (control.proxyRevalidate || control.sharedMaxAge != nil))
        let mustValidate =
            control.noCache || requestControl.noCache
            || requestControl.maxAge.map { policy.age > TimeInterval($0) } ?? false
        if !mustValidate {
            let minFresh = TimeInterval(requestControl.minFresh ?? 0)
            if policy.age + minFresh < policy.lifetime {
                count { $0.freshHits += 1 }
                return served(candidate, to: request, now: now)
            }
            if mayServeStale, let maxStale = requestControl.maxStale, policy.staleness <= TimeInterval(maxStale) {
                count { $0.staleHits += 1 }
                return served(candidate, to: request, now: now)
            }
            if mayServeStale, let window = control.staleWhileRevalidate, policy.staleness < TimeInterval(window) {
                count { $0.staleHits += 1 }
                revalidateInBackground(candidate, control: control, request.asGet)
                return served(candidate, to: request, now: now)
            }
        }
        if requestControl.onlyIfCached { return request.gatewayTimeout(now: now) }
        if isHead { return try await head(request, updating: candidate) }
        let response = try await flights.run(
            request.flightKey, joined: { self.count { $0.coalescedWaits += 1 } }
        ) {
            try await self.revalidate(candidate, control: control, request, mayServeStale: mayServeStale)
        }
        return response.isFromCache ? served(response, to: request, now: clock.now()) : response
    }

    /// Whether a response to a `POST` may answer later `GET`s of its URL (RFC
    /// 9110, section 9.3.3): it says so with a `Content-Location` of that URL and
    /// an explicit lifetime.
    private func isReusableForGet(_ response: HTTPCachedResponse, to request: _HTTPRequest) -> Bool {
        let control = effectiveControl(response)
        guard let location = response.headers.values(for: "content-location").first,
            let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
            _HTTPRequest.key(for: target) == request.key,
            control.maxAge != nil || (configuration.isShared && control.sharedMaxAge != nil)
                || response.headers.contains("expires")
        else { return false }
        return true
    }

    /// The `Cache-Control` directives that govern `response` here: those of the
    /// field ``Configuration/targetedCacheControl`` names when the cache is
    /// shared and the response has it as a valid Structured Field dictionary (RFC
    /// 9213), else its `Cache-Control`.
    func effectiveControl(_ response: HTTPCachedResponse) -> HTTPCacheControl {
        if configuration.isShared, let name = configuration.targetedCacheControl {
            let values = response.headers.values(for: name)
            if !values.isEmpty, _HTTPTargetedField.isValid(values) { return HTTPCacheControl(values) }
        }
        return response.cacheControl
    }

    /// A stored response as sent to `request` at `now`: its current `Age`, no body
    /// for `HEAD`, and the request's own conditions and range applied.
    private func served(_ stored: HTTPCachedResponse, to request: _HTTPRequest, now: Date) -> HTTPCachedResponse {
        var response = stored
        response.isFromCache = true
        response.headers["Age"] = String(Int(min(stored.age(at: now), TimeInterval(Int32.max) + 1)))
        if response.statusCode == 200 {
            if _HTTPClientConditions.notModified(response, request: request) {
                response.statusCode = 304
                response.headers.removeAll(named: "content-length")
                response.body = Data()
                return response
            }
        }
        if response.statusCode == 200, request.method == "GET" {
            response = _HTTPRange.apply(request, to: response)
        }
        if request.method == "HEAD" { response.body = Data() }
        return response
    }

    // MARK: Talking to the origin

    /// Sends `request` (with `extraHeaders`), timing it.
    private func send(
        _ request: _HTTPRequest, method: String? = nil, extraHeaders: HTTPHeaderFields = [:]
    ) async throws -> (response: HTTPTransportResponse, requestTime: Date, responseTime: Date) {
        count { $0.originRequests += 1 }
        let requestTime = clock.now()
        let response = try await transport.send(request.outgoing(method: method, extraHeaders: extraHeaders))
        return (response, requestTime, clock.now())
    }

    /// Sends `request` as it is and returns the response, storing nothing.
    private func passThrough(_ request: _HTTPRequest) async throws -> HTTPCachedResponse {
        let (response, requestTime, responseTime) = try await send(request)
        count { $0.fetches += 1 }
        return request.cached(response, requestTime: requestTime, responseTime: responseTime)
    }

    /// Removes what is stored for `request`'s URL and for the same-origin URLs of
    /// `response`'s `Location` and `Content-Location` (RFC 9111, section 4.4).
    private func invalidate(after response: HTTPCachedResponse, to request: _HTTPRequest) async {
        var urls = [request.url]
        for name in ["location", "content-location"] {
            guard let value = response.headers.values(for: name).first,
                let target = URL(string: value, relativeTo: request.url)?.absoluteURL, request.isSameOrigin(target)
            else { continue }
            urls.append(target)
        }
        for url in urls {
            let key = _HTTPRequest.key(for: url)
            await variantUpdates.withLock(key) {
                do {
                    try await storage.removeValue(for: key)
                } catch {
                    // Memory no longer has it; the storage has reported the store's error.
                    log("a stored response was not removed from every store", key: key, error: error)
                }
            }
        }
    }

    /// A full request to the origin; the response is stored when HTTP allows.
    private func fetch(_ request: _HTTPRequest, storing: Bool) async throws -> HTTPCachedResponse {
        let (response, requestTime, responseTime) = try await send(request)
        count { $0.fetches += 1 }
        let received = request.cached(response, requestTime: requestTime, responseTime: responseTime)
        if storing { await store(received, for: request) }
        return received
    }

    /// A conditional request for `candidate`; a `304` refreshes it.
    private func revalidate(
        _ candidate: HTTPCachedResponse, control: HTTPCacheControl, _ request: _HTTPRequest, mayServeStale: Bool
    ) async throws -> HTTPCachedResponse {
        // The validators' own bytes: an obs-text ETag is sent as the origin gave it.
        var conditions = HTTPHeaderFields()
        if let tag = candidate.headers.joinedField(named: "etag", as: "If-None-Match") {
            conditions.fields.append(tag)
        }
        if let modified = candidate.headers.joinedField(named: "last-modified", as: "If-Modified-Since") {
            conditions.fields.append(modified)
        }
        let staleIfError: Bool = {
            guard mayServeStale else { return false }
            let window = control.staleIfError ?? request.cacheControl.staleIfError
            let staleness = _HTTPFreshness(candidate, control: control, configuration: configuration, now: clock.now())
                .staleness
            return window.map { staleness < TimeInterval($0) } ?? false
        }()
        // The cache's own conditions replace the client's, and a range is asked of
        // the whole response: what comes back refreshes or replaces the stored one.
        let exchange: (response: HTTPTransportResponse, requestTime: Date, responseTime: Date)
        do {
            exchange = try await send(request.withoutClientConditions, extraHeaders: conditions)
        } catch {
            // RFC 9111, section 4.2.4: a disconnected cache may serve stale what
            // nothing forbids; an origin that answers (a 5xx) is not disconnected.
            guard staleIfError || (mayServeStale && configuration.servesStaleWhenDisconnected) else { throw error }
            count { $0.staleHits += 1 }
            return candidate
        }
        if exchange.response.statusCode == 304 {
            // RFC 9111, section 4.3.4: a 304 whose validator is not the stored
            // response's updates nothing; the response is then asked for whole.
            guard candidate.isSelected(by: exchange.response.headers) else {
                let whole = try await send(request.withoutClientConditions)
                count { $0.fetches += 1 }
                let received = request.cached(
                    whole.response, requestTime: whole.requestTime, responseTime: whole.responseTime)
                await store(received, for: request, replacing: candidate)
                return received
            }
            let refreshed = candidate.updated(
                with: exchange.response.headers, requestHeaders: request.headers, requestTime: exchange.requestTime,
                responseTime: exchange.responseTime)
            count { $0.revalidations += 1 }
            await store(refreshed, for: request, replacing: candidate)
            return refreshed
        }
        if (500..<600).contains(exchange.response.statusCode), staleIfError {
            count { $0.staleHits += 1 }
            return candidate
        }
        count { $0.fetches += 1 }
        let received = request.cached(
            exchange.response, requestTime: exchange.requestTime, responseTime: exchange.responseTime)
        await store(received, for: request)
        return received
    }

    /// Sends a `HEAD` that `candidate`, the stored `GET` response it selects, may
    /// not answer as it is (stale, or the request says `no-cache`). A `200` whose
    /// validators match the stored response's updates its header fields and dates as
    /// a `304` would, and the updated response answers the `HEAD` (RFC 9111,
    /// section 4.3.5); any other answer is returned as it came, and the stored
    /// response stays as it was: not fresh, so the next `GET` revalidates it.
    private func head(_ request: _HTTPRequest, updating candidate: HTTPCachedResponse) async throws
        -> HTTPCachedResponse
    {
        let (response, requestTime, responseTime) = try await send(request)
        count { $0.fetches += 1 }
        guard response.statusCode == 200, candidate.isSameRepresentation(as: response.headers) else {
            return request.cached(response, requestTime: requestTime, responseTime: responseTime)
        }
        let updated = candidate.updated(
            with: response.headers, requestHeaders: request.headers, requestTime: requestTime,
            responseTime: responseTime)
        await store(updated, for: request.asGet, replacing: candidate)
        return served(updated, to: request, now: clock.now())
    }

    /// Starts one background revalidation of `candidate` (none when a request for
    /// it is running); counts and logs its failure once.
    ///
    /// The revalidation is a flight of its own, started and registered in one
    /// step, so that of stale reads that race, one revalidates; requests that
    /// must go to the origin meanwhile join it.
    private func revalidateInBackground(
        _ candidate: HTTPCachedResponse, control: HTTPCacheControl, _ request: _HTTPRequest
    ) {
        let work = pendingWork.begin()
        let started = flights.start(request.flightKey) {
            defer { self.pendingWork.end(work) }
            do {
                return try await self.revalidate(candidate, control: control, request, mayServeStale: false)
            } catch {
                // Counted and logged by the revalidation itself: requests that
                // joined it receive the error as well.
                self.count { $0.backgroundFailures += 1 }
                self.configuration.logger?.warning(
                    "background revalidation failed",
                    metadata: [
                        "hoard.store": "\(self.configuration.storage.name)", "hoard.key": "\(request.key)",
                        "hoard.operation": "revalidate", "hoard.error": "\(error)",
                    ])
                throw error
            }
        }
        if !started { pendingWork.end(work) }
    }

    // MARK: Storing

    /// Waits until every response stored before the call has reached the stores of
    /// ``storage`` (disk, Redis, PostgreSQL): those of requests that have returned,
    /// those being stored when it is called, and those of the background
    /// revalidations (`stale-while-revalidate`) started before it. Failures are
    /// reported as the storage reports them (its `onError`, `logger` and
    /// statistics), not thrown. As ``Cache/flush()`` does, it then sends each
    /// store of the storage that failed a change the removals that repair it, so
    /// a store that is reachable again keeps no response this cache replaced or
    /// removed.
    ///
    /// Responses reach the stores behind the requests (in the storage's default
    /// write-behind mode), so a short-lived program, such as a command-line tool,
    /// calls this before it exits, or loses what it stored.
    public func flush() async {
        await pendingWork.waitForRunning()
        await storage.flush()
    }

    /// Stores `response` as the variant `request` selects, when HTTP allows, in
    /// place of `replaced` (the stored response it refreshes or supersedes, whose
    /// `Vary` may select other requests); `replaced` goes even when `response` may
    /// not be stored.
    ///
    /// The stored variants of one URL are read, changed and written by one store
    /// at a time, so concurrent stores of different variants all survive. Read
    /// through the tiers asynchronously (never a disk read on the caller's
    /// executor), and written without blocking a thread (see `write(_:for:)`).
    private func store(
        _ response: HTTPCachedResponse, for request: _HTTPRequest, replacing replaced: HTTPCachedResponse? = nil
    ) async {
        let storable = _HTTPStorability.allows(
            response, control: effectiveControl(response), request: request, shared: configuration.isShared)
        guard storable || replaced != nil else { return }
        let work = pendingWork.begin()
        defer { pendingWork.end(work) }
        await variantUpdates.withLock(request.key) {
            var stored: [HTTPCachedResponse]
            do {
                stored = try await storage.value(for: request.key)?.responses ?? []
            } catch {
                // Only cancellation: writing without the other variants would drop them.
                log("a response was not stored: reading the stored variants failed", request: request, error: error)
                return
            }
            let before = stored.count
            stored.removeAll { variant in
                [response, replaced].contains { other in
                    guard let other else { return false }
                    return variant.varyingRequestHeaders == other.varyingRequestHeaders
                        && variant.varyNames == other.varyNames
                }
            }
            if storable {
                var kept = response
                kept.isFromCache = true
                stored.insert(kept, at: 0)
            } else if stored.count == before {
                return
            }
            await write(
                HTTPStoredResponses(responses: Array(stored.prefix(configuration.maximumVariants))), for: request)
        }
    }

    /// Writes `responses` to ``storage`` without blocking a thread: memory at once
    /// and the stores behind in write-behind mode, while the writes queued for the
    /// stores are within the storage's `writeQueueByteLimit`; past it, and in
    /// write-through mode, the write is awaited until the stores have it.
    func write(_ responses: HTTPStoredResponses, for request: _HTTPRequest) async {
        let settings = storage.configuration
        let queued = storage.queuedWriteBytes
        let overBudget = settings.writeQueueByteLimit.map { queued > 0 && queued + responses.cacheCost > $0 } ?? false
        guard settings.writeMode == .writeThrough || overBudget else {
            storage[request.key] = responses
            return
        }
        do {
            try await storage.set(responses, for: request.key)
        } catch {
            // The storage has reported it too; memory holds the responses.
            log("a stored response did not reach every store", request: request, error: error)
        }
    }

    private func log(_ message: Logger.Message, request: _HTTPRequest, error: any Error) {
        log(message, key: request.key, error: error)
    }

    private func log(_ message: Logger.Message, key: String, error: any Error) {
        configuration.logger?.warning(
            message,
            metadata: [
                "hoard.store": "\(configuration.storage.name)", "hoard.key": "\(key)",
                "hoard.operation": "store", "hoard.error": "\(error)",
            ])
    }

    private func count(_ change: (inout Statistics) -> Void) {
        counters.withLock { change(&$0) }
    }
}
