#if Redis
import Hoard
import NIOCore
import Synchronization

/// The streams returned by ``RedisStore/invalidations(in:)``, by channel, and the
/// decoding of the messages that arrive for them.
///
/// A message is the publishing instance's id, a space, then one of:
/// - `k` and the key's UTF-8 bytes: one key changed;
/// - `m` and, for each of several keys, its length in UTF-8 bytes in decimal, `:`
///   and its bytes: those keys changed (``RedisStore/write(_:)`` announces the
///   changes of one round trip to a namespace in one message);
/// - `a`: the whole namespace was cleared.
///
/// Messages this instance published are dropped here, as are messages not in this
/// format (from another version of Hoard, say) and messages cut off mid-key.
///
/// State is behind a `Mutex`; streams are fed after the lock is released.
final class _InvalidationHub: Sendable {
    private struct Subscription {
        var streams: [UInt64: AsyncStream<RemoteInvalidation>.Continuation] = [:]
        /// Whether the channel is being subscribed again on a new connection after a
        /// lost one: its confirmation tells the streams that changes may have been missed.
        var resubscribing = false
    }

    private struct State {
        var subscriptions: [ByteBuffer: Subscription] = [:]
        var nextID: UInt64 = 0
        var isFinished = false
        /// Tracking subscriptions whose confirmation is to report "everything may
        /// have changed" (see ``expectTrackingGap()``).
        var trackingGaps = 0
    }

    /// This instance's id, as it appears in the messages it publishes.
    let instanceID: String
    /// The store's keyspace, to turn the Redis keys of server-assisted
    /// invalidations (`CLIENT TRACKING`) into namespaces and keys; `nil` when off.
    let trackedKeyspace: _RedisKeyspace?
    private let state = Mutex(State())

    /// The channel the server sends tracking invalidations on (RESP2, `REDIRECT`).
    static let trackingChannel = ByteBuffer(string: "__redis__:invalidate")

    init(instanceID: String, trackedKeyspace: _RedisKeyspace? = nil) {
        self.instanceID = instanceID
        self.trackedKeyspace = trackedKeyspace
    }

    /// The message announcing that `key` changed.
    func message(key: String) -> ByteBuffer {
        var buffer = ByteBuffer(string: instanceID)
        buffer.writeStaticString(" k")
        buffer.writeString(key)
        return buffer
    }

    /// Appends the message announcing that `key` changed to a command, as one
    /// argument: the same bytes as ``message(key:)``.
    func writeMessage(key: String, to writer: inout _RESPCommandWriter) {
        writer.bulk(length: instanceID.utf8.count + 2 + key.utf8.count) { bytes in
            bytes.write(instanceID)
            bytes.write(static: " k")
            bytes.write(key)
        }
    }

    /// Appends the message announcing that `keys` changed to a command, as one
    /// argument: the `k` message when there is one key, the `m` message otherwise.
    func writeMessage(keys: [String], to writer: inout _RESPCommandWriter) {
        guard keys.count != 1 else { return writeMessage(key: keys[0], to: &writer) }
        var length = instanceID.utf8.count + 2
        for key in keys {
            let count = key.utf8.count
            length += _RESPCommandWriter.decimalDigitCount(count) + 1 + count
        }
        writer.bulk(length: length) { bytes in
            bytes.write(instanceID)
            bytes.write(static: " m")
            for key in keys {
                bytes.write(String(key.utf8.count))
                bytes.write(UInt8(ascii: ":"))
                bytes.write(key)
            }
        }
    }

    /// The message announcing that the whole namespace was cleared.
    func messageAll() -> ByteBuffer {
        var buffer = ByteBuffer(string: instanceID)
        buffer.writeStaticString(" a")
        return buffer
    }

    /// Registers a stream for `channel`; returns its id, or `nil` when the hub has
    /// finished (the stream is finished at once then).
    func add(_ continuation: AsyncStream<RemoteInvalidation>.Continuation, channel: ByteBuffer) -> UInt64? {
        let id = state.withLock { state -> UInt64? in
            guard !state.isFinished else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.subscriptions[channel, default: Subscription()].streams[id] = continuation
            return id
        }
        if id == nil { continuation.finish() }
        return id
    }

    /// Forgets a stream; the channel is no longer wanted once it has no stream.
    func remove(id: UInt64, channel: ByteBuffer) {
        state.withLock { state in
            state.subscriptions[channel]?.streams[id] = nil
            if state.subscriptions[channel]?.streams.isEmpty == true {
                state.subscriptions[channel] = nil
            }
        }
    }

    /// The channels some stream is waiting on.
    var wantedChannels: Set<ByteBuffer> {
        state.withLock { Set($0.subscriptions.keys) }
    }

    /// Marks a tracking subscription on a new connection: when the server confirms
    /// it, every stream receives `RemoteInvalidation.all`, since writes made before
    /// were not tracked there.
    func expectTrackingGap() {
        state.withLock { $0.trackingGaps += 1 }
    }

    /// Marks `channels` as subscribed again on a new connection; when the server
    /// confirms one, its streams receive `RemoteInvalidation.all`.
    func markResubscribing(_ channels: Set<ByteBuffer>) {
        state.withLock { state in
            for channel in channels { state.subscriptions[channel]?.resubscribing = true }
        }
    }

