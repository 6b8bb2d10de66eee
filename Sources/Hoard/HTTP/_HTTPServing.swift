import Foundation

/// A client's own validators against a stored response (RFC 9110, section 13.1;
/// RFC 9111, section 4.3.2).
enum _HTTPClientConditions {
    /// Whether `request`'s `If-None-Match` (weak comparison) or, without it, its
    /// `If-Modified-Since` (against its `Last-Modified`, else its `Date`) says the
    /// client already has `stored`. Entity tags are compared by their bytes.
    static func notModified(_ stored: HTTPCachedResponse, request: _HTTPRequest) -> Bool {
        let tags = request.headers.byteListMembers("if-none-match")
        if !tags.isEmpty {
            guard let etag = stored.headers.byteTexts(for: "etag").first else { return false }
            return tags.contains { $0 == "*" || weak($0) == weak(etag) }
        }
        guard let since = request.headers.values(for: "if-modified-since").first.flatMap(_HTTPDate.parse) else {
            return false
        }
        // Without Last-Modified, the Date the origin gave (RFC 9110, section 13.1.3).
        guard
            let modified = stored.headers.values(for: "last-modified").first.flatMap(_HTTPDate.parse)
                ?? stored.originDate
        else { return false }
        return modified <= since
    }

    private static func weak(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }
}

/// A single byte range of a complete stored response (RFC 9110, section 14).
enum _HTTPRange {
    /// `response` cut to the one byte range `request` asks for: a `206` with
    /// `Content-Range`, a `416` when the range starts past the end, or `response`
    /// itself for no `Range`, several ranges, another unit, a range that does not
    /// parse, or an `If-Range` that does not match (byte for byte) its strong
    /// `ETag` or `Last-Modified`.
    static func apply(_ request: _HTTPRequest, to response: HTTPCachedResponse) -> HTTPCachedResponse {
        let ranges = request.headers.values(for: "range")
        guard ranges.count == 1 else { return response }
        let spec = ranges[0].trimmingCharacters(in: .whitespaces)
        guard spec.lowercased().hasPrefix("bytes=") else { return response }
        let sets = spec.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false)
        guard sets.count == 1 else { return response }
        if let condition = request.headers.byteTexts(for: "if-range").first {
            let etag = response.headers.byteTexts(for: "etag").first
            let modified = response.headers.byteTexts(for: "last-modified")
            let matches =
                condition.hasPrefix("\"")
                ? (etag == condition) : (!modified.isEmpty && condition == modified.joined(separator: ", "))
            guard matches else { return response }
        }
        let length = response.body.count
        let parts = sets[0].trimmingCharacters(in: .whitespaces).split(
            separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return response }
        let first = Int(parts[0].trimmingCharacters(in: .whitespaces))
        let last = Int(parts[1].trimmingCharacters(in: .whitespaces))
        let start: Int
        let end: Int
        switch (first, last, parts[0].isEmpty, parts[1].isEmpty) {
        case (let first?, nil, false, true):
            start = first
            end = length - 1
        case (let first?, let last?, false, false):
            guard first <= last else { return response }
            start = first
            end = min(last, length - 1)
        case (nil, let suffix?, true, false):
            guard suffix > 0 else { return unsatisfiable(response) }
            start = max(0, length - suffix)
            end = length - 1
        default:
            return response
        }
        guard start >= 0, start < length else { return unsatisfiable(response) }
        var partial = response
        partial.statusCode = 206
        partial.body = Data(response.body.dropFirst(start).prefix(end - start + 1))
        partial.headers["Content-Range"] = "bytes \(start)-\(end)/\(length)"
        if partial.headers.contains("content-length") { partial.headers["Content-Length"] = String(end - start + 1) }
        return partial
    }

    private static func unsatisfiable(_ response: HTTPCachedResponse) -> HTTPCachedResponse {
        var refused = response
        refused.statusCode = 416
        refused.body = Data()
        refused.headers["Content-Range"] = "bytes */\(response.body.count)"
        if refused.headers.contains("content-length") { refused.headers["Content-Length"] = "0" }
        return refused
    }
}
