import Foundation

/// A request as the cache handles it.
struct _HTTPRequest: Sendable {
    let method: String
    let url: URL
    let headers: HTTPHeaderFields
    let body: Data
    /// The storage key: the URL as the target URI it names (see ``key(for:)``),
    /// worked out once, as storing, invalidating and logging a request all use it.
    let key: String

    init(_ request: HTTPCacheRequest) {
        method = request.method
        url = request.url
        headers = request.headers
        body = request.body
        key = Self.key(for: request.url)
    }

    /// A request for the same URL as one whose storage key is `key`.
    private init(method: String, url: URL, key: String, headers: HTTPHeaderFields, body: Data) {
        self.method = method
        self.url = url
        self.key = key
        self.headers = headers
        self.body = body
    }

    /// This request as a `GET` (what a `HEAD` revalidates in the background).
    var asGet: _HTTPRequest { _HTTPRequest(method: "GET", url: url, key: key, headers: headers, body: body) }

    /// This request without the conditions and range a client may add (what the
    /// cache sends to refresh a stored response whole, with its own validators).
    var withoutClientConditions: _HTTPRequest {
        var fields = headers
        for name in ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range"] {
            fields.removeAll(named: name)
        }
        return _HTTPRequest(method: method, url: url, key: key, headers: fields, body: body)
    }

    /// The storage key of `url`: its target URI (RFC 9110, section 7.1: without the
    /// fragment, which is never sent), with the equivalences of RFC 9110, section
    /// 4.2.3 and RFC 3986, section 6.2.2: scheme and host in lowercase, no default
    /// port (80 for `http`, 443 for `https`), an escape of an unreserved character
    /// decoded (`%7E` is `~`) and every other escape in uppercase hex (`%3a` is
    /// `%3A`), the path without dot-segments (`/a/./b/../c` is `/a/c`) and, for
    /// `http` and `https`, an empty path as `/`.
    ///
    /// A reserved character's escape stays distinct from the character (`%2F` from
    /// `/`, `%3F` from `?`), a malformed escape is kept as it is, and the query keeps
    /// its order and its dot-segments, so URLs that differ in those are different
    /// keys, and a `GET`, an unsafe method's invalidation and a `Location` name one
    /// key for one resource.
    static func key(for url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        parts.percentEncodedFragment = nil
        // ASCII letters only: case does not change which characters are valid.
        parts.scheme = parts.scheme.map(asciiLowercased)
        parts.percentEncodedHost = parts.percentEncodedHost.map {
            _HTTPTargetURI.normalizedPercentEncoding($0, lowercasingLetters: true)
        }
        if let port = parts.port, port == defaultPort(scheme: parts.scheme) { parts.port = nil }
        var path = _HTTPTargetURI.normalizedPercentEncoding(parts.percentEncodedPath)
        // A path without an authority keeps its dot-segments: removing them could
        // leave one starting with "//", which would read as an authority.
        if parts.percentEncodedHost != nil { path = _HTTPTargetURI.removingDotSegments(path) }
        if path.isEmpty, defaultPort(scheme: parts.scheme) != nil { path = "/" }
        parts.percentEncodedPath = path
        parts.percentEncodedQuery = parts.percentEncodedQuery.map { _HTTPTargetURI.normalizedPercentEncoding($0) }
        return parts.string ?? url.absoluteString
    }

    /// Whether `other` is on the same origin as this request's URL (RFC 9110,
    /// section 4.3.1): scheme and host compared as ``key(for:)`` normalises them
    /// (in any case, an unreserved character escaped or not), a port left out as its
    /// scheme's default.
    func isSameOrigin(_ other: URL) -> Bool {
        guard let mine = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let theirs = URLComponents(url: other, resolvingAgainstBaseURL: true),
            let scheme = mine.scheme.map(Self.asciiLowercased), let host = mine.percentEncodedHost,
            theirs.scheme.map(Self.asciiLowercased) == scheme, let otherHost = theirs.percentEncodedHost,
            _HTTPTargetURI.normalizedPercentEncoding(host, lowercasingLetters: true)
                == _HTTPTargetURI.normalizedPercentEncoding(otherHost, lowercasingLetters: true)
        else { return false }
        return (mine.port ?? Self.defaultPort(scheme: scheme)) == (theirs.port ?? Self.defaultPort(scheme: scheme))
    }

    /// The port a URL of `scheme` (lowercased) leaves out: 80 for `http`, 443 for
    /// `https`.
    private static func defaultPort(scheme: String?) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    /// `text` with its ASCII letters in lowercase, and every other byte kept.
    private static func asciiLowercased(_ text: String) -> String {
        String(
            decoding: text.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 },
            as: UTF8.self)
    }

    /// What concurrent requests must share to share one request to the origin: the
    /// method, the URL and every header field, in order, with its value's bytes (a
    /// UTF-8 `é` and an ISO-8859-1 one are different requests).
    var flightKey: String {
        ([method, key] + headers.map { "\($0.name.lowercased()): \($0.byteText)" }).joined(separator: "\n")
    }

    /// The request's `Cache-Control`; without one, a `Pragma: no-cache` counts as
    /// `Cache-Control: no-cache` (RFC 9111, section 5.4).
    var cacheControl: HTTPCacheControl {
        let values = headers.values(for: "cache-control")
        var control = HTTPCacheControl(values)
        if values.isEmpty, headers.listMembers("pragma").contains(where: { $0.lowercased() == "no-cache" }) {
            control.noCache = true
        }
        return control
    }

    /// The request as the transport sends it, with `extraHeaders` replacing the
    /// fields of their names, and `method` for the request's own.
    func outgoing(method: String? = nil, extraHeaders: HTTPHeaderFields = [:]) -> HTTPCacheRequest {
        var fields = headers
        for field in extraHeaders { fields.removeAll(named: field.name) }
        fields.fields += extraHeaders.fields
        return HTTPCacheRequest(method: method ?? self.method, url: url, headers: fields, body: body)
    }

    /// Whether `stored` may answer this request as far as `Vary` goes.
    ///
    /// A request whose field `Vary` names has an ISO-8859-1 value (obs-text)
    /// selects no stored response, and a response to it is not stored (see
    /// ``hasVaryingObsText(for:)``): the values a stored response selects by are
    /// text, which cannot tell those bytes from UTF-8 text of the same characters.
    func selects(_ stored: HTTPCachedResponse) -> Bool {
        let names = stored.varyNames
        guard !names.contains("*"), !hasVaryingObsText(for: stored) else { return false }
        return names.allSatisfy { name in
            Self.normalized(headers[name], name: name)
                == Self.normalized(stored.varyingRequestHeaders[name], name: name)
        }
    }

    /// Whether a field of this request that `response`'s `Vary` names has an
    /// ISO-8859-1 value (obs-text): the request then neither selects a stored
    /// response nor has `response` stored for it.
    func hasVaryingObsText(for response: HTTPCachedResponse) -> Bool {
        response.varyNames.contains { !headers.isUTF8(named: $0) }
    }

    /// `value` with the whitespace around its list members removed; for
    /// `Accept-Language`, whose language ranges are case-insensitive and whose
    /// order carries no weight of its own (qvalues do), lowercased and sorted.
    private static func normalized(_ value: String?, name: String) -> String? {
        value.map {
            var members = $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if name == "accept-language" { members = members.map { $0.lowercased() }.sorted() }
            return members.joined(separator: ",")
        }
    }

    /// `response` as a cached response to this request, without its hop-by-hop
    /// fields. A response without `Date` is dated `responseTime`, when it arrived
    /// (RFC 9110, section 6.6.1: a recipient with a clock adds one to a response it
    /// caches or forwards), so it is served, stored and aged with one.
    func cached(_ response: HTTPTransportResponse, requestTime: Date, responseTime: Date) -> HTTPCachedResponse {
        var fields = _HTTPHopByHop.removed(from: response.headers)
        if !fields.contains("date") { fields["Date"] = _HTTPDate.format(responseTime) }
        var result = HTTPCachedResponse(
            url: url, statusCode: response.statusCode, headers: fields, body: response.body,
            requestTime: requestTime, responseTime: responseTime, isFromCache: false)
        result.recordVaryingFields(of: headers)
        return result
    }

    /// The answer to `only-if-cached` when nothing stored may be used.
    func gatewayTimeout(now: Date) -> HTTPCachedResponse {
        HTTPCachedResponse(
            url: url, statusCode: 504, headers: [:], body: Data(), requestTime: now, responseTime: now,
            isFromCache: true)
    }
}

