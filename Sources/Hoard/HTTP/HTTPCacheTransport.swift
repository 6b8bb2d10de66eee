import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response as an ``HTTPCacheTransport`` received it.
public struct HTTPTransportResponse: Sendable, Hashable {
    /// The status code.
    public var statusCode: Int
    /// The header fields (any case; repeated fields joined with ", ").
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(statusCode: Int, headers: [String: String], body: Data) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
    }
}

/// How an ``HTTPResponseCache`` reaches the origin: sends one request, returns the
/// response as received, whatever its status. A transport must not cache: the
/// cache sends conditional requests itself and must see every `304`.
public protocol HTTPCacheTransport: Sendable {
    /// Sends a request and returns the response; throws on transport failures only.
    func send(method: String, url: URL, headers: [String: String]) async throws -> HTTPTransportResponse
}

/// An ``HTTPCacheTransport`` over `URLSession`.
public struct URLSessionHTTPTransport: HTTPCacheTransport {
    /// The session requests go through.
    public let session: URLSession

    /// A transport over `session`; by default an ephemeral session with no
    /// `URLCache`, so that nothing but the ``HTTPResponseCache`` caches.
    public init(session: URLSession? = nil) {
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            self.session = URLSession(configuration: configuration)
        }
    }

    public func send(method: String, url: URL, headers: [String: String]) async throws -> HTTPTransportResponse {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (body, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw HoardError(
                .httpFailed, "\(url.absoluteString) did not answer with an HTTP response", key: url.absoluteString)
        }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String else { continue }
            fields[name.lowercased()] = "\(value)"
        }
        return HTTPTransportResponse(statusCode: http.statusCode, headers: fields, body: body)
    }
}
