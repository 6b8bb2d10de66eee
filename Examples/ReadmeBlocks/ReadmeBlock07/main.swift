#if HTTPTypes
import HTTPTypes
import Hoard
import HoardHTTPTypes

let cache = try HTTPResponseCache()
var request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/catalog.json")
request.headerFields[.acceptLanguage] = "en"
let (response, body) = try await cache.response(to: request)
print(response.status, response.headerFields[.age] ?? "not from storage", body.count)
#endif
