import NIOCore

/// The channel handler half of ``_RESPParser``: turns the bytes of a connection into
/// replies, one `channelRead` per complete reply.
struct _RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = _RESPValue

    private var parser: _RESPParser

    init(limits: _RESPParser.Limits) {
        parser = _RESPParser(limits: limits)
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try parser.next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        // A reply cut off by the end of the connection is dropped: the command handler
        // fails its command with `connectionClosed`.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}
