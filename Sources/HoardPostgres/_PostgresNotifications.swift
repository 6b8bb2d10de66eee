#if Postgres
import Hoard
import Synchronization

/// The streams returned by ``PostgresStore/invalidations(in:)``, by namespace, and the
/// payloads of the `NOTIFY` messages that feed them.
///
/// All stores of one table share one channel; a payload says who sent it and what
/// changed:
/// - `<instance> k <n>:<namespace><key>`: one key changed; `<n>` is the byte length of
///   the escaped namespace that follows.
/// - `<instance> a <n>:<namespace>`: the namespace was cleared, or one of its keys
///   changed whose payload would not fit (see ``maximumPayloadBytes``).
/// - `<instance> A`: everything may have changed (a namespace too long to name).
///
/// Namespace and key are escaped so the payload is valid text: `\` becomes `\\` and
/// NUL becomes `\0` (PostgreSQL text cannot hold NUL). Messages this instance sent are
/// dropped. State is behind a `Mutex`; streams are fed after the lock is released.
final class _PostgresNotifications: Sendable {
    /// PostgreSQL refuses a `NOTIFY` payload of 8000 bytes or more.
    static let maximumPayloadBytes = 7_999

    private struct State {
        var streams: [String: [UInt64: AsyncStream<RemoteInvalidation>.Continuation]] = [:]
        var nextID: UInt64 = 0
        var isFinished = false
        var isListening = false
    }

    /// This instance's id, as it appears in the payloads it sends.
    let instanceID: String
    private let state = Mutex(State())

    init(instanceID: String) {
        self.instanceID = instanceID
    }

    // MARK: Payloads

    /// The payload announcing that `key` changed in `namespace`: the key itself when
    /// it fits, otherwise the whole namespace (or everything).
    func payload(key: String, in namespace: String) -> String {
        let escapedNamespace = Self.escape(namespace)
        let escapedKey = Self.escape(key)
        let head = "\(instanceID) k \(escapedNamespace.utf8.count):"
        if head.utf8.count + escapedNamespace.utf8.count + escapedKey.utf8.count <= Self.maximumPayloadBytes {
            return head + escapedNamespace + escapedKey
        }
        return payloadAll(in: namespace)
    }

    /// The payload announcing that `namespace` was cleared (or, when even its name does
    /// not fit, that everything may have changed).
    func payloadAll(in namespace: String) -> String {
        let escapedNamespace = Self.escape(namespace)
        let payload = "\(instanceID) a \(escapedNamespace.utf8.count):\(escapedNamespace)"
        return payload.utf8.count <= Self.maximumPayloadBytes ? payload : "\(instanceID) A"
    }

    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0 || $0 == UInt8(ascii: "\\") }) else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for character in text.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\0": escaped += "\\0"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func unescape<S: Collection<UInt8>>(_ bytes: S) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                continue
            }
            switch iterator.next() {
            case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "0"): output.append(0)
            default: return nil
            }
        }
        return String(validating: output, as: UTF8.self)
    }

    /// What a payload announces, for which namespace (`nil`: every namespace); `nil`
    /// for this instance's own payloads and for payloads not in the format.
    func decode(_ payload: String) -> (namespace: String?, invalidation: RemoteInvalidation)? {
        let bytes = Array(payload.utf8)
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")), space + 2 <= bytes.count else { return nil }
        guard !bytes[..<space].elementsEqual(instanceID.utf8) else { return nil }
        let kind = bytes[space + 1]
        if kind == UInt8(ascii: "A") { return bytes.count == space + 2 ? (nil, .all) : nil }
        guard kind == UInt8(ascii: "k") || kind == UInt8(ascii: "a"), space + 2 < bytes.count,
            bytes[space + 2] == UInt8(ascii: " ")
        else { return nil }
        var index = space + 3
        var length = 0
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]),
            index - digitsStart < 6
        {
            length = length * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        guard index > digitsStart, index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
        let namespaceEnd = index + 1 + length
        guard namespaceEnd <= bytes.count, let namespace = Self.unescape(bytes[(index + 1)..<namespaceEnd]) else {
            return nil
        }
        if kind == UInt8(ascii: "a") { return namespaceEnd == bytes.count ? (namespace, .all) : nil }
        guard let key = Self.unescape(bytes[namespaceEnd...]) else { return nil }
        return (namespace, .key(key))
    }

    // MARK: Streams

    /// Registers a stream for `namespace`; returns its id, or `nil` when the store has
    /// shut down (the stream is finished at once then).
    func add(_ continuation: AsyncStream<RemoteInvalidation>.Continuation, namespace: String) -> UInt64? {
        let id = state.withLock { state -> UInt64? in
            guard !state.isFinished else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.streams[namespace, default: [:]][id] = continuation
            return id
        }
        if id == nil { continuation.finish() }
        return id
    }

    /// Forgets a stream.
    func remove(id: UInt64, namespace: String) {
        state.withLock { state in
            state.streams[namespace]?[id] = nil
            if state.streams[namespace]?.isEmpty == true { state.streams[namespace] = nil }
        }
    }

    /// Whether some stream is waiting for invalidations.
    var isWanted: Bool { state.withLock { !$0.streams.isEmpty } }

    /// Whether the channel is being listened to right now.
    var isListening: Bool { state.withLock { $0.isListening } }

    /// The server confirmed `LISTEN`. After a lost connection (`resumed`), every
    /// stream receives `RemoteInvalidation.missed`: changes may have been missed.
    func listening(resumed: Bool) {
        let streams = state.withLock { state in
            state.isListening = true
            return resumed ? state.streams.values.flatMap(\.values) : []
        }
        for stream in streams { stream.yield(.missed) }
    }

    /// The listening connection was lost or given up.
    func stoppedListening() {
        state.withLock { $0.isListening = false }
    }

    /// Delivers one notification's payload to the streams it concerns.
    func handle(_ payload: String) {
        guard let (namespace, invalidation) = decode(payload) else { return }
        let streams = state.withLock { state in
            if let namespace { return Array((state.streams[namespace] ?? [:]).values) }
            return state.streams.values.flatMap(\.values)
        }
        for stream in streams { stream.yield(invalidation) }
    }

    /// Finishes every stream; later ``add(_:namespace:)`` calls finish theirs at once.
    func finishAll() {
        let streams = state.withLock { state in
            state.isFinished = true
            state.isListening = false
            defer { state.streams.removeAll() }
            return state.streams.values.flatMap(\.values)
        }
        for stream in streams { stream.finish() }
    }
}
#endif