    /// Finishes every stream; later ``add(_:channel:)`` calls finish theirs at once.
    func finishAll() {
        let streams = state.withLock { state in
            state.isFinished = true
            defer { state.subscriptions.removeAll() }
            return state.subscriptions.values.flatMap { $0.streams.values }
        }
        for stream in streams { stream.finish() }
    }

    /// Handles a message from the subscriber connection: a RESP2 array or a RESP3
    /// push of `message`, `subscribe` or `unsubscribe`. Anything else is ignored.
    func handle(_ value: _RESPValue) {
        guard let elements = value.elements, elements.count >= 3, let channel = elements[1].bytes else { return }
        // The kind, compared without decoding it into a string (one message per change).
        let kind: PushKind
        if elements[0].isString(equalToLowercaseASCII: "message") {
            kind = .message
        } else if elements[0].isString(equalToLowercaseASCII: "subscribe") {
            kind = .subscribe
        } else {
            return
        }
        switch kind {
        case .message where channel == Self.trackingChannel:
            handleTracking(elements[2])
        case .message:
            guard let payload = elements[2].bytes, let invalidations = decode(payload) else { return }
            let streams = state.withLock { Array(($0.subscriptions[channel]?.streams ?? [:]).values) }
            for stream in streams {
                for invalidation in invalidations { stream.yield(invalidation) }
            }
        case .subscribe where channel == Self.trackingChannel:
            let streams = state.withLock { state -> [AsyncStream<RemoteInvalidation>.Continuation] in
                guard state.trackingGaps > 0 else { return [] }
                state.trackingGaps -= 1
                return state.subscriptions.values.flatMap { $0.streams.values }
            }
            for stream in streams { stream.yield(.missed) }
        case .subscribe:
            // A resubscription after a lost connection: changes may have been missed.
            let streams = state.withLock { state -> [AsyncStream<RemoteInvalidation>.Continuation] in
                guard let subscription = state.subscriptions[channel], subscription.resubscribing else { return [] }
                state.subscriptions[channel]?.resubscribing = false
                return Array(subscription.streams.values)
            }
            for stream in streams { stream.yield(.missed) }
        }
    }

    /// The kinds of message ``handle(_:)`` acts on.
    private enum PushKind {
        case message, subscribe
    }

    /// Delivers a server-assisted invalidation: the Redis keys a write by any client
    /// changed (each to the streams of its namespace; keys of other prefixes or not
    /// in Hoard's layout are ignored), or, for a null (the database was flushed),
    /// `RemoteInvalidation.all` to every stream.
    private func handleTracking(_ payload: _RESPValue) {
        guard let keyspace = trackedKeyspace else { return }
        guard let keys = payload.elements else {
            guard payload == .null || payload == .array(nil) || payload == .bulkString(nil) else { return }
            let streams = state.withLock { $0.subscriptions.values.flatMap { $0.streams.values } }
            for stream in streams { stream.yield(.all) }
            return
        }
        var byChannel: [ByteBuffer: [RemoteInvalidation]] = [:]
        for key in keys.compactMap(\.bytes) {
            guard let (namespace, key) = keyspace.parse(key) else { continue }
            byChannel[keyspace.channel(for: namespace), default: []].append(.key(key))
        }
        for (channel, invalidations) in byChannel {
            let streams = state.withLock { Array(($0.subscriptions[channel]?.streams ?? [:]).values) }
            for stream in streams {
                for invalidation in invalidations { stream.yield(invalidation) }
            }
        }
    }

    /// The invalidations a message announces, or `nil` for this instance's own
    /// messages and for messages that are not in the format.
    private func decode(_ payload: ByteBuffer) -> [RemoteInvalidation]? {
        let bytes = payload.readableBytesView
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let sender = String(decoding: bytes[bytes.startIndex..<space], as: UTF8.self)
        guard sender != instanceID, space + 1 < bytes.endIndex else { return nil }
        switch bytes[space + 1] {
        case UInt8(ascii: "a"):
            return [.all]
        case UInt8(ascii: "k"):
            guard let key = String(validating: bytes[(space + 2)...], as: UTF8.self) else { return nil }
            return [.key(key)]
        case UInt8(ascii: "m"):
            return Self.decodeKeys(bytes[(space + 2)...])
        default:
            return nil
        }
    }

    /// The keys of an `m` message's body: length-prefixed keys back to back, or `nil`
    /// when the body is empty or malformed anywhere.
    private static func decodeKeys(_ body: ByteBufferView.SubSequence) -> [RemoteInvalidation]? {
        var invalidations: [RemoteInvalidation] = []
        var index = body.startIndex
        while index < body.endIndex {
            var length = 0
            let digitsStart = index
            while index < body.endIndex, body[index] >= UInt8(ascii: "0"), body[index] <= UInt8(ascii: "9"),
                index - digitsStart < 10
            {
                length = length * 10 + Int(body[index] - UInt8(ascii: "0"))
                index += 1
            }
            guard index > digitsStart, index < body.endIndex, body[index] == UInt8(ascii: ":"),
                length <= body.endIndex - index - 1,
                let key = String(validating: body[(index + 1)..<(index + 1 + length)], as: UTF8.self)
            else { return nil }
            invalidations.append(.key(key))
            index += 1 + length
        }
        return invalidations.isEmpty ? nil : invalidations
    }
}
#endif
