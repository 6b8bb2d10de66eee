#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The baseline: the least a client can do to talk to Redis. One blocking POSIX
/// socket (TCP_NODELAY, as hiredis and redis-benchmark set it), commands written as
/// bytes prepared in advance, replies read into one reusable buffer and only
/// checked for shape and length, never copied out.
///
/// It is what `redis-benchmark` does too (it also prepares its command bytes once), so
/// RedisStore's figures divided by this client's measure RedisStore's own overhead:
/// key and command encoding, the pool, the event loop, futures and tasks, decoding.
final class RawRESPClient {
    private let descriptor: Int32
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0

    /// Connects to `host:port` (a name or an address, IPv4 or IPv6).
    init(host: String, port: Int) throws(BenchmarkFailure) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = socketStreamType
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw BenchmarkFailure("raw client: cannot resolve \(host):\(port) (getaddrinfo \(status))")
        }
        defer { freeaddrinfo(list) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        var connected: Int32 = -1
        while let info = candidate, connected < 0 {
            let socketDescriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if socketDescriptor >= 0 {
                if connect(socketDescriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                    connected = socketDescriptor
                } else {
                    close(socketDescriptor)
                }
            }
            candidate = info.pointee.ai_next
        }
        guard connected >= 0 else {
            throw BenchmarkFailure("raw client: cannot connect to \(host):\(port) (errno \(errno))")
        }
        var one: Int32 = 1
        setsockopt(connected, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        descriptor = connected
        buffer = [UInt8](repeating: 0, count: 1 << 20)
    }

    deinit { close(descriptor) }

    /// Writes all of `bytes` with as few `write(2)` calls as the kernel allows.
    func write(_ bytes: [UInt8]) throws(BenchmarkFailure) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                send(descriptor, raw.baseAddress! + written, raw.count - written, 0)
            }
            guard result > 0 else { throw BenchmarkFailure("raw client: write failed (errno \(errno))") }
            written += result
        }
    }

    /// Reads one reply and returns how many payload bytes its bulk strings carried
    /// (0 for a simple string or an integer; -1 for a null bulk string).
    ///
    /// - Throws: On an error reply, or bytes that are not a reply of the kinds
    ///   GET, SET, PUBLISH and MGET give.
    func readReply() throws(BenchmarkFailure) -> Int {
        let type = try byte()
        let number = try lineNumber(skipText: type == UInt8(ascii: "+") || type == UInt8(ascii: "-"))
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: ":"):
            return 0
        case UInt8(ascii: "-"):
            throw BenchmarkFailure("raw client: the server answered with an error")
        case UInt8(ascii: "$"):
            guard number >= 0 else { return -1 }
            try skip(number + 2)
            return number
        case UInt8(ascii: "*"):
            var total = 0
            for _ in 0..<max(0, number) { total += max(0, try readReply()) }
            return total
        default:
            throw BenchmarkFailure("raw client: unexpected reply type \(type)")
        }
    }

    // MARK: Reading

    private func byte() throws(BenchmarkFailure) -> UInt8 {
        if start == end { try fill() }
        start += 1
        return buffer[start - 1]
    }

    /// The decimal number on the rest of the line (or skips a text line), CRLF consumed.
    private func lineNumber(skipText: Bool) throws(BenchmarkFailure) -> Int {
        var value = 0
        var negative = false
        while true {
            let next = try byte()
            if next == UInt8(ascii: "\r") {
                guard try byte() == UInt8(ascii: "\n") else { throw BenchmarkFailure("raw client: CR without LF") }
                return negative ? -value : value
            }
            if skipText { continue }
            if next == UInt8(ascii: "-") {
                negative = true
            } else {
                value = value * 10 + Int(next &- UInt8(ascii: "0"))
            }
        }
    }

    private func skip(_ count: Int) throws(BenchmarkFailure) {
        var remaining = count
        while remaining > 0 {
            if start == end { try fill() }
            let step = min(remaining, end - start)
            start += step
            remaining -= step
        }
    }

    private func fill() throws(BenchmarkFailure) {
        start = 0
        end = 0
        let received = buffer.withUnsafeMutableBytes { raw in recv(descriptor, raw.baseAddress!, raw.count, 0) }
        guard received > 0 else { throw BenchmarkFailure("raw client: read failed (errno \(errno))") }
        end = received
    }
}

/// `SOCK_STREAM` as `addrinfo.ai_socktype` wants it: an enum case on Glibc, an
/// `Int32` elsewhere.
#if canImport(Glibc)
private let socketStreamType = Int32(SOCK_STREAM.rawValue)
#else
private let socketStreamType = SOCK_STREAM
#endif
