import Foundation

extension HTTPHeaderFields {
    /// One header field: a name and its value.
    ///
    /// A value is text (``value``) and, losslessly, the bytes the message carries
    /// (``valueBytes``). RFC 9110, section 5.5 allows a value bytes 0x80–0xFF that
    /// are not UTF-8 (obs-text, such as a Latin-1 `é`, the byte 0xE9, in a
    /// `Content-Disposition` file name). A field made from such bytes
    /// (``init(name:valueBytes:)``) keeps them: its ``valueEncoding`` is
    /// ``ValueEncoding/isoLatin1`` and each character of its value is one byte, so
    /// that the field goes back out, is stored and is served with the bytes it came
    /// with, never with U+FFFD in their place.
    public struct Field: Sendable, Hashable {
        /// How the characters of a field's ``value`` are the bytes of the message.
        public enum ValueEncoding: Sendable, Hashable {
            /// UTF-8: a value made from text, and a value received as bytes that are
            /// valid UTF-8 (ASCII among them): every value but obs-text.
            case utf8
            /// ISO-8859-1: each character of the value, U+0000 to U+00FF, is the byte
            /// of that number. A value received as bytes that are not valid UTF-8.
            case isoLatin1
        }

        /// The name, in the case it was given.
        public var name: String

        /// The value, as received (leading and trailing whitespace removed by the
        /// transport), as text: decoded from UTF-8, or for a value whose bytes are
        /// not UTF-8, from ISO-8859-1 (see ``valueEncoding``).
        ///
        /// Setting it makes the field UTF-8 text: ``valueEncoding`` becomes
        /// ``ValueEncoding/utf8`` and ``valueBytes`` the UTF-8 of the new value.
        public var value: String {
            get { text }
            set {
                text = newValue
                valueEncoding = .utf8
            }
        }

        /// How ``value`` maps to ``valueBytes``: ``ValueEncoding/utf8`` unless the
        /// field was made from bytes that are not valid UTF-8.
        public private(set) var valueEncoding: ValueEncoding

        /// The value's characters; each at most U+00FF when ``valueEncoding`` is
        /// ``ValueEncoding/isoLatin1``.
        private var text: String

        /// A field whose value is `value`, as UTF-8.
        public init(name: String, value: String) {
            self.name = name
            text = value
            valueEncoding = .utf8
        }

        /// A field whose value is the bytes `valueBytes`, kept exactly: decoded as
        /// UTF-8 when they are valid UTF-8, else as ISO-8859-1 (one character per
        /// byte, ``ValueEncoding/isoLatin1``). ``valueBytes`` gives them back
        /// unchanged either way.
        public init(name: String, valueBytes: some Collection<UInt8>) {
            self.name = name
            if let text = String(validating: valueBytes, as: UTF8.self) {
                self.text = text
                valueEncoding = .utf8
            } else {
                text = Self.isoLatin1Text(valueBytes)
                valueEncoding = .isoLatin1
            }
        }

        /// The bytes of the value, as the message carries them: the UTF-8 of
        /// ``value``, or for ``ValueEncoding/isoLatin1``, one byte per character.
        /// For a field made from bytes, exactly those bytes.
        public var valueBytes: [UInt8] {
            switch valueEncoding {
            case .utf8: Array(text.utf8)
            case .isoLatin1: text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
            }
        }

        /// The value's bytes as text, one character per byte: two values give the
        /// same text exactly when their bytes are the same (not so for ``value``: a
        /// UTF-8 `é` and an ISO-8859-1 `é` are one character but different bytes,
        /// and Swift compares text by canonical equivalence). ``value`` itself for
        /// an ASCII value. What validators are compared by.
        var byteText: String {
            switch valueEncoding {
            case .utf8: text.utf8.allSatisfy { $0 < 0x80 } ? text : Self.isoLatin1Text(text.utf8)
            case .isoLatin1: text
            }
        }

        /// `bytes` decoded as ISO-8859-1: the character U+00XX for the byte XX.
        static func isoLatin1Text(_ bytes: some Sequence<UInt8>) -> String {
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
            return String(scalars)
        }
    }
}

extension HTTPHeaderFields.Field: Codable {
    private enum CodingKeys: String, CodingKey {
        case name, value, isoLatin1Value
    }

    /// A UTF-8 field as `{"name": …, "value": …}`, what every field was before
    /// ISO-8859-1 values: stored responses without obs-text are unchanged. An
    /// ISO-8859-1 field as `{"name": …, "isoLatin1Value": …}`, with no `value`: a
    /// version of Hoard that knows only UTF-8 values fails to decode it (a stored
    /// response it takes for a miss) rather than serve the value altered.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        switch valueEncoding {
        case .utf8: try container.encode(text, forKey: .value)
        case .isoLatin1: try container.encode(text, forKey: .isoLatin1Value)
        }
    }

    /// Decodes what ``encode(to:)`` wrote.
    ///
    /// - Throws: `DecodingError` for a field with neither `value` nor
    ///   `isoLatin1Value`, or an `isoLatin1Value` with a character beyond U+00FF.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        if let latin1 = try container.decodeIfPresent(String.self, forKey: .isoLatin1Value) {
            guard latin1.unicodeScalars.allSatisfy({ $0.value <= 0xFF }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .isoLatin1Value, in: container,
                    debugDescription: "an ISO-8859-1 field value has a character beyond U+00FF")
            }
            text = latin1
            valueEncoding = .isoLatin1
        } else {
            text = try container.decode(String.self, forKey: .value)
            valueEncoding = .utf8
        }
    }
}
