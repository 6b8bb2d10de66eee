#if Hummingbird && AsyncHTTPClient && Redis && HTTPTypes
import Foundation
import HTTPTypes
import Hoard
import HoardAsyncHTTPClient
import HoardHTTPTypes
import HoardRedis
import Hummingbird
import HummingbirdCore
import Logging
import NIOPosix

// A caching reverse proxy: every request to it goes through an HTTPResponseCache (a
// shared cache) to one origin, over AsyncHTTPClient. See README.md next to this file.
//
//     swift run --enable-all-traits HTTPCacheProxy --origin http://127.0.0.1:8000 \
//         [--port 8080] [--disk DIR] [--redis redis://127.0.0.1:6379] [--memory-mib 64] \
//         [--cdn-cache-control]

struct Options {
    var origin = URL(string: "http://127.0.0.1:8000")!
    var port = 8080
    var disk: String?
    var redis: String?
    var memoryMiB = 64
    var targeted: String?

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let next = rest.popFirst() else { throw HoardError(.invalidConfiguration, "\(flag) needs a value") }
            return next
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--origin":
                let text = try value(flag)
                guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                    throw HoardError(.invalidConfiguration, "--origin \(text) is not an absolute URL")
                }
                origin = url
            case "--port":
                let text = try value(flag)
                guard let number = Int(text), (0...65_535).contains(number) else {
                    throw HoardError(.invalidConfiguration, "--port \(text) is not a port")
                }
                port = number
            case "--disk": disk = try value(flag)
            case "--redis": redis = try value(flag)
            case "--memory-mib":
                let text = try value(flag)
                guard let number = Int(text), number > 0 else {
                    throw HoardError(.invalidConfiguration, "--memory-mib \(text) is not a positive number")
                }
                memoryMiB = number
            case "--cdn-cache-control": targeted = "CDN-Cache-Control"
            default: throw HoardError(.invalidConfiguration, "unknown argument \(flag)")
            }
        }
    }
}

/// Answers every request through `cache`, as a reverse proxy for `origin`.
///
/// It runs on HummingbirdCore's server rather than a Hummingbird `Application`,
/// which sets its own `Date` on every response: a cache must pass the stored
/// `Date` on unchanged (RFC 9110, section 6.6.1).
struct CachingProxy: Sendable {
    let cache: HTTPResponseCache
    let origin: URL
    let logger: Logger

    /// Request fields that concern the connection to the proxy, not the origin
    /// (`Host` is the origin's: the request's authority becomes the origin's).
    static let connectionFields: Set<String> = [
        "host", "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
        "proxy-authorization", "content-length",
    ]

    /// `origin`'s authority (host and port, as written in the URL).
    var originAuthority: String {
        let afterScheme = origin.absoluteString.split(separator: "://", maxSplits: 1).last ?? ""
        let authority = afterScheme.prefix { !"/?#".contains($0) }
        return String(authority.split(separator: "@").last ?? authority)
    }

    func respond(to request: Request) async throws -> Response {
        var head = request.head
        // SwiftNIO's HTTP/1 parser names the method M-SEARCH as MSEARCH.
        if head.method.rawValue == "MSEARCH", let method = HTTPRequest.Method("M-SEARCH") { head.method = method }
        head.scheme = origin.scheme
        head.authority = originAuthority
        head.path = origin.path + (head.path ?? "/")
        let named = Set(
            head.headerFields[values: .connection].flatMap { $0.split(separator: ",") }.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            })
        head.headerFields.removeAll {
            Self.connectionFields.contains($0.name.canonicalName) || named.contains($0.name.canonicalName)
        }
        let body = try await request.body.collect(upTo: 64 << 20)
        let answer: (response: HTTPResponse, body: Data)
        do {
            answer = try await cache.response(to: head, body: Data(body.readableBytesView))
        } catch {
            logger.warning("origin request failed", metadata: ["path": "\(head.path ?? "")", "error": "\(error)"])
            return Response(status: .badGateway)
        }
        var response = answer.response
        let isHead = head.method == .head
        // The server writes the length of the body it sends (none for a HEAD's).
        if !isHead { response.headerFields[.contentLength] = nil }
        let code = response.status.code
        if isHead || code == 304 || code == 204 || code < 200 {
            return Response(status: response.status, headers: response.headerFields)
        }
        return Response(
            status: response.status, headers: response.headerFields,
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

let options = try Options(Array(CommandLine.arguments.dropFirst()))
var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "http-cache-proxy")
storage.memory = .init(costLimit: options.memoryMiB << 20)
storage.localStores = .none
if let disk = options.disk {
    storage.localStores = .stores([try DiskStore(directory: URL(fileURLWithPath: disk))])
}
if let redis = options.redis {
    storage.remoteStores = [try RedisStore(configuration: .init(url: redis))]
}
let cache = try HTTPResponseCache(
    configuration: .init(storage: storage, isShared: true, targetedCacheControl: options.targeted),
    transport: AsyncHTTPClientTransport())
let logger = Logger(label: "HTTPCacheProxy")
let proxy = CachingProxy(cache: cache, origin: options.origin, logger: logger)
let server = Server(
    childChannelSetup: HTTP1Channel(responder: { request, writer, _ in
        let response = try await proxy.respond(to: request)
        try await writer.write(response: response.head, body: response.body)
    }),
    configuration: .init(address: .hostname("127.0.0.1", port: options.port)),
    onServerRunning: { channel in
        logger.info("listening", metadata: ["address": "\(channel.localAddress.map { "\($0)" } ?? "?")"])
    },
    eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger)
try await server.run()
#else
print(
    "HTTPCacheProxy needs the traits Hummingbird, AsyncHTTPClient, Redis and HTTPTypes: swift run --enable-all-traits HTTPCacheProxy"
)
#endif
