import Foundation

/// The default names of the HTTP caches' stores: one per program, so that two
/// programs run by one user neither share nor trim each other's caches.
@usableFromInline
enum _HTTPStoreName {
    /// The longest name returned, in bytes: what ``LocalStorage`` accepts as a
    /// store name.
    static let maximumLength = 128

    /// `"<program>.<suffix>"`, the program as ``program`` says, made a valid name
    /// by ``name(_:program:)``.
    @usableFromInline
    static func name(_ suffix: String) -> String {
        name(suffix, program: program)
    }

    /// What names the running program: its bundle identifier on Apple platforms
    /// when it has one, else the executable's name.
    static var program: String {
        #if canImport(Darwin)
        if let identifier = Bundle.main.bundleIdentifier, !identifier.isEmpty { return identifier }
        #endif
        return ProcessInfo.processInfo.processName
    }

    /// `"<program>.<suffix>"` as one safe path component of at most
    /// ``maximumLength`` bytes: in `program`, every character but ASCII letters,
    /// digits, `-`, `_` and `.` becomes `-`, runs of dots become one, and dots
    /// and dashes are trimmed from both ends; a program left empty is "hoard".
    /// `suffix` must be such a name already, shorter than ``maximumLength``.
    static func name(_ suffix: String, program: String) -> String {
        var safe = ""
        for scalar in program.unicodeScalars {
            let kept =
                scalar.isASCII
                && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                    || scalar == "-" || scalar == "_" || scalar == ".")
            let character = kept ? Character(scalar) : "-"
            if character == ".", safe.last == "." { continue }
            safe.append(character)
        }
        let room = maximumLength - suffix.utf8.count - 1
        func trimmed(_ text: Substring) -> Substring {
            let isEdge: (Character) -> Bool = { $0 == "." || $0 == "-" }
            guard let start = text.firstIndex(where: { !isEdge($0) }),
                let end = text.lastIndex(where: { !isEdge($0) })
            else { return "" }
            return text[start...end]
        }
        // Every character is ASCII: one byte each.
        let base = trimmed(trimmed(Substring(safe)).prefix(max(0, room)))
        return (base.isEmpty ? "hoard" : String(base)) + "." + suffix
    }
}
