import Foundation
import Hoard

struct User: Codable, Sendable { var name: String; var joined: Date }
let codec = try ValueCodec<User>.automatic()
let bytes = try codec.encode(User(name: "Ada", joined: .now))
let user = try codec.decode(bytes)
