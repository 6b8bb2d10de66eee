#if AsyncHTTPClient
import AsyncHTTPClient
import Foundation
import Hoard
import NIOCore
import NIOHTTP1

/// An `HTTPCacheTransport` over AsyncHTTPClient, for an `HTTPResponseCache` in a
/// server that talks to other services with SwiftNIO rather than `URLSession`.
///
/// ```swift
/// let http = try HTTPResponseCache(transport: AsyncHTTPClientTransport())
/// let catalog = try await http.data(from: catalogURL)
/// ```
///
/// Every status comes back as a response (the cache decides what a 304 or a 5xx
/// means); only transport failures and a body over ``maximumBodyBytes`` throw.
public struct AsyncHTTPClientTransport: HTTPCacheTransport {
    /// The client requests go through. Defaults to `HTTPClient.shared`.
    public let client: HTTPClient
    /// How long a request may take, body included. Defaults to 30 seconds.
    public let timeout: TimeAmount
    /// The largest body accepted; a larger one throws. Defaults to 64 MiB.
    public let maximumBodyBytes: Int

    /// Creates a transport; every parameter defaults as its property says.
    public init(client: HTTPClient = .shared, timeout: TimeAmount = .seconds(30), maximumBodyBytes: Int = 64 << 20) {
        self.client = client
        self.timeout = timeout
        self.maximumBodyBytes = maximumBodyBytes
    }

    public func send(method: String, url: URL, headers: [String: String]) async throws -> HTTPTransportResponse {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: timeout)
        var body = try await response.body.collect(upTo: maximumBodyBytes)
        var fields: [String: String] = [:]
        for (name, value) in response.headers {
            let name = name.lowercased()
            fields[name] = fields[name].map { "\($0), \(value)" } ?? value
        }
        let bytes = body.readBytes(length: body.readableBytes) ?? []
        return HTTPTransportResponse(statusCode: Int(response.status.code), headers: fields, body: Data(bytes))
    }
}
#endif
