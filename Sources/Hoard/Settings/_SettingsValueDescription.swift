import Foundation

/// Says in words what kind of value a settings suite holds where a ``SettingsStore``
/// expected its encoded bytes: "an integer", "a string", "an array of 3 elements".
///
/// Values read from a suite come through `Any`, sometimes as an `Optional` boxed in
/// it (Foundation's property-list bridging does that): the optional is looked
/// through first, so the kind named is that of the value itself, never
/// `Optional<Any>`. A value of any other type is named by its dynamic type.
enum _SettingsValueDescription {
    /// The kind of `value`, with an article.
    static func describe(_ value: Any) -> String {
        let value = unwrapped(value)
        switch value {
        case nil:
            return "no value (nil)"
        case let data as Data:
            return "\(data.count) bytes of data"
        case is String:
            return "a string"
        case let number as NSNumber:
            return describe(number)
        case is Date:
            return "a date"
        case let array as [Any]:
            return array.count == 1 ? "an array of 1 element" : "an array of \(array.count) elements"
        case let dictionary as [String: Any]:
            return dictionary.count == 1 ? "a dictionary of 1 entry" : "a dictionary of \(dictionary.count) entries"
        case let value?:
            return "a value of type \(type(of: value))"
        }
    }

    /// A number by its kind: property lists have booleans, integers and reals.
    private static func describe(_ number: NSNumber) -> String {
        switch String(cString: number.objCType) {
        case "c" where number.intValue == 0 || number.intValue == 1: return "a boolean"
        case "f", "d": return "a floating-point number"
        default: return "an integer"
        }
    }

    /// `value` with any levels of `Optional` around it removed; `nil` for an empty one.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        guard let wrapped = mirror.children.first?.value else { return nil }
        return unwrapped(wrapped)
    }
}
