#if Vapor
import Foundation
import Hoard
import HoardVapor
import Vapor

let app = try await Application.make(.development)
try app.caches.use(.hoard(configuration: .init(name: "vapor")))
app.get("greeting") { request async throws -> String in
    if let cached = try await request.cache.get("greeting", as: String.self) { return cached }
    try await request.cache.set("greeting", to: "hello", expiresIn: .minutes(5))
    return "hello"
}
// try await app.execute()
try await app.asyncShutdown()
#endif
