import Foundation
import Hoard

struct Event: Codable, Sendable { var name: String; var at: Date }
let logsDirectory = FileManager.default.temporaryDirectory
let batch = [Event(name: "tap", at: .now), Event(name: "scroll", at: .now)]

let log = try MessageLog<Event>(
    fileURL: logsDirectory.appendingPathComponent("events.log"),  // created when missing
    maximumBytes: 64 << 10,          // the file stays within 64 KiB
    overwritesOldMessages: true)     // keep the newest events that fit
try log.append(Event(name: "launch", at: .now))
try log.append(contentsOf: batch)    // one write for many messages

let all = try log.messages()         // oldest first
let recent = try log.newestMessages(10)
for try await event in log.asyncMessages { print(event.name) }
