import Hoard

struct User: Codable, Sendable {
    var id: Int
    var name: String
}

/// Stands in for your network client.
struct API: Sendable {
    func user(_ id: Int) async throws -> User { User(id: id, name: "user \(id)") }
}
let api = API()

let users = try Cache<Int, User>(configuration: .init(name: "users")) { id in
    try await api.user(id)                   // runs once per missing key, however many callers wait
}
let user = try await users.value(for: 42)    // memory → disk → remote stores → fetch
let cached = users.cachedValue(for: 42)      // synchronous: memory, then disk; never the network
users[7] = User(id: 7, name: "Ada")          // memory at once, disk behind (write-behind)
try await users.set(User(id: 8, name: "Bo"), for: 8, expires: .hours(1))  // returns when stored
await users.flush()                          // waits for queued writes
print(user?.name ?? "nil", cached?.name ?? "nil", users[7]?.name ?? "nil")  // user 42 user 42 Ada
