import NIOCore

/// What a ``_RedisConnection`` writes into its channel: a command and where its reply
/// goes.
struct _RedisRequest: Sendable {
    /// The command to send.
    var command: _RedisCommand
    /// Completed with the reply, or failed with a ``RedisError``; `nil` when the
    /// command has no reply of its own (`SUBSCRIBE` and `UNSUBSCRIBE` on a subscriber
    /// connection, whose confirmations arrive as messages).
    var reply: EventLoopPromise<_RESPValue>?
    /// How long the reply may take before the command fails with
    /// ``RedisError/Code/timeout`` and the connection closes; `nil` for no limit.
    var timeout: TimeAmount?
}
