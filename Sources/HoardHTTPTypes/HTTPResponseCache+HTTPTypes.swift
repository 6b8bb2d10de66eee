#if HTTPTypes
import Foundation
import Hoard
import HTTPTypes

extension HTTPResponseCache {
    /// The response to `request` with the body `body`, as
    /// `response(to:)` answers an `HTTPCacheRequest`: from storage when
    /// HTTP allows (with its current `Age`, a `304` for the request's own matching
    /// validators, a `206` for a byte range), else from the origin, stored when
    /// HTTP allows; unsafe methods invalidate.
    ///
    /// Converting costs a copy of the header fields each way, O(n) in their number;
    /// the body is not copied.
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` when `request` has no
    ///   absolute URL (see `HTTPCacheRequest.init(_:body:)`), or the response
    ///   cannot be expressed as an `HTTPResponse`; and what `response(to:)` throws.
    public func response(to request: HTTPRequest, body: Data = Data()) async throws -> (
        response: HTTPResponse, body: Data
    ) {
        let answer = try await response(to: HTTPCacheRequest(request, body: body))
        return (try HTTPResponse(answer), answer.body)
    }
}
#endif
