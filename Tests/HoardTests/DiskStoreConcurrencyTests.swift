import Foundation
import Synchronization
import Testing

@testable import Hoard

extension DiskStoreSuites {
    @Suite("DiskStore under concurrency: threads, instances, processes", .timeLimit(.minutes(2)))
    struct DiskStoreConcurrencyTests {
        /// One worker's share of a workload: sets (inline and in files), batches,
        /// reads that must return an intact value of the key asked for, removals.
        /// Returns the problems seen and the final sequence each key it wrote
        /// last was given.
        static func work(
            on store: DiskStore, worker: Int, steps: Int, keys: Int
        ) -> (problems: [String], written: [String: Int]) {
            var rng = SplitMix64(seed: UInt64(worker) &+ 11)
            var problems: [String] = []
            var written: [String: Int] = [:]
            for step in 0..<steps {
                let sequence = worker * 1_000_000 + step
                let key = "k\(rng.next() % UInt64(keys))"
                let size = rng.next() % 5 == 0 ? 3_000 + Int(rng.next() % 3_000) : 50 + Int(rng.next() % 500)
                do {
                    switch rng.next() % 10 {
                    case 0..<4:
                        if let entry = try store.entry(for: key, in: "ns"), DiskTest.check(entry.data, key: key) == nil
                        {
                            problems.append(
                                "worker \(worker): read of \(key) returned \(entry.data.count) bytes that are not its value"
                            )
                        }
                    case 4..<8:
                        try store.set(
                            DiskTest.payload(key: key, sequence: sequence, size: size), for: key, in: "ns",
                            storedAt: Date(), expiresAt: nil)
                        written[key] = sequence
                    case 8:
                        let other = "k\(rng.next() % UInt64(keys))"
                        try store.write([
                            .set(
                                DiskTest.payload(key: key, sequence: sequence, size: size), for: key, in: "ns",
                                storedAt: Date(), expiresAt: nil),
                            .set(
                                DiskTest.payload(key: other, sequence: sequence, size: 100), for: other, in: "ns",
                                storedAt: Date(), expiresAt: nil),
                        ])
                        written[key] = sequence
                        written[other] = sequence
                    default:
                        try store.removeValue(for: key, in: "ns")
                        written[key] = nil
                    }
                } catch {
                    problems.append("worker \(worker): \(error)")
                }
            }
            return (problems, written)
        }

        @Test("A thread that reads alone keeps to one read connection (whose page cache holds what it read)")
        func oneThreadKeepsToOneConnection() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let used = Mutex<Set<Int>>([])
                var configuration = DiskStore.Configuration(readerCount: 4)
                configuration.readerGate = { position in used.withLock { _ = $0.insert(position) } }
                let store = try DiskStore(directory: url, configuration: configuration)
                for index in 0..<20 {
                    try store.set(Data([UInt8(index)]), for: "k\(index)", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                let found = try await DiskTest.onThread {
                    try (0..<200).map { try store.entry(for: "k\($0 % 20)", in: "ns")?.data }
                }
                #expect(found.allSatisfy { $0 != nil })
                #expect(used.withLock { $0.count } == 1, "every read of one thread on one connection")
            }
        }

        @Test("Threads alive at once prefer different read connections, each always the same one")
        func threadsSpreadOverConnections() async throws {
            let count = 16
            let arrived = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            async let preferences = DiskTest.onThreads(count) { _ in
                // Every thread is alive before any asks (a finished thread's identity
                // may be reused).
                arrived.signal()
                go.wait()
                let first = _DiskReaders.preferredSlot(modulo: 4)
                return (0..<10).allSatisfy { _ in _DiskReaders.preferredSlot(modulo: 4) == first } ? first : -1
            }
            try await DiskTest.onThread {
                for _ in 0..<count { arrived.wait() }
                for _ in 0..<count { go.signal() }
            }
            let slots = try await preferences
            #expect(!slots.contains(-1), "a thread's preference does not change")
            #expect(slots.allSatisfy { (0..<4).contains($0) })
            // 16 threads on one connection of four by chance: 4^-15.
            #expect(Set(slots).count > 1)
        }

