/// The rule for names that become part of a file or suite name Hoard creates
/// (settings namespaces, log names, store names given to ``LocalStorage``): one
/// safe path component, whatever the platform.
enum _LocalNames {
    /// The longest name accepted, in bytes.
    static let maximumLength = 128

    /// Checks `name`: 1–128 ASCII letters, digits, `-`, `_` and `.`, no leading or
    /// trailing dot, no `..`. Such a name holds no `/`, NUL or control character,
    /// cannot be `.` or `..`, and is never a hidden file.
    ///
    /// - Parameter what: What the name is, for the message ("a settings namespace").
    /// - Throws: ``HoardError/Code/invalidName``, saying what is wrong.
    static func validate(_ name: String, what: String) throws(HoardError) {
        let shown = "\"" + name.unicodeScalars.prefix(60).map { $0.escaped(asASCII: true) }.joined() + "\""
        guard !name.isEmpty else {
            throw HoardError(.invalidName, "\(what) must not be empty")
        }
        guard name.utf8.count <= maximumLength else {
            throw HoardError(
                .invalidName, "\(what) has at most \(maximumLength) bytes; \(shown)… has \(name.utf8.count)")
        }
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard allowed else {
            throw HoardError(
                .invalidName, "\(what) may hold only ASCII letters, digits, '-', '_' and '.', not \(shown)")
        }
        guard !name.hasPrefix("."), !name.hasSuffix("."), !name.contains("..") else {
            throw HoardError(.invalidName, "\(what) must not start or end with '.' or contain '..', as \(shown) does")
        }
    }
}

extension _LocalNames {
    /// Checks that `name` is one existing-style path component: not empty, `.` or
    /// `..`, no `/` or NUL, at most 255 bytes. The rule of ``DiskStore``'s store
    /// names, which may hold spaces and any Unicode.
    ///
    /// - Throws: ``HoardError/Code/invalidName``.
    static func validateComponent(_ name: String, what: String) throws(HoardError) {
        guard !isComponent(name) else { return }
        let shown = "\"" + name.unicodeScalars.prefix(60).map { $0.escaped(asASCII: true) }.joined() + "\""
        throw HoardError(
            .invalidName, "\(what) must be one path component (not empty, . or .., no / or NUL), not \(shown)")
    }

    /// Whether `name` is one path component by ``validateComponent(_:what:)``'s
    /// rule: also what a file name read back from a store's index must be before
    /// it is removed (`_BlobFiles.remove`).
    static func isComponent(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.utf8.contains(0) && name.utf8.count <= 255
    }
}
