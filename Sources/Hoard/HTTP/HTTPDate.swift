import Foundation

/// HTTP dates (RFC 9110, section 5.6.7): the IMF-fixdate form that servers send
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
/// forms a recipient must accept, each exactly as the grammar gives it (names in
/// any case); anything else (a one-digit hour, two spaces, dashes in an
/// IMF-fixdate, a two-digit year outside RFC 850, a zone other than `GMT`) is not
/// a date.
enum _HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// The date `text` names, or `nil` when it is in none of the three forms.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        return imfFixdate(bytes) ?? rfc850(bytes) ?? asctime(bytes)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 29, days.contains(word(b[0..<3])), b[3] == UInt8(ascii: ","), b[4] == space,
            let day = digits(b[5..<7]), b[7] == space, let month = month(b[8..<11]), b[11] == space,
            let year = digits(b[12..<16]), b[16] == space, let time = time(b[17..<25]), b[25] == space,
            word(b[26..<29]) == "gmt"
        else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years
    /// ahead is the most recent past year with those digits.
    private static func rfc850(_ b: [UInt8]) -> Date? {
        guard let comma = b.firstIndex(of: UInt8(ascii: ",")), longDays.contains(word(b[0..<comma])),
            b.count == comma + 24, b[comma + 1] == space
        else { return nil }
        let s = comma + 2
        guard let day = digits(b[s..<(s + 2)]), b[s + 2] == dash, let month = month(b[(s + 3)..<(s + 6)]),
            b[s + 6] == dash, let short = digits(b[(s + 7)..<(s + 9)]), b[s + 9] == space,
            let time = time(b[(s + 10)..<(s + 18)]), b[s + 18] == space, word(b[(s + 19)..<(s + 22)]) == "gmt"
        else { return nil }
        let thisYear = Calendar(identifier: .gregorian).component(.year, from: Date())
        var year = thisYear - thisYear % 100 + short
        if year > thisYear + 50 { year -= 100 }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (a one-digit day after two spaces).
    private static func asctime(_ b: [UInt8]) -> Date? {
        guard b.count == 24, days.contains(word(b[0..<3])), b[3] == space, let month = month(b[4..<7]),
            b[7] == space, b[10] == space, let time = time(b[11..<19]), b[19] == space,
            let year = digits(b[20..<24])
        else { return nil }
        let day: Int
        if b[8] == space, let one = digits(b[9..<10]) {
            day = one
        } else if let two = digits(b[8..<10]) {
            day = two
        } else {
            return nil
        }
        return date(year: year, month: month, day: day, time: time)
    }

    private static let space = UInt8(ascii: " ")
    private static let dash = UInt8(ascii: "-")

    private static func word(_ b: ArraySlice<UInt8>) -> String { String(decoding: b, as: UTF8.self).lowercased() }

    private static func month(_ b: ArraySlice<UInt8>) -> Int? { months.firstIndex(of: word(b)).map { $0 + 1 } }

    /// The number the ASCII digits `b` (all digits) write.
    private static func digits(_ b: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in b {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return b.isEmpty ? nil : value
    }

    /// `HH:MM:SS`, two digits each.
    private static func time(_ b: ArraySlice<UInt8>) -> [Int]? {
        let s = b.startIndex
        guard let h = digits(b[s..<(s + 2)]), b[s + 2] == UInt8(ascii: ":"), let m = digits(b[(s + 3)..<(s + 5)]),
            b[s + 5] == UInt8(ascii: ":"), let sec = digits(b[(s + 6)..<(s + 8)]), h < 24, m < 60, sec < 61
        else { return nil }
        return [h, m, sec]
    }

    private static func date(year: Int, month: Int, day: Int, time: [Int]) -> Date? {
        guard (1...31).contains(day) else { return nil }
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = day
        components.hour = time[0]
        components.minute = time[1]
        components.second = time[2]
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        return calendar.date(from: components)
    }

    /// `date` as an IMF-fixdate.
    static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        let month = months[(c.month ?? 1) - 1].capitalized
        return "\(weekdays[(c.weekday ?? 1) - 1]), \(two(c.day)) \(month) \(c.year ?? 1970) "
            + "\(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }
}
