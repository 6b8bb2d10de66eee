#if HTTPTypes
import Foundation
import Hoard
import HTTPTypes

extension HTTPHeaderFields {
    /// The fields of `fields`, in their order, repeated names kept as separate
    /// fields, each name in the case it was given (`rawName`). Never fails: every
    /// field of an `HTTPFields` is a valid `HTTPHeaderFields.Field`. O(n).
    public init(_ fields: HTTPFields) {
        self.init(fields.map { Field(name: $0.name.rawName, value: $0.value) })
    }
}

extension HTTPFields {
    /// The fields of `fields`, in their order, repeated names kept as separate
    /// fields, each name in the case it was given. O(n).
    ///
    /// - Throws: `HoardError.Code.invalidHTTPMessage` when a name is not a
    ///   valid field name (RFC 9110, section 5.1: a token) or a value holds a byte a
    ///   field value may not (a line break, NUL, other control bytes, or leading or
    ///   trailing whitespace). Nothing is dropped or altered silently.
    public init(_ fields: HTTPHeaderFields) throws(HoardError) {
        self.init()
        for field in fields {
            guard let name = HTTPField.Name(field.name) else {
                throw HoardError(.invalidHTTPMessage, "\"\(field.name)\" is not a valid HTTP field name")
            }
            guard HTTPField.isValidValue(field.value) else {
                throw HoardError(
                    .invalidHTTPMessage, "the value of the field \(field.name) is not a valid HTTP field value")
            }
            append(HTTPField(name: name, value: field.value))
        }
    }
}

extension HoardError.Code {
    /// An HTTP message cannot be converted between Hoard's HTTP types and
    /// swift-http-types: a request without a scheme, authority or path, a method,
    /// field name or field value that is not valid HTTP, or a status code outside
    /// 0–999. Nothing was sent.
    public static let invalidHTTPMessage = HoardError.Code("invalidHTTPMessage")
}
#endif
