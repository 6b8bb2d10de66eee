import Foundation

/// The syntax a targeted cache-control field (RFC 9213, such as
/// `CDN-Cache-Control`) must have: a Structured Field dictionary (RFC 8941,
/// section 3.2). A cache ignores a field that does not parse, and one whose
/// `max-age` and the like are not integers.
enum _HTTPTargetedField {
    private static let seconds: Set<String> = ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error"]

    /// Whether the field values `values`, joined, are a valid dictionary whose
    /// directives that count seconds have integer values.
    static func isValid(_ values: [String]) -> Bool {
        guard let members = split(values.joined(separator: ", ")) else { return false }
        for member in members {
            let trimmed = member.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { return false }
            let parts = trimmed.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let keyAndParameters = parts[0].split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(keyAndParameters[0])
            guard isKey(key) else { return false }
            guard parts.count == 2 else { continue }
            let item = String(parts[1].split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0])
            if seconds.contains(key) {
                guard isInteger(item) else { return false }
            } else {
                guard isBareItem(item) else { return false }
            }
        }
        return true
    }

    /// The members of `text`, split at commas outside strings; `nil` for an
    /// unterminated string.
    private static func split(_ text: String) -> [String]? {
        var members: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text {
            if escaped {
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                members.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        guard !quoted else { return nil }
        members.append(current)
        return members
    }

    private static func isKey(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, first == "*" || ("a"..."z").contains(first) else { return false }
        return key.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_-.*".unicodeScalars.contains($0)
        }
    }

    private static func isInteger(_ item: String) -> Bool {
        let digits = item.hasPrefix("-") ? item.dropFirst() : Substring(item)
        return (1...15).contains(digits.count) && digits.unicodeScalars.allSatisfy { ("0"..."9").contains($0) }
    }

    private static func isBareItem(_ item: String) -> Bool {
        if isInteger(item) { return true }
        let scalars = item.unicodeScalars
        if let dot = item.firstIndex(of: ".") {
            let whole = item[..<dot]
            let fraction = item[item.index(after: dot)...]
            if isInteger(String(whole)), (1...3).contains(fraction.count),
                fraction.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) })
            {
                return true
            }
        }
        if item.count >= 2, item.hasPrefix("\""), item.hasSuffix("\"") { return true }
        if item == "?0" || item == "?1" { return true }
        if item.count >= 2, item.hasPrefix(":"), item.hasSuffix(":") {
            return item.dropFirst().dropLast().unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || "+/=".unicodeScalars.contains($0)
            }
        }
        guard let first = scalars.first, first == "*" || ("a"..."z").contains(first) || ("A"..."Z").contains(first)
        else { return false }
        return scalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || "!#$%&'*+-.^_`|~:/".unicodeScalars.contains($0)
        }
    }
}
