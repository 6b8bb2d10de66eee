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
/// Every status comes back as a response (the cache decides what a 304, a 3xx
/// or a 5xx means); only transport failures and a body over ``maximumBodyBytes``
/// throw. Header fields come back in the order received, repeated ones apart.
public struct AsyncHTTPClientTransport: HTTPCacheTransport {
    /// A process-wide client that never follows a redirect and never decompresses
    /// (what an HTTP cache must see: the `3xx` itself, and the body, `ETag` and
    /// lengths of the representation as the origin sent it). Created on first use
    /// on NIO's singleton event loop group, never shut down, like
    /// `HTTPClient.shared`.
    public static let sharedClient = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: HTTPClient.Configuration(
            redirectConfiguration: .disallow, connectionPool: .init(), decompression: .disabled))

    /// The client requests go through. Defaults to ``sharedClient``; a client
    /// given must not follow redirects nor decompress, for the reasons
    /// ``sharedClient`` gives.
    public let client: HTTPClient
    /// How long a request may take, body included. Defaults to 30 seconds.
    public let timeout: TimeAmount
    /// The largest body accepted; a larger one throws. Defaults to 64 MiB.
    public let maximumBodyBytes: Int

    /// Creates a transport; every parameter defaults as its property says.
    public init(
        client: HTTPClient = AsyncHTTPClientTransport.sharedClient, timeout: TimeAmount = .seconds(30),
        maximumBodyBytes: Int = 64 << 20
    ) {
        self.client = client
        self.timeout = timeout
        self.maximumBodyBytes = maximumBodyBytes
    }

    public func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for field in request.headers { outgoing.headers.add(name: field.name, value: field.value) }
        if !request.body.isEmpty { outgoing.body = .bytes(ByteBuffer(bytes: request.body)) }
        // One deadline for the whole exchange: AsyncHTTPClient's covers the head
        // only, and an origin that stalls its body would hold the request (and
        // every request waiting on it) for ever.
        let deadline = NIODeadline.now() + timeout
        let response = try await client.execute(outgoing, deadline: deadline)
        var body = try await Self.collect(response.body, upTo: maximumBodyBytes, before: deadline)
        var fields = HTTPHeaderFields()
        for (name, value) in response.headers { fields.append(name: name, value: value) }
        let bytes = body.readBytes(length: body.readableBytes) ?? []
        return HTTPTransportResponse(statusCode: Int(response.status.code), headers: fields, body: Data(bytes))
    }

    /// `body` collected whole (at most `limit` bytes), or
    /// `HTTPClientError.deadlineExceeded` once `deadline` passes first; the
    /// collection is then cancelled, which cancels the request.
    private static func collect(
        _ body: HTTPClientResponse.Body, upTo limit: Int, before deadline: NIODeadline
    ) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: limit) }
            group.addTask {
                let remaining = (deadline - .now()).nanoseconds
                try await Task.sleep(nanoseconds: UInt64(max(0, remaining)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let collected = first else {
                throw HTTPClientError.deadlineExceeded
            }
            return collected
        }
    }
}
#endif
