#if HTTPTypes
import Foundation
import Hoard
import HTTPTypes

extension HTTPHeaderFields {
    /// The fields of `fields`, in their order, repeated names kept as separate
    /// fields, each name in the case it was given (`rawName`), each value with the
    /// bytes swift-http-types keeps for it: a value that is not UTF-8 (obs-text,
    /// RFC 9110, section 5.5, such as a Latin-1 `é`, the byte 0xE9) becomes an
    /// ISO-8859-1 field (`Field/ValueEncoding/isoLatin1`), never text with U+FFFD
    /// in place of its bytes, so that `HTTPFields.init(_:)` gives those bytes
    /// back. Never fails: every field of an `HTTPFields` is a valid
    /// `HTTPHeaderFields.Field`. O(n) in the fields' bytes.
    public init(_ fields: HTTPFields) {
        self.init(
            fields.map { field in
                field.withUnsafeBytesOfValue { Field(name: field.name.rawName, valueBytes: $0) }
            })
    }
}

extension HTTPFields {
    /// The fields of `fields`, in their order, repeated names kept as separate
    /// fields, each name in the case it was given, each value with its bytes
    /// (`HTTPHeaderFields.Field.valueBytes`): UTF-8 text as UTF-8, an ISO-8859-1
    /// value (obs-text) as the bytes it was received with. O(n).
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
            switch field.valueEncoding {
            case .utf8:
                guard HTTPField.isValidValue(field.value) else { throw Self.invalidValue(field) }
                append(HTTPField(name: name, value: field.value))
            case .isoLatin1:
                let bytes = field.valueBytes
                guard HTTPField.isValidValue(bytes) else { throw Self.invalidValue(field) }
                append(HTTPField(name: name, value: bytes))
            }
        }
    }

    private static func invalidValue(_ field: HTTPHeaderFields.Field) -> HoardError {
        HoardError(.invalidHTTPMessage, "the value of the field \(field.name) is not a valid HTTP field value")
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