/// The hop-by-hop fields (RFC 9110, section 7.6.1): meaningful for one connection
/// only, never stored nor forwarded.
enum _HTTPHopByHop {
    static let names: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
    ]

    /// `fields` without the hop-by-hop fields and those `Connection` names.
    static func removed(from fields: HTTPHeaderFields) -> HTTPHeaderFields {
        let named = Set(fields.listMembers("connection").map { $0.lowercased() })
        var kept = fields
        kept.fields.removeAll { names.contains($0.name.lowercased()) || named.contains($0.name.lowercased()) }
        return kept
    }
}

/// How fresh a stored response is at a moment.
struct _HTTPFreshness {
    /// Seconds since the origin produced it.
    let age: TimeInterval
    /// Seconds it stays fresh.
    let lifetime: TimeInterval
    /// Seconds past its lifetime (negative while fresh).
    var staleness: TimeInterval { age - lifetime }

    /// How fresh `response`, whose `Cache-Control` is `control`, is at `now`.
    init(
        _ response: HTTPCachedResponse, control: HTTPCacheControl, configuration: HTTPResponseCache.Configuration,
        now: Date
    ) {
        age = response.age(at: now)
        lifetime = Self.lifetime(of: response, control: control, configuration: configuration)
    }

    /// RFC 9111, section 4.2.1, with the heuristic of section 4.2.2.
    static func lifetime(
        of response: HTTPCachedResponse, control: HTTPCacheControl, configuration: HTTPResponseCache.Configuration
    ) -> TimeInterval {
        if configuration.isShared, let shared = control.sharedMaxAge { return TimeInterval(shared) }
        if let maxAge = control.maxAge { return TimeInterval(maxAge) }
        let date = response.originDate ?? response.responseTime
        let expires = response.headers.values(for: "expires")
        if !expires.isEmpty {
            // An Expires that is not one valid HTTP date ("0", a date in another
            // form, two fields) means already expired (RFC 9111, section 5.3).
            guard expires.count == 1, let expiry = _HTTPDate.parse(expires[0]) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        // Section 4.2.2: a heuristic for a status cacheable by default, or any
        // status the response marks cacheable explicitly.
        let marked = control.isPublic || (!configuration.isShared && control.isPrivate)
        guard _HTTPStorability.heuristicallyCacheable.contains(response.statusCode) || marked,
            let modified = response[header: "last-modified"].flatMap(_HTTPDate.parse)
        else { return 0 }
        return min(
            configuration.maximumHeuristicLifetime,
            max(0, date.timeIntervalSince(modified)) * configuration.heuristicFraction)
    }
}

/// Whether a response may be stored (RFC 9111, section 3).
enum _HTTPStorability {
    /// The statuses a response may be stored with and given a heuristic lifetime
    /// without saying so (RFC 9110, section 15.1; 206 is left out: this cache does not
    /// combine partial responses).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The final statuses whose caching semantics this cache implements (those
    /// `must-understand` lets it store).
    static let understood: Set<Int> = heuristicallyCacheable.union([
        302, 303, 307, 400, 401, 403, 406, 408, 409, 411, 412, 413, 415, 416, 421, 422, 500, 502, 503, 504,
    ])

