import Foundation

/// HTTP dates (RFC 9110, section 5.6.7): the IMF-fixdate form that servers send
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
/// forms a recipient must accept.
enum _HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date `text` names, or `nil` when it is in none of the three forms.
    static func parse(_ text: String) -> Date? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: [Int]?
        for field in fields {
            if let index = months.firstIndex(of: field.lowercased()) {
                month = index + 1
            } else if field.contains(":") {
                let parts = field.split(separator: ":").compactMap { Int($0) }
                if parts.count == 3 { time = parts }
            } else if let number = Int(field) {
                if day == nil && field.count <= 2 && year == nil {
                    day = number
                } else {
                    year = field.count == 2 ? (number < 70 ? 2000 + number : 1900 + number) : number
                }
            }
        }
        guard let day, let month, let year, let time, (1...31).contains(day), time[0] < 24, time[1] < 60,
            time[2] < 61
        else { return nil }
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
