import Foundation

/// The directives of a `Cache-Control` header (RFC 9111, section 5.2), request or
/// response, parsed leniently: unknown directives are ignored, a directive whose
/// value does not parse counts as absent, and repeated headers are combined.
public struct HTTPCacheControl: Sendable, Hashable {
    /// `max-age`: seconds the response is fresh (response), or the oldest response the
    /// client accepts (request).
    public var maxAge: Int?
    /// `s-maxage`: `max-age` for shared caches; implies `proxy-revalidate`.
    public var sharedMaxAge: Int?
    /// `no-store`: nothing of the exchange may be stored.
    public var noStore = false
    /// `no-cache`: a stored response may not be used without revalidating it.
    public var noCache = false
    /// `must-revalidate`: once stale, the response may not be used without
    /// revalidating it, not even when the origin is unreachable.
    public var mustRevalidate = false
    /// `proxy-revalidate`: `must-revalidate` for shared caches.
    public var proxyRevalidate = false
    /// `private`: only a private cache may store the response.
    public var isPrivate = false
    /// `public`: any cache may store the response, even to a request with
    /// `Authorization`.
    public var isPublic = false
    /// `stale-while-revalidate` (RFC 5861): seconds past freshness during which a
    /// stale response may be served while it is revalidated in the background.
    public var staleWhileRevalidate: Int?
    /// `stale-if-error` (RFC 5861): seconds past freshness during which a stale
    /// response may be served when revalidating fails (an error, or a 5xx).
    public var staleIfError: Int?
    /// `max-stale` (request): staleness the client accepts; `Int.max` when given
    /// without a value.
    public var maxStale: Int?
    /// `min-fresh` (request): the response must stay fresh this many seconds more.
    public var minFresh: Int?
    /// `only-if-cached` (request): answer from the cache, or with 504.
    public var onlyIfCached = false
    /// `must-understand` (response): store the response only when the cache
    /// understands its status, then regardless of `no-store`.
    public var mustUnderstand = false

    /// No directive.
    public init() {}

    /// Parses the values of every `Cache-Control` header field of a message.
    public init(_ values: [String]) {
        var seen: Set<String> = []
        for value in values {
            for directive in Self.directives(value) {
                guard seen.insert(directive.name).inserted else { continue }
                let seconds = directive.value.flatMap(Self.deltaSeconds)
                switch directive.name {
                case "max-age": maxAge = seconds
                case "s-maxage": sharedMaxAge = seconds
                case "no-store": noStore = true
                case "no-cache": noCache = true
                case "must-revalidate": mustRevalidate = true
                case "proxy-revalidate": proxyRevalidate = true
                case "private": isPrivate = true
                case "public": isPublic = true
                case "stale-while-revalidate": staleWhileRevalidate = seconds
                case "stale-if-error": staleIfError = seconds
                case "max-stale": maxStale = directive.value == nil ? Int.max : seconds
                case "min-fresh": minFresh = seconds
                case "only-if-cached": onlyIfCached = true
                case "must-understand": mustUnderstand = true
                default: break
                }
            }
        }
    }

    /// The largest delta-seconds kept: a larger value, however many digits it has,
    /// counts as 2^31 (RFC 9111, section 1.2.2).
    static let maximumDeltaSeconds = 1 << 31

    /// A delta-seconds value (RFC 9111, section 1.2.2): decimal digits, leading
    /// zeros allowed, capped at ``maximumDeltaSeconds``; `nil` for anything else.
    /// A sign is tolerated as before: `+60` is 60, and a negative value counts as 0.
    static func deltaSeconds(_ text: String) -> Int? {
        var digits = Substring(text)
        var isNegative = false
        if let sign = digits.first, sign == "-" || sign == "+" {
            isNegative = sign == "-"
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        if isNegative { return 0 }
        let significant = digits.drop { $0 == "0" }
        // Eleven digits or more exceed 2^31 (ten digits); fewer always fit an Int.
        guard significant.count <= 10, let value = Int(significant.isEmpty ? "0" : String(significant)) else {
            return maximumDeltaSeconds
        }
        return min(value, maximumDeltaSeconds)
    }

    /// Splits a header value into directives at commas outside quoted strings.
    static func directives(_ value: String) -> [(name: String, value: String?)] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == "," && !quoted {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts.compactMap { part in
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { return nil }
            guard let equals = trimmed.firstIndex(of: "=") else { return (trimmed.lowercased(), nil) }
            let name = trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return (name, value)
        }
    }
}
