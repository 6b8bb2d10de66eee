import Foundation

/// A response as an ``HTTPResponseCache`` stores and returns it: status, header
/// fields, body, the request header fields its `Vary` names, and when it was
/// requested and received (RFC 9111's `request_time` and `response_time`).
public struct HTTPCachedResponse: Sendable, Hashable {
    /// The URL requested.
    public var url: URL
    /// The status code.
    public var statusCode: Int
    /// The header fields, in the order the origin sent them, repeated fields apart;
    /// never a hop-by-hop field (`Connection`, those it names, `Keep-Alive`, …)
    /// once stored.
    public var headers: HTTPHeaderFields
    /// The body.
    public var body: Data
    /// The values of the request header fields the response's `Vary` names (names
    /// lowercased; an absent field is absent here too).
    public var varyingRequestHeaders: [String: String]
    /// When the request that brought this response (or its last revalidation) left.
    public var requestTime: Date
    /// When the response (or the `304` that revalidated it) arrived.
    public var responseTime: Date
    /// Whether the caller is served from storage: `false` for a response just
    /// received from the origin, `true` for a stored one, fresh or revalidated.
    public var isFromCache: Bool

    /// Creates a response.
    public init(
        url: URL, statusCode: Int, headers: HTTPHeaderFields, body: Data, varyingRequestHeaders: [String: String] = [:],
        requestTime: Date, responseTime: Date, isFromCache: Bool = false
    ) {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.varyingRequestHeaders = varyingRequestHeaders
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.isFromCache = isFromCache
    }

    /// The value of the header field `name` (any case), several fields joined with
    /// ", ", or `nil`.
    public subscript(header name: String) -> String? { headers[name] }

    /// The response's `Cache-Control` directives.
    public var cacheControl: HTTPCacheControl { HTTPCacheControl(headers.values(for: "cache-control")) }

    /// The lowercased field names of `Vary`; `["*"]` for `Vary: *`.
    public var varyNames: [String] { headers.listMembers("vary").map { $0.lowercased() } }

    /// The `Date` the origin gave, when there is exactly one and it is a valid HTTP
    /// date.
    var originDate: Date? {
        let values = headers.values(for: "date")
        return values.count == 1 ? _HTTPDate.parse(values[0]) : nil
    }

    /// The `Age` the response arrived with (RFC 9111, section 5.1): the first
    /// member of the first `Age` field when it is delta-seconds (digits, leading
    /// zeros allowed; at most 2^31), else 0.
    var ageValue: TimeInterval {
        guard
            let first = headers.values(for: "age").first?.split(separator: ",", omittingEmptySubsequences: false).first
        else { return 0 }
        let text = first.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return 0
        }
        return TimeInterval(HTTPCacheControl.deltaSeconds(text) ?? 0)
    }

    /// This stored response with the header fields of `update` (a `304`, or a
    /// `200` to a `HEAD`) in place of its own of the same names, but for the
    /// hop-by-hop fields, `Content-Length` and `Content-Encoding` (RFC 9111, section
    /// 3.2: the stored body keeps its length and encoding), and the dates of that
    /// exchange. An `update` without `Date` dates it `responseTime` (RFC 9110,
    /// section 6.6.1), and one without `Age` leaves it none (RFC 9111, section 5.1:
    /// validated then): the earlier exchange's `Date` and `Age` no longer age it.
    /// The request fields its `Vary` names are those of `requestHeaders`,
    /// the request that exchange answered: a `Vary` the update brings (or changes)
    /// then selects by what that request sent, not by nothing.
    func updated(
        with update: HTTPHeaderFields, requestHeaders: HTTPHeaderFields, requestTime: Date, responseTime: Date
    ) -> HTTPCachedResponse {
        var refreshed = self
        var replaced: Set<String> = []
        for field in _HTTPHopByHop.removed(from: update) {
            let name = field.name.lowercased()
            guard !["content-length", "content-encoding"].contains(name) else { continue }
            if replaced.insert(name).inserted { refreshed.headers.removeAll(named: name) }
            refreshed.headers.fields.append(field)
        }
        if !replaced.contains("date") { refreshed.headers["Date"] = _HTTPDate.format(responseTime) }
        if !replaced.contains("age") { refreshed.headers.removeAll(named: "age") }
        refreshed.recordVaryingFields(of: requestHeaders)
        refreshed.requestTime = requestTime
        refreshed.responseTime = responseTime
        refreshed.isFromCache = true
        return refreshed
    }

    /// Sets ``varyingRequestHeaders`` to the fields of `requestHeaders` that this
    /// response's `Vary` names: the request it answers, which it selects later.
    /// (A request with an ISO-8859-1 value among them neither selects nor stores a
    /// response: see `_HTTPRequest.selects(_:)`.)
    mutating func recordVaryingFields(of requestHeaders: HTTPHeaderFields) {
        var varying: [String: String] = [:]
        for name in varyNames where name != "*" { varying[name] = requestHeaders[name] }
        varyingRequestHeaders = varying
    }

    /// Whether a `304` with the header fields `fields` may update this stored
    /// response (RFC 9111, section 4.3.4): its `ETag`, when it has one, matches this
    /// response's: a strong one only the same strong tag (a weakly tagged response
    /// is not the representation a strong tag names), a weak one weakly; else
    /// its `Last-Modified`, when it has one, is this response's. A `304` with
    /// neither validator updates the response the request was made conditional on.
    /// Validators are compared by their bytes (obs-text included).
    func isSelected(by fields: HTTPHeaderFields) -> Bool {
        if let received = fields.byteTexts(for: "etag").first {
            guard let stored = headers.byteTexts(for: "etag").first else { return false }
            let tag = HTTPHeaderFields.trimmingWhitespace(received)
            let own = HTTPHeaderFields.trimmingWhitespace(stored)
            if !tag.hasPrefix("W/") { return tag == own }
            return Self.opaqueTag(tag) == Self.opaqueTag(own)
        }
        if let modified = fields.byteTexts(for: "last-modified").first {
            return modified == headers.byteTexts(for: "last-modified").first
        }
        return true
    }

    /// An entity tag without its weakness prefix, for a weak comparison.
    private static func opaqueTag(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag)
    }

    /// Whether a `200` to a `HEAD` with the header fields `fields` describes this
    /// stored response (RFC 9111, section 4.3.5): it carries an `ETag` or a
    /// `Last-Modified`, each it carries equals this response's, and its
    /// `Content-Length`, if any, is this response's. Validators are compared by
    /// their bytes.
    func isSameRepresentation(as fields: HTTPHeaderFields) -> Bool {
        let tag = fields.byteTexts(for: "etag").first
        let modified = fields.byteTexts(for: "last-modified").first
        guard tag != nil || modified != nil else { return false }
        if let tag, tag != headers.byteTexts(for: "etag").first { return false }
        if let modified, modified != headers.byteTexts(for: "last-modified").first { return false }
        if let length = fields.values(for: "content-length").first,
            length.trimmingCharacters(in: .whitespaces)
                != headers.values(for: "content-length").first ?? String(body.count)
        {
            return false
        }
        return true
    }

    /// The response's age at `now`, in seconds (RFC 9111, section 4.2.3).
    public func age(at now: Date) -> TimeInterval {
        let date = originDate ?? responseTime
        let apparentAge = max(0, responseTime.timeIntervalSince(date))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
    }
}

