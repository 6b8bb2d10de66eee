#if Redis
import NIOCore

/// What a ``_RedisConnection`` hands its ``_RedisCommandHandler``: one or more encoded
/// commands, written together, and where their replies go.
struct _RedisRequest: Sendable {
    /// The RESP encoding of `count` commands, back to back.
    var encoded: ByteBuffer
    /// The first command's name, for error messages (`GET`, `SET`, …).
    var name: String
    /// How many commands `encoded` holds, so how many replies `reply` waits for.
    var count: Int
    /// Resumed with the reply (or the replies, in order), or with a ``RedisError``;
    /// `nil` when the commands have no reply of their own (`SUBSCRIBE` and
    /// `UNSUBSCRIBE` on a subscriber connection, whose confirmations arrive as messages).
    var reply: _RedisReply?
    /// How long the replies may take before the request fails with
    /// ``RedisError/Code/timeout`` and the connection closes; `nil` for no limit.
    var timeout: TimeAmount?
    /// Completed once the bytes are written; only for requests without a reply.
    var written: EventLoopPromise<Void>?
}

/// The waiting caller of a ``_RedisRequest``.
enum _RedisReply: Sendable {
    /// A request of one command.
    case one(UnsafeContinuation<_RESPValue, any Error>)
    /// A request of several commands: resumed once, with every reply.
    case many(UnsafeContinuation<[_RESPValue], any Error>)

    /// Resumes the caller with `error`.
    func fail(_ error: RedisError) {
        switch self {
        case .one(let continuation): continuation.resume(throwing: error)
        case .many(let continuation): continuation.resume(throwing: error)
        }
    }
}
#endif
