#if Redis
import NIOCore

/// How a ``RedisStore`` names its keys and channels on the server.
///
/// - Entry key: `<prefix>:<n>:<namespace>:<key>`, where `<n>` is the decimal length
///   in UTF-8 bytes of `<namespace>`; with ``namespaceTagged``,
///   `<prefix>:<n>:{<namespace>}:<key>`, so that on a Redis Cluster every key of a
///   namespace hashes to one slot (the namespace is the hash tag; a namespace that
///   holds `}` is tagged up to it, still one slot per namespace, possibly shared).
///   A prefix that holds `{` makes its own tag and puts every key in one slot.
/// - Invalidation channel: `<prefix>:invalidate:<n>:<namespace>`.
///
/// Namespaces and keys may contain `:` and any other character. Because the
/// namespace is length-prefixed, the mapping is injective for a given prefix: reading
/// the digits up to the first `:` after the prefix gives the namespace's length, the
/// namespace follows, and everything after the next `:` is the key
/// (``parse(_:)`` does exactly that). Two different (namespace, key) pairs never share
/// a Redis key, and ``namespacePattern(_:)`` matches the keys of one namespace and
/// no other.
///
/// Different stores sharing one database must use prefixes of which neither is the
/// other followed by `:` (`app` and `app:x` could collide; `app` and `app2` cannot).
struct _RedisKeyspace: Sendable, Hashable {
    /// The configured prefix, as given.
    let prefix: String
    /// Whether the namespace is written in braces, as a Redis Cluster hash tag.
    var namespaceTagged = false

    /// The Redis key of `key` in `namespace`.
    func key(_ key: String, in namespace: String) -> ByteBuffer {
        var buffer = namespaceStart(namespace)
        buffer.writeString(key)
        return buffer
    }

    /// Appends the Redis key of `key` in `namespace` to a command, as one argument,
    /// with no intermediate buffer: the same bytes as ``key(_:in:)``.
    func writeKey(_ key: String, in namespace: String, to writer: inout _RESPCommandWriter) {
        let namespaceLength = String(namespace.utf8.count)
        let tagged = namespaceTagged
        let length =
            prefix.utf8.count + namespaceLength.utf8.count + namespace.utf8.count + key.utf8.count + 3
            + (tagged ? 2 : 0)
        writer.bulk(length: length) { bytes in
            bytes.write(prefix)
            bytes.write(UInt8(ascii: ":"))
            bytes.write(namespaceLength)
            bytes.write(UInt8(ascii: ":"))
            if tagged { bytes.write(UInt8(ascii: "{")) }
            bytes.write(namespace)
            if tagged { bytes.write(UInt8(ascii: "}")) }
            bytes.write(UInt8(ascii: ":"))
            bytes.write(key)
        }
    }

    /// A `SCAN … MATCH` pattern that matches every key of `namespace` and no other key:
    /// the namespace's key start with glob characters escaped, then `*`.
    func namespacePattern(_ namespace: String) -> ByteBuffer {
        let start = namespaceStart(namespace)
        var pattern = ByteBuffer()
        pattern.reserveCapacity(start.readableBytes * 2 + 1)
        for byte in start.readableBytesView {
            switch byte {
            case UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "\\"):
                pattern.writeInteger(UInt8(ascii: "\\"))
            default:
                break
            }
            pattern.writeInteger(byte)
        }
        pattern.writeInteger(UInt8(ascii: "*"))
        return pattern
    }

    /// Appends the channel of `namespace` to a command, as one argument: the same
    /// bytes as ``channel(for:)``, without a buffer of its own.
    func writeChannel(for namespace: String, to writer: inout _RESPCommandWriter) {
        let namespaceLength = String(namespace.utf8.count)
        let length = prefix.utf8.count + 13 + namespaceLength.utf8.count + namespace.utf8.count
        writer.bulk(length: length) { bytes in
            bytes.write(prefix)
            bytes.write(static: ":invalidate:")
            bytes.write(namespaceLength)
            bytes.write(UInt8(ascii: ":"))
            bytes.write(namespace)
        }
    }

    /// The pub/sub channel on which changes to `namespace` are announced.
    func channel(for namespace: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeString(prefix)
        buffer.writeString(":invalidate:")
        buffer.writeString(String(namespace.utf8.count))
        buffer.writeInteger(UInt8(ascii: ":"))
        buffer.writeString(namespace)
        return buffer
    }

    /// The namespace and key a Redis key of this keyspace stands for, or `nil` when
    /// it is not one: the inverse of ``key(_:in:)``.
    func parse(_ redisKey: ByteBuffer) -> (namespace: String, key: String)? {
        let bytes = Array(redisKey.readableBytesView)
        let prefixBytes = Array(prefix.utf8)
        guard bytes.count > prefixBytes.count, bytes.starts(with: prefixBytes), bytes[prefixBytes.count] == 0x3A
        else { return nil }
        var index = prefixBytes.count + 1
        var length = 0
        let digitsStart = index
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39, index - digitsStart < 10 {
            length = length * 10 + Int(bytes[index] - 0x30)
            index += 1
        }
        guard index > digitsStart, index < bytes.count, bytes[index] == 0x3A else { return nil }
        var namespaceStart = index + 1
        if namespaceTagged {
            guard namespaceStart < bytes.count, bytes[namespaceStart] == UInt8(ascii: "{") else { return nil }
            namespaceStart += 1
        }
        let namespaceEnd = namespaceStart + length
        var keyStart = namespaceEnd + 1
        if namespaceTagged {
            guard namespaceEnd < bytes.count, bytes[namespaceEnd] == UInt8(ascii: "}") else { return nil }
            keyStart += 1
        }
        guard keyStart - 1 < bytes.count, bytes[keyStart - 1] == 0x3A,
            let namespace = String(validating: bytes[namespaceStart..<namespaceEnd], as: UTF8.self),
            let key = String(validating: bytes[keyStart...], as: UTF8.self)
        else { return nil }
        return (namespace, key)
    }

    private func namespaceStart(_ namespace: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(prefix.utf8.count + namespace.utf8.count + 32)
        buffer.writeString(prefix)
        buffer.writeInteger(UInt8(ascii: ":"))
        buffer.writeString(String(namespace.utf8.count))
        buffer.writeInteger(UInt8(ascii: ":"))
        if namespaceTagged { buffer.writeInteger(UInt8(ascii: "{")) }
        buffer.writeString(namespace)
        if namespaceTagged { buffer.writeInteger(UInt8(ascii: "}")) }
        buffer.writeInteger(UInt8(ascii: ":"))
        return buffer
    }
}
#endif
