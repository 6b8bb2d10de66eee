#if Hummingbird
import Foundation
import Hoard
import HoardHummingbird
import Hummingbird

let persist = try HoardPersistDriver(configuration: .init(name: "sessions"))
let router = Router()
router.get("/visits") { _, _ -> String in
    let visits = (try await persist.get(key: "visits", as: Int.self) ?? 0) + 1
    try await persist.set(key: "visits", value: visits, expires: .seconds(3_600))
    return "\(visits)"
}
let app = Application(router: router, services: [persist])   // run() waits for queued copies on shutdown
// try await app.runService()
#endif
