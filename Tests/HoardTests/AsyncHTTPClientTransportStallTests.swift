import Foundation
import Synchronization
import Testing

@testable import Hoard

#if canImport(Glibc)
import Glibc
private let hostileStreamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin
private let hostileStreamSocket = SOCK_STREAM
#endif

#if AsyncHTTPClient
import HoardAsyncHTTPClient

/// An origin on 127.0.0.1 that answers the first request on its first connection with
/// `response` (raw bytes) and then keeps the connection open, sending nothing more,
/// until ``stop()``.
final class StallingOrigin: Sendable {
    let port: UInt16
    private let listener: Int32
    private let connection = Mutex<Int32>(-1)
    private let stopped = Atomic<Bool>(false)

    init(response: String) throws {
        let fd = socket(AF_INET, hostileStreamSocket, 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        let bytes = Array(response.utf8)
        let thread = Thread { [self] in
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            connection.withLock { $0 = client }
            // Read the request head.
            var received = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                let n = read(client, &chunk, chunk.count)
                if n <= 0 { return }
                received += chunk[0..<n]
                if let range = String(decoding: received, as: UTF8.self).range(of: "\r\n\r\n") {
                    _ = range
                    break
                }
            }
            _ = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            // Then nothing: the connection stays open until stop().
        }
        thread.start()
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Closes the listener and the connection (if any).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        connection.withLock {
            if $0 >= 0 {
                shutdown($0, Int32(SHUT_RDWR))
                close($0)
            }
        }
    }
}

/// An origin that stalls: the transport's timeout covers the whole exchange, body
/// included. (The suite's time limit is what fails a transport that would wait for
/// ever; nothing here measures time.)
@Suite("AsyncHTTPClientTransport against a stalling origin", .timeLimit(.minutes(2)))
struct AsyncHTTPClientTransportStallTests {
    @Test("An origin that sends the head and then stalls the body is cut off by the transport's timeout")
    func stalledBodyTimesOut() async throws {
        // The head promises 1000 bytes; 7 come, then nothing, the connection open.
        let origin = try StallingOrigin(
            response: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nCache-Control: max-age=60\r\n\r\npartial")
        defer { origin.stop() }
        let transport = AsyncHTTPClientTransport(timeout: .milliseconds(300))
        await #expect {
            _ = try await transport.send(HTTPCacheRequest(url: origin.url("/stall")))
        } throws: { error in
            "\(error)".contains("deadlineExceeded")
        }
    }

    @Test("An origin that never sends the head is cut off by the same timeout")
    func stalledHeadTimesOut() async throws {
        let origin = try StallingOrigin(response: "")
        defer { origin.stop() }
        let transport = AsyncHTTPClientTransport(timeout: .milliseconds(300))
        await #expect(throws: (any Error).self) {
            _ = try await transport.send(HTTPCacheRequest(url: origin.url("/stall-head")))
        }
    }
}
#endif
