import Foundation
import Testing

@testable import Hoard

/// One kind of damage done to a file's bytes.
enum InjectedFault: CaseIterable, CustomStringConvertible {
    case flipBit, flipBits, zeroPage, truncate, appendGarbage

    var description: String {
        switch self {
        case .flipBit: "one flipped bit"
        case .flipBits: "several flipped bits"
        case .zeroPage: "a zeroed 4 KiB page"
        case .truncate: "a truncation"
        case .appendGarbage: "garbage appended"
        }
    }

    /// Damages `bytes` as this fault does, at offsets drawn from `random`.
    func apply(to bytes: inout [UInt8], random: inout SplitMix64) {
        func offset() -> Int { Int(random.next() % UInt64(max(bytes.count, 1))) }
        switch self {
        case .flipBit where !bytes.isEmpty:
            bytes[offset()] ^= UInt8(1) << (random.next() % 8)
        case .flipBits where !bytes.isEmpty:
            for _ in 0..<(2 + Int(random.next() % 7)) { bytes[offset()] ^= UInt8(1) << (random.next() % 8) }
        case .zeroPage where !bytes.isEmpty:
            let start = offset() / 4096 * 4096
            for i in start..<min(start + 4096, bytes.count) { bytes[i] = 0 }
        case .truncate:
            bytes.removeLast(bytes.isEmpty ? 0 : 1 + offset() % bytes.count)
        case .appendGarbage:
            bytes += (0..<(1 + Int(random.next() % 5_000))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        default:
            bytes += [0xFF]  // an empty file: nothing to flip or zero, so grow it
        }
    }

    /// Damages the file at `url`.
    func apply(to url: URL, random: inout SplitMix64) throws {
        var bytes = [UInt8](try Data(contentsOf: url))
        apply(to: &bytes, random: &random)
        try Data(bytes).write(to: url)
    }
}

/// Counts of a fault-injection run, printed for the record.
struct FaultTally: CustomStringConvertible {
    var trials = 0
    var reads = 0
    var hits = 0
    var wrongValues = 0
    var refusedOpens = 0
    var thrownReads = 0

    var description: String {
        "\(trials) trials, \(reads) reads (\(hits) hits, \(thrownReads) thrown), \(refusedOpens) refused opens, \(wrongValues) wrong values"
    }
}

extension DiskStoreSuites {
    /// Seeded damage to every file of a store and of a message log; after each trial,
    /// every read returns exactly the bytes written, or is a miss or an error, and
    /// nothing crashes.
    @Suite("Fault injection")
    struct FaultInjectionTests {
        /// The value written for `key` in trial `trial`: its name, then filler.
        static func value(trial: Int, key: Int, size: Int) -> Data {
            var data = Data("trial \(trial) key \(key) ".utf8)
            var random = SplitMix64(seed: UInt64(trial) << 32 | UInt64(key))
            while data.count < size { data.append(UInt8(truncatingIfNeeded: random.next())) }
            return data.prefix(size)
        }

        /// A store image in `directory`: entries checkpointed into `index.sqlite`
        /// and more in its WAL, values inline and in `blobs/`; copied while the store
        /// is open, as a crash would leave it (without the `-shm` file, which SQLite
        /// rebuilds).
        static func makeImage(at directory: URL, trial: Int, random: inout SplitMix64) throws -> [String: Data] {
            let live = directory.appendingPathComponent("live", isDirectory: true)
            let image = directory.appendingPathComponent("image", isDirectory: true)
            var model: [String: Data] = [:]
            let store = try DiskStore(directory: live, configuration: .init(spillThreshold: 600))
            func write(_ keys: Range<Int>) throws {
                for key in keys {
                    let data = value(trial: trial, key: key, size: 1 + Int(random.next() % 2_000))
                    try store.set(data, for: "key-\(key)", in: "ns\(key % 3)", storedAt: Date(), expiresAt: nil)
                    model["key-\(key)"] = data
                }
            }
            try write(0..<60)
            let connection = try _SQLiteConnection(path: live.appendingPathComponent("index.sqlite").path)
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection.close()
            try write(60..<90)
            try FileManager.default.createDirectory(at: image, withIntermediateDirectories: true)
            for name in ["index.sqlite", "index.sqlite-wal", "blobs"] {
                try FileManager.default.copyItem(
                    at: live.appendingPathComponent(name), to: image.appendingPathComponent(name))
            }
            return model
        }

