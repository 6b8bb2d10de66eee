import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    /// The crash-safety test, for real: a child process (`HoardCrashWriter write`)
    /// writes continuously to a store, saying which keys it is about to change and
    /// acknowledging each change once the call returned. The test kills it with
    /// SIGKILL at random moments, reopens the store in this process, and checks every
    /// key against what was acknowledged.
    @Suite("DiskStore crash safety", .timeLimit(.minutes(3)))
    struct DiskStoreCrashTests {
        /// What the test knows about one key.
        enum Known: Equatable {
            /// Its last acknowledged write stored the value with this sequence number.
            case set(Int)
            /// Its last acknowledged change removed it.
            case removed(Int)
        }

        struct Summary: Sendable, CustomStringConvertible {
            var kills = 0
            var killedEarly = 0
            var acknowledged = 0
            var keysChecked = 0
            var inFlightLanded = 0
            var orphansCollected = 0
            var problems: [String] = []

            var description: String {
                "\(kills) kills (\(killedEarly) of them within 40 ms of the start, often while opening), \(acknowledged) acknowledged changes, "
                    + "\(keysChecked) key checks, \(inFlightLanded) in-flight writes found complete, "
                    + "\(orphansCollected) orphaned files collected at reopen, \(problems.count) problems"
            }
        }

        @Test("SIGKILL at random moments: every acknowledged write reads back intact, no read returns a wrong value")
        func killAtRandomMoments() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let summary = try await DiskTest.onThread { try Self.run(url: url, rounds: 60) }
                print("DiskStore crash test: \(summary)")
                #expect(summary.kills >= 55, "a round whose child ended by itself is a problem, not a kill")
                #expect(summary.acknowledged > 200, "the child made progress")
                #expect(summary.problems.isEmpty, "\(summary.problems.prefix(10))")
            }
        }

        /// Runs the rounds on the calling thread (it blocks on the child's output).
        static func run(url: URL, rounds: Int) throws -> Summary {
            var summary = Summary()
            var known: [String: Known] = [:]
            var rng = SystemRandomNumberGenerator()
            for round in 1...rounds {
                // Start the writer
                let process = Process()
                process.executableURL = try DiskTest.childExecutable()
                process.arguments = ["write", url.path, "\(round)"]
                let output = Pipe()
                process.standardOutput = output
                try process.run()
                let reader = output.fileHandleForReading
                var buffer = Data()
                var inFlight: [String: (sequence: Int, removal: Bool)] = [:]

                func consume(_ line: Substring) {
                    let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
                    guard parts.count == 3, let sequence = Int(parts[1]) else {
                        if line != "ready" { summary.problems.append("round \(round): child said \(line)") }
                        return
                    }
                    let key = parts[2]
                    switch parts[0] {
                    case "will": inFlight[key] = (sequence, false)
                    case "willrm": inFlight[key] = (sequence, true)
                    case "ok":
                        known[key] = .set(sequence)
                        inFlight[key] = nil
                        summary.acknowledged += 1
                    case "rm":
                        known[key] = .removed(sequence)
                        inFlight[key] = nil
                        summary.acknowledged += 1
                    default: summary.problems.append("round \(round): child said \(line)")
                    }
                }
                func drain(_ data: Data) -> Int {
                    buffer.append(data)
                    var acks = 0
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        if line.hasPrefix("ok ") || line.hasPrefix("rm ") { acks += 1 }
                        consume(Substring(line))
                    }
                    return acks
                }

                // Let it run: usually until a random number of acknowledgements, then a
                // random fraction of a write more; sometimes kill it while it opens.
                if round % 6 == 0 {
                    usleep(UInt32.random(in: 0..<40_000, using: &rng))
                    summary.killedEarly += 1
                } else {
                    let target = Int.random(in: 1...60, using: &rng)
                    var acks = 0
                    while acks < target {
                        let chunk = reader.availableData
                        if chunk.isEmpty { break }
                        acks += drain(chunk)
                    }
                    usleep(UInt32.random(in: 0..<3_000, using: &rng))
                }
                kill(process.processIdentifier, SIGKILL)
                _ = drain(reader.readDataToEndOfFile())
                process.waitUntilExit()
                if process.terminationReason == .uncaughtSignal, process.terminationStatus == SIGKILL {
                    summary.kills += 1
                } else {
                    summary.problems.append(
                        "round \(round): the child ended by itself (status \(process.terminationStatus)) before the kill"
                    )
                }

                // Reopen and check every key ever acknowledged
                let events = EventRecorder()
                let store = try DiskStore(directory: url, configuration: .init(onEvent: events.handler))
                for event in events.all {
                    if case .collectedOrphans(let files, _) = event { summary.orphansCollected += files }
                }
                var outcomes: [Int: Set<Bool>] = [:]  // in-flight sequence → whether each of its keys landed
                for key in Set(known.keys).union(inFlight.keys) {
                    summary.keysChecked += 1
                    let entry = try store.entry(for: key, in: "crash")
                    let found = entry.map { DiskTest.check($0.data, key: key) }
                    if let found, found == nil {
                        summary.problems.append(
                            "round \(round): \(key) reads back \(entry!.data.count) bytes that are not a value written for it"
                        )
                        continue
                    }
                    let pending = inFlight[key]
                    if let pending, !pending.removal {
                        outcomes[pending.sequence, default: []].insert(found == pending.sequence)
                    }
                    switch (known[key], found ?? nil) {
                    case (.set(let acknowledged)?, let sequence?) where sequence == acknowledged:
                        break
                    case (_, let sequence?) where pending?.sequence == sequence && pending?.removal == false:
                        known[key] = .set(sequence)  // the write in flight completed before the kill
                        summary.inFlightLanded += 1
                    case (.removed?, nil), (nil, nil):
                        break
                    case (.set?, nil) where pending?.removal == true:
                        known[key] = .removed(pending!.sequence)  // the removal in flight completed before the kill
                        summary.inFlightLanded += 1
                    case (let expected, let sequence):
                        summary.problems.append(
                            "round \(round): \(key) holds \(sequence.map { "write \($0)" } ?? "nothing"), expected \(String(describing: expected)) (in flight: \(pending.map { "\($0.removal ? "removal" : "write") \($0.sequence)" } ?? "nothing"))"
                        )
                    }
                }
                for (sequence, landed) in outcomes where landed.count > 1 {
                    summary.problems.append("round \(round): the batch \(sequence) in flight was applied in part")
                }
                let report = try store.verify()
                if !report.isHealthy { summary.problems.append("round \(round): verify found \(report.damage)") }
                if !events.damage.isEmpty {
                    summary.problems.append("round \(round): reads found damage \(events.damage)")
                }
            }
            return summary
        }
    }
}
