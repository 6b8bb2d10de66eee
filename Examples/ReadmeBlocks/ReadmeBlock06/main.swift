import Foundation
import Hoard

let http = try HTTPResponseCache()
let url = URL(string: "https://example.com/catalog.json")!
let response = try await http.response(for: url, headers: ["Accept-Language": "en"])
print(response.statusCode, response.isFromCache, response.body.count)
let body = try await http.data(from: url)   // throws for a non-2xx status