        @Test(
            "DiskStore: bit flips, zeroed pages, truncation and garbage in index.sqlite, its WAL and blob files never return a wrong value"
        )
        func diskStore() throws {
            var tally = FaultTally()
            var random = SplitMix64(seed: 0x16_0D15C)
            for trial in 0..<150 {
                try DiskTest.withTemporaryDirectory { url in
                    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                    let model = try Self.makeImage(at: url, trial: trial, random: &random)
                    let image = url.appendingPathComponent("image")

                    // Given one file of the image damaged by one fault
                    let blobs = DiskTest.blobFiles(image)
                    let target: String
                    switch random.next() % 3 {
                    case 0: target = "index.sqlite"
                    case 1: target = "index.sqlite-wal"
                    default: target = "blobs/" + blobs[Int(random.next() % UInt64(blobs.count))]
                    }
                    let fault = InjectedFault.allCases[Int(random.next() % UInt64(InjectedFault.allCases.count))]
                    try fault.apply(to: image.appendingPathComponent(target), random: &random)
                    let context = "trial \(trial): \(fault) in \(target)"
                    tally.trials += 1

                    // When the store is opened (refusing is fine), verified and read
                    let events = EventRecorder()
                    let store: DiskStore
                    do {
                        store = try DiskStore(
                            directory: image, configuration: .init(spillThreshold: 600, onEvent: events.handler))
                    } catch {
                        tally.refusedOpens += 1
                        return
                    }
                    let report = try? store.verify()
                    for (key, expected) in model {
                        tally.reads += 1
                        do {
                            let data = try store.entry(for: key, in: "ns\(Int(key.dropFirst(4))! % 3)")?.data
                            if let data {
                                tally.hits += 1
                                if data != expected {
                                    tally.wrongValues += 1
                                    Issue.record("\(context): \(key) read back \(data.count) changed bytes")
                                }
                            }
                        } catch {
                            tally.thrownReads += 1
                        }
                    }

                    // Then every entry a read found damaged, verify() had reported (unless
                    // SQLite itself found the index damaged, when verify stops early)
                    if let report, !report.damage.contains(where: { $0.reason == .damagedIndex }) {
                        let reported = Set(report.damage.compactMap(\.key))
                        for damage in events.damage {
                            #expect(reported.contains(damage.key ?? ""), "\(context): verify() missed \(damage)")
                        }
                    }
                }
            }
            print("fault injection, DiskStore: \(tally)")
            #expect(tally.wrongValues == 0)
            #expect(tally.hits > tally.reads / 2, "most entries survive one fault")
        }

        @Test("MessageLog: bit flips, zeroed pages, truncation and garbage never yield a message that was not appended")
        func messageLog() throws {
            var tally = FaultTally()
            var random = SplitMix64(seed: 0x16_106)
            try withTemporaryDirectory { directory in
                for trial in 0..<200 {
                    // Given a log (ring or not) damaged by one fault
                    let url = directory.appendingPathComponent("trial-\(trial).log")
                    let overwrites = trial % 2 == 0
                    let budget = 64 + 2_000 + Int(random.next() % 30_000)
                    var appended: [Data] = []
                    do {
                        let log = try rawLog(url, maximumBytes: budget, overwrites: overwrites)
                        for sequence in 0..<(20 + Int(random.next() % 400)) {
                            let message = taggedMessage(
                                writer: trial, sequence: sequence, padding: Int(random.next() % 90))
                            do {
                                try log.append(message)
                                appended.append(message)
                            } catch let error as HoardError where error.code == .logFull {
                                break
                            }
                        }
                    }
                    let fault = InjectedFault.allCases[Int(random.next() % UInt64(InjectedFault.allCases.count))]
                    try fault.apply(to: url, random: &random)
                    tally.trials += 1

                    // Then what reads return, before and after recover(), is appended messages in order
                    func check(_ messages: [Data], _ when: String) {
                        tally.reads += 1
                        tally.hits += messages.count
                        var last = -1
                        for message in messages {
                            guard let index = appended.firstIndex(of: message), index > last else {
                                tally.wrongValues += 1
                                Issue.record(
                                    "trial \(trial), \(fault), \(when): a message that was not appended, or out of order"
                                )
                                continue
                            }
                            last = index
                        }
                    }
                    let log: MessageLog<Data>
                    do {
                        log = try rawLog(url, maximumBytes: budget, overwrites: overwrites)
                    } catch {
                        tally.refusedOpens += 1
                        continue
                    }
                    do { check(try log.messages(), "before recover()") } catch { tally.thrownReads += 1 }
                    do {
                        try log.recover()
                        check(try log.messages(), "after recover()")
                    } catch {
                        tally.thrownReads += 1
                    }
                }
            }
            print("fault injection, MessageLog: \(tally)")
            #expect(tally.wrongValues == 0)
        }
    }
}