    /// Whether `response`, whose effective `Cache-Control` is `control`, may be
    /// stored for `request`: never when a request field its `Vary` names has an
    /// ISO-8859-1 value (``_HTTPRequest/hasVaryingObsText(for:)``).
    static func allows(
        _ response: HTTPCachedResponse, control: HTTPCacheControl, request: _HTTPRequest, shared: Bool
    ) -> Bool {
        let requestControl = request.cacheControl
        // RFC 9111, section 5.2.2.3: with must-understand, a status this cache
        // understands overrides no-store, and any other is never stored.
        let noStore = control.mustUnderstand ? !understood.contains(response.statusCode) : control.noStore
        guard response.statusCode >= 200, response.statusCode != 206, response.statusCode != 304,
            !noStore, !requestControl.noStore, !(shared && control.isPrivate),
            !response.varyNames.contains("*"), !request.hasVaryingObsText(for: response)
        else { return false }
        if shared, request.headers["authorization"] != nil,
            !(control.isPublic || control.mustRevalidate || control.sharedMaxAge != nil)
        {
            return false
        }
        let explicit =
            control.isPublic || control.maxAge != nil || (shared && control.sharedMaxAge != nil)
            || response[header: "expires"] != nil || (!shared && control.isPrivate)
        return explicit || heuristicallyCacheable.contains(response.statusCode)
    }
}
