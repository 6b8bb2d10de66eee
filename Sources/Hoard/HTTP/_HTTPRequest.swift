import Foundation

/// A `GET` as the cache handles it: header names lowercased.
struct _HTTPRequest: Sendable {
    let url: URL
    let headers: [String: String]

    init(url: URL, headers: [String: String]) {
        self.url = url
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { "\($0), \($1)" })
    }

    /// The storage key: the URL.
    var key: String { url.absoluteString }

    /// What concurrent requests must share to share one request to the origin: the
    /// URL and every header field.
    var flightKey: String {
        key + "\n" + headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "\n")
    }

    var cacheControl: HTTPCacheControl { HTTPCacheControl(headers["cache-control"].map { [$0] } ?? []) }

    /// Whether `stored` may answer this request as far as `Vary` goes.
    func selects(_ stored: HTTPCachedResponse) -> Bool {
        let names = stored.varyNames
        guard !names.contains("*") else { return false }
        return names.allSatisfy { name in
            normalized(headers[name]) == normalized(stored.varyingRequestHeaders[name])
        }
    }

    private func normalized(_ value: String?) -> String? {
        value.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ",") }
    }

    /// `response` as a cached response to this request.
    func cached(_ response: HTTPTransportResponse, requestTime: Date, responseTime: Date) -> HTTPCachedResponse {
        var result = HTTPCachedResponse(
            url: url, statusCode: response.statusCode, headers: response.headers, body: response.body,
            requestTime: requestTime, responseTime: responseTime, isFromCache: false)
        var varying: [String: String] = [:]
        for name in result.varyNames where name != "*" { varying[name] = headers[name] }
        result.varyingRequestHeaders = varying
        return result
    }

    /// The answer to `only-if-cached` when nothing stored may be used.
    func gatewayTimeout(now: Date) -> HTTPCachedResponse {
        HTTPCachedResponse(
            url: url, statusCode: 504, headers: [:], body: Data(), requestTime: now, responseTime: now,
            isFromCache: true)
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
        let date = response[header: "date"].flatMap(_HTTPDate.parse) ?? response.responseTime
        if let expires = response[header: "expires"] {
            // An Expires that does not parse ("0", say) means already expired.
            guard let expiry = _HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        guard _HTTPStorability.heuristicallyCacheable.contains(response.statusCode),
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

    static func allows(_ response: HTTPCachedResponse, request: _HTTPRequest, shared: Bool) -> Bool {
        let control = response.cacheControl
        let requestControl = request.cacheControl
        guard response.statusCode >= 200, response.statusCode != 206, response.statusCode != 304,
            !control.noStore, !requestControl.noStore, !(shared && control.isPrivate),
            !response.varyNames.contains("*")
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
