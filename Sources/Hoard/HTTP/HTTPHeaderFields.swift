import Foundation

/// The header fields of an HTTP message in the order they came, repeated names
/// kept as separate fields (RFC 9110, section 5.3): two `Set-Cookie` lines stay two,
/// and `Age: 7200` followed by `Age: 0` is not one field `7200, 0`.
///
/// Names compare without regard to case and keep the case they were given. A
/// dictionary literal builds one (`["Accept": "text/html"]`), in the literal's
/// order. Lookups scan the fields: O(n) in their number, which is small.
///
/// A value keeps the bytes it came with, obs-text included (bytes 0x80–0xFF that
/// are not UTF-8, RFC 9110, section 5.5): see ``Field``.
public struct HTTPHeaderFields: Sendable, Hashable, Codable, ExpressibleByDictionaryLiteral {
    /// The fields, in order.
    public var fields: [Field]

    /// No field.
    public init() { fields = [] }

    /// The fields `fields`, in order.
    public init(_ fields: [Field]) { self.fields = fields }

    /// The fields of `pairs`, in order.
    public init<S: Sequence>(_ pairs: S) where S.Element == (String, String) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// The fields of the literal, in its order.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// Whether there is no field.
    public var isEmpty: Bool { fields.isEmpty }

    /// The values of every field named `name` (any case), in order, or `nil` when
    /// there is none; set to replace them all by one field at the place of the
    /// first (appended when there was none), or `nil` to remove them.
    ///
    /// Reading joins several values with ", " (RFC 9110, section 5.3), which is
    /// what a list-valued field means; read ``values(for:)`` for a field such as
    /// `Set-Cookie` that must not be joined, or to see the lines apart.
    public subscript(name: String) -> String? {
        get {
            let values = values(for: name)
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
        set {
            let first = fields.firstIndex { $0.name.lowercased() == name.lowercased() }
            removeAll(named: name)
            guard let newValue else { return }
            fields.insert(Field(name: name, value: newValue), at: Swift.min(first ?? fields.count, fields.count))
        }
    }

    /// The values of the fields named `name` (any case), one per field, in order.
    public func values(for name: String) -> [String] {
        let name = name.lowercased()
        return fields.filter { $0.name.lowercased() == name }.map(\.value)
    }

    /// Whether a field is named `name` (any case).
    public func contains(_ name: String) -> Bool {
        let name = name.lowercased()
        return fields.contains { $0.name.lowercased() == name }
    }

    /// Adds a field after the others.
    public mutating func append(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field named `name` (any case).
    public mutating func removeAll(named name: String) {
        let name = name.lowercased()
        fields.removeAll { $0.name.lowercased() == name }
    }

    /// The members of the comma-separated list the fields named `name` carry, in
    /// order, trimmed, empty members dropped (commas inside quoted strings split
    /// too: use it for token lists such as `Connection` and `Vary`).
    func listMembers(_ name: String) -> [String] {
        values(for: name).flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
    }

    /// The values of the fields named `name` (any case), one per field, in order,
    /// each as its bytes' text (``Field/byteText``): two are equal exactly when
    /// their bytes are. What validators are compared by.
    func byteTexts(for name: String) -> [String] {
        let name = name.lowercased()
        return fields.filter { $0.name.lowercased() == name }.map(\.byteText)
    }

    /// The members of the comma-separated lists the fields named `name` carry, as
    /// ``listMembers(_:)`` splits them, each as its bytes' text (``Field/byteText``)
    /// with spaces and tabs around it removed.
    func byteListMembers(_ name: String) -> [String] {
        byteTexts(for: name).flatMap { $0.split(separator: ",") }.map(Self.trimmingWhitespace).filter { !$0.isEmpty }
    }

    /// One field named `newName` whose value is those of the fields named `name`
    /// joined with ", ", byte for byte (an ISO-8859-1 value stays those bytes), or
    /// `nil` when there is none.
    func joinedField(named name: String, as newName: String) -> Field? {
        let name = name.lowercased()
        let values = fields.filter { $0.name.lowercased() == name }.map(\.valueBytes)
        guard !values.isEmpty else { return nil }
        return Field(name: newName, valueBytes: Array(values.joined(separator: Array(", ".utf8))))
    }

    /// Whether every field named `name` (any case) is UTF-8 text (true when there
    /// is none).
    func isUTF8(named name: String) -> Bool {
        let name = name.lowercased()
        return fields.allSatisfy { $0.name.lowercased() != name || $0.valueEncoding == .utf8 }
    }

    /// `text` without the spaces and horizontal tabs at its ends (RFC 9110's OWS),
    /// and nothing else: U+00A0 in an ISO-8859-1 value is the byte 0xA0, not
    /// whitespace to remove.
    static func trimmingWhitespace(_ text: some StringProtocol) -> String {
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = text.firstIndex(where: { !isWhitespace($0) }),
            let end = text.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return String(text[start...end])
    }
}

extension HTTPHeaderFields: Sequence {
    /// The fields, in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}

extension HTTPHeaderFields {
    /// The fields of `dictionary`, ordered by name (a dictionary has no order).
    public init(_ dictionary: [String: String]) {
        fields = dictionary.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value) }
    }
}
