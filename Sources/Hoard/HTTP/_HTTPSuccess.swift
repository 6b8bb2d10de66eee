import Foundation

/// What every API that returns only a body (`Cache.http()`, `HTTPCache.shared`,
/// ``HTTPResponseCache/data(from:headers:)``) does with the status: 200–299 is the
/// body, anything else is an error.
enum _HTTPSuccess {
    /// Throws ``HoardError/Code/httpFailed``, carrying the URL as its key, when
    /// `statusCode` is not 2xx.
    static func check(_ statusCode: Int, for url: URL) throws(HoardError) {
        guard !(200..<300).contains(statusCode) else { return }
        throw HoardError(
            .httpFailed, "the server answered HTTP \(statusCode) for \(url.absoluteString)", key: url.absoluteString)
    }
}
