#if Redis || Postgres
/// The one wording of the Redis and PostgreSQL stores' errors: `code: message`,
/// then each detail as ` (label: value)`, the server's message when the message
/// does not already hold it, `note` (a server's code), and the underlying error
/// when the server said nothing; long values cut, so that a key or a reply cannot
/// flood a log line.
package enum StoreErrorText {
    package static func describe(
        code: String, message: String, details: [(label: String, value: String?)], serverMessage: String?,
        note: String? = nil, underlying: (any Error)?
    ) -> String {
        var text = "\(code): \(message)"
        for (label, value) in details {
            if let value { text += " (\(label): \(value.prefix(200)))" }
        }
        if let serverMessage, !message.contains(serverMessage) { text += " (server: \(serverMessage.prefix(500)))" }
        if let note { text += " (\(note))" }
        if let underlying, serverMessage == nil {
            text += " — caused by: \(String(describing: underlying).prefix(500))"
        }
        return text
    }
}
#endif
