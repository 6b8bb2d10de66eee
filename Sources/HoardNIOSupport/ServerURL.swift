#if Redis || Postgres
import Foundation

/// The parts of a server URL (`redis://`, `postgres://`) the stores' configurations
/// read, parsed by one rule: the scheme among those allowed (any case), a host
/// (an IPv6 literal without its brackets), an optional port, user and password
/// percent-decoded, the path after its leading slashes, the query items.
package struct ServerURL: Sendable {
    /// Why a string is not a server URL; each store words it in its own error.
    package enum Problem: Error, Sendable {
        /// Not a URL at all.
        case notAURL
        /// A URL of a scheme not in the allowed set.
        case unsupportedScheme
        /// A URL with no host.
        case noHost
    }

    /// The scheme, lowercased.
    package let scheme: String
    package let host: String
    package let port: Int?
    /// The user, percent-decoded; `nil` when absent or empty.
    package let username: String?
    /// The password, percent-decoded; `nil` when absent.
    package let password: String?
    /// The path after its leading slashes, still percent-encoded (empty when none).
    package let path: String
    package let queryItems: [URLQueryItem]

    /// Parses `url`, whose scheme must be one of `schemes` (lowercase).
    package init(_ url: String, schemes: Set<String>) throws(Problem) {
        guard let components = URLComponents(string: url) else { throw .notAURL }
        guard let scheme = components.scheme?.lowercased(), schemes.contains(scheme) else {
            throw .unsupportedScheme
        }
        guard let host = components.host, !host.isEmpty else { throw .noHost }
        self.scheme = scheme
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = components.port
        if let user = components.percentEncodedUser, !user.isEmpty {
            username = user.removingPercentEncoding ?? user
        } else {
            username = nil
        }
        password = components.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 }
        path = String(components.path.drop { $0 == "/" })
        queryItems = components.queryItems ?? []
    }
}
#endif
