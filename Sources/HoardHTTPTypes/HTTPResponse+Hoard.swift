#if HTTPTypes
import Foundation
import Hoard
import HTTPTypes

extension HTTPResponse {
    /// The status and header fields of `response` (a stored or received one) as
    /// swift-http-types has them, fields in order with repeated ones apart; its
    /// body is `response.body`. The status carries no reason phrase.
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` for a status code
    ///   outside 0–999 or a field that is not valid HTTP.
    public init(_ response: HTTPCachedResponse) throws(HoardError) {
        try self.init(statusCode: response.statusCode, headers: response.headers, url: response.url)
    }

    /// The status and header fields of `response` (what a transport received), as
    /// swift-http-types has them, fields in order with repeated ones apart.
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` for a status code
    ///   outside 0–999 or a field that is not valid HTTP.
    public init(_ response: HTTPTransportResponse) throws(HoardError) {
        try self.init(statusCode: response.statusCode, headers: response.headers, url: nil)
    }

    private init(statusCode: Int, headers: HTTPHeaderFields, url: URL?) throws(HoardError) {
        guard (0...999).contains(statusCode) else {
            throw HoardError(
                .invalidHTTPMessage, "\(statusCode) is not an HTTP status code", key: url?.absoluteString)
        }
        self.init(status: Status(code: statusCode), headerFields: try HTTPFields(headers))
    }
}

extension HTTPTransportResponse {
    /// `response` with the body `body`, as an `HTTPCacheTransport` returns
    /// it: the status code, and the header fields in order, repeated ones apart.
    public init(_ response: HTTPResponse, body: Data) {
        self.init(statusCode: response.status.code, headers: HTTPHeaderFields(response.headerFields), body: body)
    }
}
#endif
