import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request as an ``HTTPResponseCache`` takes it and an ``HTTPCacheTransport``
/// sends it: method, target URL, ordered header fields and body.
public struct HTTPCacheRequest: Sendable, Hashable {
    /// The method, as sent (`GET`, `HEAD`, `POST`, …; methods are case-sensitive).
    public var method: String
    /// The target.
    public var url: URL
    /// The header fields, in order.
    public var headers: HTTPHeaderFields
    /// The body; empty for none.
    public var body: Data

    /// Creates a request; a `GET` with no header field and no body by default.
    public init(method: String = "GET", url: URL, headers: HTTPHeaderFields = [:], body: Data = Data()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A response as an ``HTTPCacheTransport`` received it.
public struct HTTPTransportResponse: Sendable, Hashable {
    /// The status code.
    public var statusCode: Int
    /// The header fields, in the order received, repeated fields apart.
    public var headers: HTTPHeaderFields
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(statusCode: Int, headers: HTTPHeaderFields, body: Data) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
    }
}

/// How an ``HTTPResponseCache`` reaches the origin: sends one request, returns the
/// response as received, whatever its status.
///
/// A transport must not cache (the cache sends conditional requests itself and
/// must see every `304`), must not follow redirects (a `301` is a response the
/// cache stores under the URL requested; following it would store the target's
/// response under the wrong URL and hide the redirect from the caller), and must
/// not decode `Content-Encoding` (the stored body, its `Content-Length`, its
/// `ETag` and any range served from it are those of the encoded representation
/// the origin sent).
public protocol HTTPCacheTransport: Sendable {
    /// Sends `request` and returns the response; throws on transport failures only.
    func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse
}

/// An ``HTTPCacheTransport`` over `URLSession` that never follows a redirect.
///
/// `URLSession` itself may decode a compressed body and, on Linux
/// (swift-corelibs-foundation), fails on a `Content-Encoding` it does not know:
/// use `AsyncHTTPClientTransport` (product `HoardAsyncHTTPClient`), which hands
/// over the bytes as sent, when the origin encodes its responses.
public struct URLSessionHTTPTransport: HTTPCacheTransport {
    /// The session requests go through.
    public let session: URLSession

    /// A transport over `session`; by default an ephemeral session with no
    /// `URLCache`, so that nothing but the ``HTTPResponseCache`` caches, whose
    /// delegate refuses every redirect. A session given is used as it is: its
    /// delegate must refuse redirects for the cache to see them.
    public init(session: URLSession? = nil) {
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            self.session = URLSession(
                configuration: configuration, delegate: _NoRedirectDelegate(), delegateQueue: nil)
        }
    }

    public func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData)
        urlRequest.httpMethod = request.method
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        if !request.body.isEmpty { urlRequest.httpBody = request.body }
        let (body, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else {
            throw HoardError(
                .httpFailed, "\(request.url.absoluteString) did not answer with an HTTP response",
                key: request.url.absoluteString)
        }
        // HTTPURLResponse has already joined repeated fields; their order is lost.
        var fields = HTTPHeaderFields()
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String else { continue }
            fields.append(name: name.lowercased(), value: "\(value)")
        }
        fields.fields.sort { $0.name < $1.name }
        return HTTPTransportResponse(statusCode: http.statusCode, headers: fields, body: body)
    }
}

/// Refuses every redirect, so that the `3xx` itself reaches the cache.
final class _NoRedirectDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
