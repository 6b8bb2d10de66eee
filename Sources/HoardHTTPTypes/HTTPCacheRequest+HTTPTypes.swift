#if HTTPTypes
import Foundation
import Hoard
import HTTPTypes

extension HTTPCacheRequest {
    /// `request` with the body `body`, as an `HTTPResponseCache` takes it:
    /// the same method, the URL its `:scheme`, `:authority` and `:path` make, and its
    /// header fields in order, repeated ones apart.
    ///
    /// A request a server received usually has no scheme, and its authority is the
    /// server's own: a reverse proxy sets both to the origin's before converting.
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` when the request has
    ///   no scheme, authority or path, or they do not form a URL (`CONNECT`,
    ///   `OPTIONS *`).
    public init(_ request: HTTPRequest, body: Data = Data()) throws(HoardError) {
        guard request.scheme != nil, request.authority != nil, let url = request.url else {
            throw HoardError(
                .invalidHTTPMessage,
                "a \(request.method.rawValue) request with scheme \(request.scheme ?? "none"), authority "
                    + "\(request.authority ?? "none") and path \(request.path ?? "none") has no absolute URL")
        }
        self.init(
            method: request.method.rawValue, url: url, headers: HTTPHeaderFields(request.headerFields), body: body)
    }
}

extension HTTPRequest {
    /// `request` as swift-http-types has it (its body aside): the same method, the
    /// scheme, authority and path (with the query) of its URL, and its header
    /// fields in order, repeated ones apart.
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` when the method is not
    ///   a token, the URL has no scheme or host, or a field is not valid HTTP (see
    ///   `HTTPFields.init(_:)`).
    public init(_ request: HTTPCacheRequest) throws(HoardError) {
        guard let method = HTTPRequest.Method(request.method) else {
            throw HoardError(.invalidHTTPMessage, "\"\(request.method)\" is not a valid HTTP method")
        }
        guard request.url.scheme != nil, request.url.host != nil else {
            throw HoardError(
                .invalidHTTPMessage, "\(request.url.absoluteString) is not an absolute URL with a host",
                key: request.url.absoluteString)
        }
        self.init(method: method, url: request.url, headerFields: try HTTPFields(request.headers))
    }
}
#endif