        @Test("Two reads of one instance are in flight at once, on two read connections")
        func readsRunInParallel() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                // Given a store whose read connections stop in a gate, holding the row they read
                let entered = DispatchSemaphore(value: 0)
                let release = DispatchSemaphore(value: 0)
                var configuration = DiskStore.Configuration(readerCount: 2)
                configuration.readerGate = { _ in
                    entered.signal()
                    release.wait()
                }
                let store = try DiskStore(directory: url, configuration: configuration)
                try store.set(Data([1]), for: "a", in: "ns", storedAt: Date(), expiresAt: nil)
                try store.set(Data([2]), for: "b", in: "ns", storedAt: Date(), expiresAt: nil)

                // When two threads read different keys
                async let reads = DiskTest.onThreads(2) { i in
                    (try? store.entry(for: i == 0 ? "a" : "b", in: "ns"))??.data
                }
                // Then both are inside the gate before either leaves it (serialised
                // reads would leave the second outside while the first waits, and
                // the test would end at its time limit). Waited for on a thread of
                // its own: a task blocked here would hold a thread of the
                // cooperative pool, which the reads' tasks need to start.
                try await DiskTest.onThread {
                    entered.wait()
                    entered.wait()
                }
                // And a write goes through while both hold their connections
                try store.set(Data([3]), for: "c", in: "ns", storedAt: Date(), expiresAt: nil)
                release.signal()
                release.signal()
                #expect(try await reads == [Data([1]), Data([2])])
            }
        }

        @Test("Many threads on one instance never read another key's value and leave a healthy store")
        func oneInstanceManyTasks() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 2_048))
                let problems = try await DiskTest.onThreads(8) { worker in
                    Self.work(on: store, worker: worker, steps: 400, keys: 60).problems
                }.flatMap { $0 }
                #expect(problems.isEmpty, "\(problems.prefix(5))")
                let report = try store.verify()
                #expect(report.isHealthy, "\(report.damage)")
                #expect(try store.totalUsage().count == store.keys(in: "ns").count)
            }
        }

        @Test("Several instances on one directory, with a byte limit, stay consistent")
        func severalInstances() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let configuration = DiskStore.Configuration(byteLimit: 400_000, spillThreshold: 2_048)
                let stores = try (0..<4).map { _ in try DiskStore(directory: url, configuration: configuration) }
                let problems = try await DiskTest.onThreads(stores.count) { worker in
                    Self.work(on: stores[worker], worker: worker, steps: 300, keys: 200).problems
                }.flatMap { $0 }
                #expect(problems.isEmpty, "\(problems.prefix(5))")
                #expect(try stores[0].totalUsage().bytes <= 400_000)
                let report = try stores[1].verify()
                #expect(report.isHealthy, "\(report.damage)")
            }
        }

        @Test("Writes from several processes and this one are all there afterwards")
        func severalProcesses() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                // Given a store this process keeps open
                let store = try DiskStore(directory: url)
                let names = ["alpha", "beta", "gamma"]
                let perChild = 120

                // When three child processes write while this one writes too
                async let children = DiskTest.onThread {
                    try names.map { name in
                        let process = Process()
                        process.executableURL = try DiskTest.childExecutable()
                        process.arguments = ["writeN", url.path, name, "\(perChild)"]
                        let output = Pipe()
                        process.standardOutput = output
                        try process.run()
                        return (process, output)
                    }.map { (process, output) in
                        let data = output.fileHandleForReading.readDataToEndOfFile()
                        process.waitUntilExit()
                        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
                    }
                }
                let local = try await DiskTest.onThread { Self.work(on: store, worker: 99, steps: 300, keys: 40) }
                let results = try await children

                // Then every child finished cleanly and every write of every process is there
                #expect(local.problems.isEmpty, "\(local.problems.prefix(5))")
                for (status, output) in results {
                    #expect(status == 0, "\(output)")
                    #expect(output.hasSuffix("done\n"), "\(output.suffix(300))")
                    #expect(!output.contains("bad"), "\(output.suffix(300))")
                }
                for name in names {
                    for i in 0..<perChild {
                        let key = "\(name)-\(i)"
                        let data = try store.entry(for: key, in: "shared")?.data
                        #expect(data.flatMap { DiskTest.check($0, key: key) } == i, "\(key)")
                    }
                }
                let shared = try #require(try store.entry(for: "shared", in: "shared"))
                #expect(DiskTest.check(shared.data, key: "shared") == perChild - 1)
                for (key, sequence) in local.written {
                    let data = try store.entry(for: key, in: "ns")?.data
                    #expect(data.flatMap { DiskTest.check($0, key: key) } == sequence, "\(key)")
                }
                let report = try store.verify()
                #expect(report.isHealthy, "\(report.damage)")
            }
        }

        @Test(
            "verify does not report an entry rewritten or removed between reading its row and its value file",
            arguments: [false, true])
        func verifyDuringRewrites(repairing: Bool) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given entries in value files, one of them damaged (its file deleted)
                let writer = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                for key in ["rewritten", "removed", "kept", "damaged"] {
                    try writer.set(DiskTest.bytes(100), for: key, in: "ns", storedAt: Date(), expiresAt: nil)
                }
                let damagedFile = try #require(try DiskStoreDamageTests.fileNames(url)["damaged"])
                try FileManager.default.removeItem(at: url.appendingPathComponent("blobs/\(damagedFile)"))

                // When another instance (as another process would) rewrites one entry and
                // removes another after verify read their rows, before it reads their files
                let gateCalls = Atomic<Int>(0)
                let failures = Mutex<[String]>([])
                var configuration = DiskStore.Configuration(spillThreshold: 10)
                configuration.verifyGate = {
                    guard gateCalls.add(1, ordering: .relaxed).oldValue == 0 else { return }
                    do {
                        try writer.set(
                            DiskTest.bytes(50, seed: 1), for: "rewritten", in: "ns", storedAt: Date(), expiresAt: nil)
                        try writer.removeValue(for: "removed", in: "ns")
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                let store = try DiskStore(directory: url, configuration: configuration)
                let report = try store.verify(repairing: repairing)
                #expect(gateCalls.load(ordering: .relaxed) == 1)
                #expect(failures.withLock { $0 }.isEmpty)

                // Then only the entry whose file is gone is reported (the other two
                // files went with the changes that released them)
                #expect(report.damage.map(\.key) == ["damaged"], "\(report.damage)")
                #expect(report.damage.map(\.reason) == [.missingFile])
                #expect(report.damage.map(\.isRepaired) == [repairing])
                #expect(report.entriesChecked == 4)
                // And the rewritten entry keeps its new value, the kept one its own
                #expect(try store.entry(for: "rewritten", in: "ns")?.data == DiskTest.bytes(50, seed: 1))
                #expect(try store.entry(for: "kept", in: "ns")?.data == DiskTest.bytes(100))
                let left = repairing ? ["kept", "rewritten"] : ["damaged", "kept", "rewritten"]
                #expect(try store.keys(in: "ns") == left)
            }
        }

        @Test("A writer waiting for another connection's lock gets busy after the timeout, then succeeds")
        func busyTimeout() throws {
            try DiskTest.withTemporaryDirectory { url in
                let store = try DiskStore(directory: url, configuration: .init(busyTimeout: 0.2))
                try store.set(Data([1]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                let blocker = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
                try blocker.execute("BEGIN IMMEDIATE")
                let error = #expect(throws: HoardError.self) {
                    try store.set(Data([2]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                }
                #expect(error?.code == .busy)
                #expect(
                    try store.entry(for: "k", in: "ns")?.data == Data([1]), "reads are not blocked by a writer (WAL)")
                try blocker.execute("ROLLBACK")
                blocker.close()
                try store.set(Data([3]), for: "k", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try store.entry(for: "k", in: "ns")?.data == Data([3]))
            }
        }
    }
}
