import Foundation

/// The normalisations that make URLs naming one target URI read as one string
/// (RFC 9110, section 4.2.3; RFC 3986, section 6.2.2), applied to the parts of a
/// URL as it spells them, percent-encoded.
///
/// Only escapes of unreserved characters are decoded, so a reserved character and
/// its escape (`/` and `%2F`, `?` and `%3F`, `&` and `%26`) stay distinct; a `%`
/// that does not start an escape of two hexadecimal digits is kept as it is.
enum _HTTPTargetURI {
    /// `text` with each escape of an unreserved character (RFC 3986, section 2.3:
    /// letters, digits, `-`, `.`, `_`, `~`) decoded and every other escape's
    /// hexadecimal digits in uppercase; with `lowercasingLetters`, ASCII letters
    /// outside escapes in lowercase too (a host's). Every other byte, a malformed
    /// escape's included, is kept.
    ///
    /// - Complexity: O(*n*) in the length of `text`.
    static func normalizedPercentEncoding(_ text: String, lowercasingLetters: Bool = false) -> String {
        guard lowercasingLetters || text.utf8.contains(UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                let decoded = high << 4 | low
                if isUnreserved(decoded) {
                    result.append(lowercasingLetters ? lowercased(decoded) : decoded)
                } else {
                    result += [byte, uppercased(bytes[index + 1]), uppercased(bytes[index + 2])]
                }
                index += 3
            } else {
                result.append(lowercasingLetters ? lowercased(byte) : byte)
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `path` without its dot-segments, by the algorithm of RFC 3986, section
    /// 5.2.4: a `.` segment is dropped and a `..` segment drops the segment before
    /// it, so `/a/./b/../c` is `/a/c`. Segments such as `.b` or `..c` are kept.
    ///
    /// - Complexity: O(*n*) in the length of `path` (each byte is read once and
    ///   written and dropped at most once), so a request whose path is a long run
    ///   of `/../` costs no more than its length; paths without a dot are returned
    ///   as they are.
    static func removingDotSegments(_ path: String) -> String {
        guard path.utf8.contains(UInt8(ascii: ".")) else { return path }
        let input = Array(path.utf8)
        let dot = UInt8(ascii: ".")
        let slash = UInt8(ascii: "/")
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        /// The byte `offset` places past `index`, or `nil` past the end.
        func byte(_ offset: Int, after index: Int) -> UInt8? {
            index + offset < input.count ? input[index + offset] : nil
        }
        /// Drops the output's last segment and the "/" before it, if any.
        func dropLastSegment() {
            while let last = output.popLast(), last != slash {}
        }
        var index = 0
        while index < input.count {
            let (first, second, third) = (input[index], byte(1, after: index), byte(2, after: index))
            let rest = input.count - index
            if first == dot, second == dot, third == slash {
                index += 3  // A: a leading "../"
            } else if first == dot, second == slash {
                index += 2  // A: a leading "./"
            } else if first == slash, second == dot, third == slash {
                index += 2  // B: "/./" becomes "/"
            } else if first == slash, second == dot, rest == 2 {
                output.append(slash)  // B: a final "/." becomes "/"
                index = input.count
            } else if first == slash, second == dot, third == dot, byte(3, after: index) == slash {
                index += 3  // C: "/../" becomes "/", and the last segment goes
                dropLastSegment()
            } else if first == slash, second == dot, third == dot, rest == 3 {
                dropLastSegment()  // C: a final "/.." becomes "/"
                output.append(slash)
                index = input.count
            } else if (rest == 1 && first == dot) || (rest == 2 && first == dot && second == dot) {
                index = input.count  // D: "." or ".." alone
            } else {
                // E: the first segment, with the "/" before it, moves to the output.
                output.append(first)
                index += 1
                while index < input.count, input[index] != slash {
                    output.append(input[index])
                    index += 1
                }
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether `byte` is an unreserved character (RFC 3986, section 2.3).
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// The value of the hexadecimal digit `byte`, or `nil` when it is none.
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// `byte` in lowercase when it is an ASCII uppercase letter.
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// `byte` in uppercase when it is an ASCII lowercase letter.
    private static func uppercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) ? byte & ~0x20 : byte
    }
}
