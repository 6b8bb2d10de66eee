import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin
private let streamSocket = SOCK_STREAM
#endif

/// A request as ``LoopbackHTTPServer`` received it: method, path, header fields
/// (names lowercased; a repeated field keeps its last value) and body (as long as
/// its `Content-Length`).
struct LoopbackRequest: Sendable {
    var method = "GET"
    var path: String
    var headers: [String: String]
    var body = ""
}

/// What ``LoopbackHTTPServer`` answers: `headers`, then the `lines` in their order
/// (repeated names kept as separate lines).
struct LoopbackResponse: Sendable {
    var status: Int
    var headers: [String: String] = [:]
    var body: String = ""
    var lines: [(name: String, value: String)] = []
}

/// A minimal HTTP/1.1 server on 127.0.0.1 for tests: answers each request with a
/// handler (or from a route table), one connection at a time, and counts requests
/// per path.
final class LoopbackHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let handler: @Sendable (LoopbackRequest) -> LoopbackResponse
    private let counts = Mutex<[String: Int]>([:])
    private let stopped = Atomic<Bool>(false)

    convenience init(routes: [String: (status: Int, body: String)]) throws {
        try self.init { request in
            let (status, body) = routes[request.path] ?? (404, "not found")
            return LoopbackResponse(status: status, body: body)
        }
    }

    init(handler: @escaping @Sendable (LoopbackRequest) -> LoopbackResponse) throws {
        self.handler = handler
        let fd = socket(AF_INET, streamSocket, 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        let thread = Thread { [self] in self.serve() }
        thread.start()
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    func requests(to path: String) -> Int { counts.withLock { $0[path] ?? 0 } }

    /// Stops accepting connections; the serving thread ends. Calling it again does
    /// nothing.
    ///
    /// The listening socket is only shut down here, which wakes the thread's
    /// `accept`; the thread closes it. Closing it here could close it twice, or
    /// leave the thread calling `accept` on a descriptor number that another
    /// socket of the process (a SwiftNIO channel) has reused meanwhile.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if !stopped.load(ordering: .acquiring), errno == EINTR || errno == ECONNABORTED { continue }
                close(listener)
                return
            }
            var request = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4_096)
            var headerEnd = request.endOfHead()
            while headerEnd == nil {
                let count = read(connection, &buffer, buffer.count)
                if count <= 0 { break }
                request += buffer.prefix(count)
                headerEnd = request.endOfHead()
            }
            let head = request.prefix(headerEnd ?? request.count)
            let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n")
            let requestLine = (lines.first ?? "").split(separator: " ")
            let method = requestLine.first.map(String.init) ?? "GET"
            let path = requestLine.dropFirst().first.map(String.init) ?? "/"
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            var requestBody = Array(request.dropFirst(headerEnd ?? request.count))
            let expected = headers["content-length"].flatMap { Int($0) } ?? 0
            while requestBody.count < expected {
                let count = read(connection, &buffer, min(buffer.count, expected - requestBody.count))
                if count <= 0 { break }
                requestBody += buffer.prefix(count)
            }
            counts.withLock { $0[path, default: 0] += 1 }
            let answer = handler(
                LoopbackRequest(
                    method: method, path: path, headers: headers, body: String(decoding: requestBody, as: UTF8.self)))
            let fields =
                answer.headers.map { "\($0.key): \($0.value)\r\n" }.joined()
                + answer.lines.map { "\($0.name): \($0.value)\r\n" }.joined()
            let body = answer.status == 304 || method == "HEAD" ? "" : answer.body
            // A HEAD's Content-Length is the length a GET's body would have.
            let length = method == "HEAD" ? answer.body.utf8.count : body.utf8.count
            let response =
                "HTTP/1.1 \(answer.status) X\r\n\(fields)Content-Length: \(length)\r\n"
                + "Connection: close\r\n\r\n\(body)"
            _ = response.utf8CString.withUnsafeBufferPointer { write(connection, $0.baseAddress, $0.count - 1) }
            close(connection)
        }
    }
}

extension Array where Element == UInt8 {
    /// The index just past the first empty line (`\r\n\r\n`), or `nil`.
    fileprivate func endOfHead() -> Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4)
        where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}
