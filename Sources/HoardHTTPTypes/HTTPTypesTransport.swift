#if HTTPTypes
import Foundation
import Hoard
import HTTPTypes

/// An `HTTPCacheTransport` over any client that sends an `HTTPRequest`
/// with a body and returns an `HTTPResponse` with its body: a swift-openapi
/// `ClientTransport`, URLSession's swift-http-types methods, or a test double.
///
/// ```swift
/// let transport = HTTPTypesTransport { request, body in
///     try await client.send(request, body: body)   // (HTTPResponse, Data)
/// }
/// let http = try HTTPResponseCache(transport: transport)
/// ```
///
/// The request's fields reach `send` in order, repeated ones apart, and so do the
/// response's on the way back. What an `HTTPCacheTransport` must do still holds:
/// `send` must return every status as a response, and must not cache, follow
/// redirects or decode `Content-Encoding`.
public struct HTTPTypesTransport: HTTPCacheTransport {
    /// Sends a request with its body (empty for none) and returns the response with
    /// its whole body; throws on transport failures only.
    public let sendRequest: @Sendable (HTTPRequest, Data) async throws -> (HTTPResponse, Data)

    /// A transport that sends each request with `send`.
    public init(_ send: @escaping @Sendable (HTTPRequest, Data) async throws -> (HTTPResponse, Data)) {
        sendRequest = send
    }

    /// Converts `request`, sends it, and converts the response back.
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` when `request` cannot
    ///   be expressed as an `HTTPRequest` (see `HTTPRequest.init(_:)`), and what
    ///   ``sendRequest`` throws.
    public func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        let (response, body) = try await sendRequest(HTTPRequest(request), request.body)
        return HTTPTransportResponse(response, body: body)
    }
}
#endif