/// What an ``HTTPResponseCache`` stores under one URL: a response per set of
/// request header values its `Vary` selects, newest first. Stored in any Hoard tier
/// as the metadata in JSON followed by the bodies as they are.
public struct HTTPStoredResponses: Sendable, Hashable {
    /// The responses, newest first.
    public var responses: [HTTPCachedResponse]

    /// Creates a list of stored responses.
    public init(responses: [HTTPCachedResponse]) {
        self.responses = responses
    }
}

extension HTTPStoredResponses: CacheValue {
    /// The metadata of every response as JSON, then the bodies back to back:
    /// `UInt32` length of the JSON (little-endian), the JSON, the bodies.
    private struct Metadata: Codable {
        var url: URL
        var statusCode: Int
        var headers: HTTPHeaderFields
        var bodyLength: Int
        var varyingRequestHeaders: [String: String]
        var requestTime: Date
        var responseTime: Date
    }

    /// The metadata as JSON, then the bodies.
    public func cacheEncoded() throws -> Data {
        let metadata = responses.map {
            Metadata(
                url: $0.url, statusCode: $0.statusCode, headers: $0.headers, bodyLength: $0.body.count,
                varyingRequestHeaders: $0.varyingRequestHeaders, requestTime: $0.requestTime,
                responseTime: $0.responseTime)
        }
        let json = try JSONEncoder().encode(metadata)
        var data = Data()
        var length = UInt32(json.count).littleEndian
        withUnsafeBytes(of: &length) { data.append(contentsOf: $0) }
        data.append(json)
        for response in responses { data.append(response.body) }
        return data
    }

    /// Decodes what ``cacheEncoded()`` wrote.
    ///
    /// - Throws: ``HoardError/Code/decodingFailed`` for bytes it did not write.
    public init(cacheData data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count >= 4 else { throw HoardError(.decodingFailed, "a stored HTTP response is truncated") }
        let length = Int(UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        guard length <= bytes.count - 4 else {
            throw HoardError(.decodingFailed, "a stored HTTP response is truncated")
        }
        let metadata = try JSONDecoder().decode([Metadata].self, from: Data(bytes[4..<(4 + length)]))
        var offset = 4 + length
        var responses: [HTTPCachedResponse] = []
        for item in metadata {
            guard item.bodyLength >= 0, item.bodyLength <= bytes.count - offset else {
                throw HoardError(.decodingFailed, "a stored HTTP response's body is truncated")
            }
            responses.append(
                HTTPCachedResponse(
                    url: item.url, statusCode: item.statusCode, headers: item.headers,
                    body: Data(bytes[offset..<(offset + item.bodyLength)]),
                    varyingRequestHeaders: item.varyingRequestHeaders, requestTime: item.requestTime,
                    responseTime: item.responseTime, isFromCache: true))
            offset += item.bodyLength
        }
        guard offset == bytes.count else { throw HoardError(.decodingFailed, "a stored HTTP response has extra bytes") }
        self.responses = responses
    }

    /// The bytes of the bodies.
    public var cacheCost: Int { responses.reduce(0) { $0 + $1.body.count } }
}
