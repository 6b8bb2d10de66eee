import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    @Suite("DiskStore with a full disk and without permission", .timeLimit(.minutes(2)))
    struct DiskStoreFaultTests {
        /// Runs a command; returns its exit status and its error output.
        static func run(_ executable: String, _ arguments: [String]) -> (Int32, String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            do { try process.run() } catch { return (-1, "\(error)") }
            let output = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }

        /// Mounts a tmpfs of `size` (`"2m"`) beside the test's directory, runs `body`
        /// with its mount point, and unmounts it. Needs root: call it from a test
        /// enabled only ``asRoot``.
        static func withTmpfs(size: String, beside url: URL, _ body: (URL) throws -> Void) throws {
            let mountPoint = url.deletingLastPathComponent().appendingPathComponent("tmpfs")
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
            let (status, message) = run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint.path])
            try #require(status == 0, "mounting a tmpfs failed: \(message)")
            defer { _ = run("/bin/umount", ["-l", mountPoint.path]) }
            try body(mountPoint)
        }

        /// Tests that mount a tmpfs run only as root, as CI does on Linux.
        static let asRoot = ConditionTrait.enabled(if: geteuid() == 0, "mounting a tmpfs needs root (CI runs as root)")

        /// Writes zeros to a new file at `url` until the disk is full.
        static func fillDisk(_ url: URL) throws {
            try #require(FileManager.default.createFile(atPath: url.path, contents: nil))
            let handle = try #require(FileHandle(forWritingAtPath: url.path))
            defer { try? handle.close() }
            while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
            // Then what is left is less than a page: fill it byte by byte.
            while (try? handle.write(contentsOf: Data(count: 1))) != nil {}
        }

        /// A removal that must work on a full disk.
        enum Removal: String, CaseIterable, Sendable {
            case removeValue, batchRemoveValue, batchRemoveAll, removeAllInNamespace, trim
        }

        @Test(
            "On a full disk (a 2 MiB tmpfs filled with small values) every removal succeeds and makes room for new writes",
            asRoot, arguments: Removal.allCases)
        func removalOnFullDisk(_ removal: Removal) throws {
            try DiskTest.withTemporaryDirectory { url in
                try Self.withTmpfs(size: "2m", beside: url) { mountPoint in
                    // Given a store that filled the disk with small values, in two namespaces,
                    // and the last free bytes taken by another file
                    let storeURL = mountPoint.appendingPathComponent("store")
                    let events = EventRecorder()
                    let store = try DiskStore(directory: storeURL, configuration: .init(onEvent: events.handler))
                    var count = 0
                    while count < 50_000 {
                        do {
                            try store.set(
                                DiskTest.bytes(200, seed: count), for: "k\(count)",
                                in: count % 2 == 0 ? "even" : "odd", storedAt: Date(), expiresAt: nil)
                            count += 1
                        } catch {
                            #expect((error as? HoardError)?.code == .storageFull, "\(error)")
                            break
                        }
                    }
                    try #require(count > 20 && count < 50_000, "the disk should have filled: \(count)")
                    try Self.fillDisk(mountPoint.appendingPathComponent("ballast"))

                    // When entries are removed
                    switch removal {
                    case .removeValue:
                        #expect(try store.removeValue(for: "k0", in: "even"))
                    case .batchRemoveValue:
                        try store.write([.removeValue(for: "k0", in: "even")])
                    case .batchRemoveAll:
                        try store.write([.removeAll(in: "even")])
                    case .removeAllInNamespace:
                        #expect(try store.removeAll(in: "even") == (count + 1) / 2)
                    case .trim:
                        #expect(try store.trim(toBytes: nil, count: count - 10) == 10)
                    }

                    // Then they are gone, the rest is intact, and new writes succeed again
                    #expect(try store.entry(for: "k0", in: "even") == nil)
                    #expect(try store.entry(for: "k11", in: "odd")?.data == DiskTest.bytes(200, seed: 11))
                    for i in 0..<20 {
                        try store.set(
                            DiskTest.bytes(200, seed: -i), for: "new\(i)", in: "new", storedAt: Date(),
                            expiresAt: nil)
                    }
                    #expect(try store.entry(for: "new19", in: "new")?.data == DiskTest.bytes(200, seed: -19))
                    #expect(try store.verify().isHealthy)
                    #expect(events.failures.isEmpty, "\(events.failures)")
                }
            }
        }

        @Test(
            "A really full disk (a 2 MiB tmpfs): storageFull is thrown, nothing is lost, the store works again after removals"
        )
        func fullDisk() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store on a file system of 2 MiB
                let mountPoint = url.deletingLastPathComponent().appendingPathComponent("tmpfs")
                try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
                let (status, message) = Self.run(
                    "/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint.path])
                guard status == 0 else {
                    print(
                        "DiskStore full-disk test skipped: cannot mount a tmpfs here (\(message.trimmingCharacters(in: .whitespacesAndNewlines))); the RLIMIT_FSIZE test covers the same path"
                    )
                    return
                }
                defer { _ = Self.run("/bin/umount", ["-l", mountPoint.path]) }
                // Other data on the same disk, removed later to make room
                let ballast = mountPoint.appendingPathComponent("ballast")
                try Data(count: 300_000).write(to: ballast)
                let storeURL = mountPoint.appendingPathComponent("store")
                let store = try DiskStore(directory: storeURL, configuration: .init(spillThreshold: 1_000))
                for i in 0..<10 {
                    try store.set(
                        DiskTest.payload(key: "small\(i)", sequence: i, size: 100), for: "small\(i)", in: "ns",
                        storedAt: Date(), expiresAt: nil)
                }

                // When 100 KiB values are written until the disk is full
                var stored: [String] = []
                var failure: HoardError?
                for i in 0..<100 {
                    let key = "large\(i)"
                    do {
                        try store.set(
                            DiskTest.payload(key: key, sequence: i, size: 100_000), for: key, in: "ns",
                            storedAt: Date(), expiresAt: nil)
                        stored.append(key)
                    } catch {
                        failure = error as? HoardError
                        break
                    }
                }

                // Then the error says the disk is full, and everything stored before is intact
                #expect(failure?.code == .storageFull, "\(String(describing: failure))")
                #expect(stored.count > 3)
                #expect(!DiskTest.blobFiles(storeURL).contains { $0.hasSuffix(".tmp") }, "the partial file is deleted")
                func expectIntact() throws {
                    for i in 0..<10 {
                        #expect(
                            try store.entry(for: "small\(i)", in: "ns").flatMap {
                                DiskTest.check($0.data, key: "small\(i)")
                            } == i)
                    }
                    for key in stored {
                        #expect(
                            try store.entry(for: key, in: "ns").flatMap { DiskTest.check($0.data, key: key) }
                                == Int(key.dropFirst(5)))
                    }
                }
                try expectIntact()
                #expect(try store.entry(for: "large\(stored.count)", in: "ns") == nil)
                // And removing a large entry makes room for the next one
                #expect(try store.removeValue(for: stored.removeLast(), in: "ns"))
                try store.set(
                    DiskTest.payload(key: "large99", sequence: 99, size: 100_000), for: "large99", in: "ns",
                    storedAt: Date(), expiresAt: nil)
                stored.append("large99")

                // When inline values fill the index until nothing more fits
                var indexFailure: HoardError?
                var inline = 0
                while inline < 2_000 {
                    do {
                        try store.set(
                            DiskTest.payload(key: "inline\(inline)", sequence: inline, size: 900),
                            for: "inline\(inline)", in: "ns", storedAt: Date(), expiresAt: nil)
                        inline += 1
                    } catch {
                        indexFailure = error as? HoardError
                        break
                    }
                }
                #expect(indexFailure?.code == .storageFull, "\(String(describing: indexFailure))")
                // Then reads still work and nothing stored is lost
                try expectIntact()
                for i in 0..<inline {
                    #expect(
                        try store.entry(for: "inline\(i)", in: "ns").flatMap {
                            DiskTest.check($0.data, key: "inline\(i)")
                        } == i)
                }
                // A write now may fail too (SQLite's log cannot grow either), but only with storageFull
                do {
                    try store.removeValue(for: "small0", in: "ns")
                } catch {
                    #expect((error as? HoardError)?.code == .storageFull)
                }

                // When room is made on the disk, the store works again
                try FileManager.default.removeItem(at: ballast)
                try store.set(
                    DiskTest.payload(key: "again", sequence: 1, size: 100_000), for: "again", in: "ns",
                    storedAt: Date(), expiresAt: nil)
                #expect(try store.entry(for: "again", in: "ns").flatMap { DiskTest.check($0.data, key: "again") } == 1)
                #expect(try store.removeValue(for: "small1", in: "ns"))
                #expect(try store.verify().isHealthy)
                let reopened = try DiskStore(directory: storeURL)
                #expect(try reopened.entry(for: "inline0", in: "ns") != nil)
            }
        }

        @Test(
            "On a full disk, a trim tried again after making room still spares the entry read last: its access time is kept",
            asRoot)
        func trimOnFullDiskKeepsAccessTimes() throws {
            try DiskTest.withTemporaryDirectory { url in
                try Self.withTmpfs(size: "2m", beside: url) { mountPoint in
                    // Given a store that filled the disk with entries stored a second apart,
                    // the first of them read after the last write (its access not written yet),
                    // and the last free bytes taken by another file
                    let storeURL = mountPoint.appendingPathComponent("store")
                    let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000))
                    let events = EventRecorder()
                    let store = try DiskStore(
                        directory: storeURL,
                        configuration: .init(
                            accessTimeResolution: 1, accessFlushInterval: 3_600, onEvent: events.handler),
                        clock: clock)
                    var count = 0
                    while count < 50_000 {
                        do {
                            try store.set(
                                DiskTest.bytes(200, seed: count), for: "k\(count)", in: "ns", storedAt: clock.now(),
                                expiresAt: nil)
                            count += 1
                            clock.advance(by: 1)
                        } catch {
                            #expect((error as? HoardError)?.code == .storageFull, "\(error)")
                            break
                        }
                    }
                    try #require(count > 20 && count < 50_000, "the disk should have filled: \(count)")
                    #expect(try store.entry(for: "k0", in: "ns") != nil)
                    try Self.fillDisk(mountPoint.appendingPathComponent("ballast"))
                    let reserve = storeURL.appendingPathComponent("index.sqlite-reserve").path
                    func reserveFile() -> Int? {
                        (try? FileManager.default.attributesOfItem(atPath: reserve)[.systemFileNumber]) as? Int
                    }
                    let reserveBefore = try #require(reserveFile())

                    // When a trim evicts one entry, its first try failing for want of room
                    // (the store then deletes its reserve file, and makes it anew after)
                    #expect(try store.trim(toBytes: nil, count: count - 1) == 1)
                    #expect(reserveFile() != reserveBefore, "the trim's first try failed on the full disk")

                    // Then the entry evicted is the least recently accessed, k1: k0 was read last
                    #expect(try store.entry(for: "k1", in: "ns") == nil)
                    #expect(try store.entry(for: "k0", in: "ns")?.data == DiskTest.bytes(200, seed: 0))
                    #expect(events.failures.isEmpty, "\(events.failures)")
                }
            }
        }

        @Test(
            "On a full disk, a removal that deletes value files first to make room keeps one another row still names (a damaged index)",
            asRoot, arguments: [Removal.removeValue, .batchRemoveValue, .batchRemoveAll, .removeAllInNamespace])
        func removalOnFullDiskKeepsSharedFile(_ removal: Removal) throws {
            try DiskTest.withTemporaryDirectory { url in
                try Self.withTmpfs(size: "2m", beside: url) { mountPoint in
                    // Given the row of "copy" (namespace "copies") naming the value file of
                    // "owner", in a store that then filled the disk
                    let storeURL = mountPoint.appendingPathComponent("store")
                    let store = try DiskStore(directory: storeURL, configuration: .init(spillThreshold: 100))
                    let (shared, _) = try DiskStoreSuites.DiskStoreSharedFileTests.copyNamingOwnersFile(
                        store, at: storeURL, namespace: "copies")
                    var count = 0
                    while count < 50_000 {
                        do {
                            try store.set(
                                DiskTest.bytes(50, seed: count), for: "k\(count)", in: "small", storedAt: Date(),
                                expiresAt: nil)
                            count += 1
                        } catch {
                            #expect((error as? HoardError)?.code == .storageFull, "\(error)")
                            break
                        }
                    }
                    try #require(count > 20 && count < 50_000, "the disk should have filled: \(count)")
                    try Self.fillDisk(mountPoint.appendingPathComponent("ballast"))

                    // When "copy" is removed
                    switch removal {
                    case .removeValue: #expect(try store.removeValue(for: "copy", in: "copies"))
                    case .batchRemoveValue: try store.write([.removeValue(for: "copy", in: "copies")])
                    case .batchRemoveAll: try store.write([.removeAll(in: "copies")])
                    default: #expect(try store.removeAll(in: "copies") == 1)
                    }

                    // Then it is gone, and "owner" keeps its file and its value
                    #expect(try store.entry(for: "copy", in: "copies") == nil)
                    #expect(DiskTest.blobFiles(storeURL).contains(shared))
                    #expect(try store.entry(for: "owner", in: "ns")?.data == DiskTest.bytes(1_000, seed: 1))
                }
            }
        }

        @Test("On a full disk (a 2 MiB tmpfs) removeAll(in:) frees the space: a full store can be emptied")
        func removeAllOnFullDisk() throws {
            try DiskTest.withTemporaryDirectory { url in
                let mountPoint = url.deletingLastPathComponent().appendingPathComponent("tmpfs")
                try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
                let (status, message) = Self.run(
                    "/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint.path])
                guard status == 0 else {
                    print(
                        "DiskStore removeAll full-disk test skipped: cannot mount a tmpfs here (\(message.trimmingCharacters(in: .whitespacesAndNewlines)))"
                    )
                    return
                }
                defer { _ = Self.run("/bin/umount", ["-l", mountPoint.path]) }
                // Given a store that filled the disk with large values, then with small ones,
                // then the last free pages taken by another file
                let storeURL = mountPoint.appendingPathComponent("store")
                let events = EventRecorder()
                let store = try DiskStore(
                    directory: storeURL, configuration: .init(spillThreshold: 1_000, onEvent: events.handler))
                var count = 0
                for size in [100_000, 900] {
                    while count < 5_000 {
                        do {
                            try store.set(
                                DiskTest.bytes(size, seed: count), for: "k\(count)", in: "ns", storedAt: Date(),
                                expiresAt: nil)
                            count += 1
                        } catch {
                            #expect((error as? HoardError)?.code == .storageFull, "\(error)")
                            break
                        }
                    }
                }
                let ballast = mountPoint.appendingPathComponent("ballast").path
                try #require(FileManager.default.createFile(atPath: ballast, contents: nil))
                let handle = try #require(FileHandle(forWritingAtPath: ballast))
                while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
                try? handle.close()

                // When the namespace is removed
                #expect(try store.removeAll(in: "ns") == count)

                // Then it is empty, its files are gone, and it takes writes again
                #expect(try store.keys(in: "ns").isEmpty)
                #expect(DiskTest.blobFiles(storeURL).isEmpty)
                try FileManager.default.removeItem(atPath: ballast)
                try store.set(DiskTest.bytes(100_000), for: "again", in: "ns", storedAt: Date(), expiresAt: nil)
                #expect(try store.entry(for: "again", in: "ns")?.data == DiskTest.bytes(100_000))
                #expect(try store.verify().isHealthy)
                #expect(events.failures.isEmpty)
            }
        }

        @Test("Past the process's file size limit (RLIMIT_FSIZE, in a child): storageFull, and the store stays usable")
        func fileSizeLimit() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let (status, lines) = try await DiskTest.onThread { try DiskTest.runChild(["fsize", url.path]) }
                #expect(status == 0, "\(lines)")
                #expect(
                    lines == [
                        "thrown storageFull",
                        "after huge=absent small=true large=true temporary=0",
                        "next true",
                        "done",
                    ])
                let store = try DiskStore(directory: url)
                #expect(try store.verify().isHealthy)
                #expect(try store.keys(in: "ns") == ["large", "next", "small"])
            }
        }

        @Test(
            "Without write permission on blobs/ (in a child; as root it drops to nobody): permissionDenied, and the store stays usable"
        )
        func permissionDenied() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let (status, lines) = try await DiskTest.onThread { try DiskTest.runChild(["permission", url.path]) }
                #expect(status == 0, "\(lines)")
                #expect(
                    lines.dropFirst() == [
                        "thrown permissionDenied",
                        "after large=absent small=true temporary=0",
                        "next true",
                        "done",
                    ])
                let store = try DiskStore(directory: url)
                #expect(try store.keys(in: "ns") == ["next", "small"])
                #expect(try store.verify().isHealthy)
            }
        }

        @Test(
            "A write that spills flushes blobs/ before it commits: when the directory cannot be opened to flush (in a child; as root it drops to nobody), set and a batch throw and commit nothing"
        )
        func directoryFlushBeforeCommit() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                let (status, lines) = try await DiskTest.onThread {
                    try DiskTest.runChild(["unreadable-blobs", url.path])
                }
                #expect(status == 0, "\(lines)")
                #expect(
                    lines == [
                        "thrown permissionDenied",
                        "batch thrown permissionDenied",
                        "after absent=large,a,b,c small=true",
                        "next true",
                        "unsynced true",
                        "done",
                    ])
                let store = try DiskStore(directory: url)
                #expect(try store.keys(in: "ns") == ["next", "small", "unsynced"])
                #expect(DiskTest.blobFiles(url).count == 1, "only the file of \"unsynced\": the others were deleted")
                #expect(try store.verify().isHealthy)
            }
        }

        @Test("Opening a store the process may not read is permissionDenied (as root: in a child dropped to nobody)")
        func openWithoutPermission() async throws {
            try await DiskTest.withTemporaryDirectory { url in
                _ = try DiskStore(directory: url)
                if geteuid() == 0 {
                    // Root ignores permission bits; a child as `nobody` does not.
                    let (status, lines) = try await DiskTest.onThread {
                        try DiskTest.runChild(["open-as-nobody", url.path])
                    }
                    #expect(status == 0, "\(lines)")
                    #expect(lines == ["thrown permissionDenied"])
                } else {
                    #expect(chmod(url.path, 0o000) == 0)
                    defer { _ = chmod(url.path, 0o700) }
                    let error = #expect(throws: HoardError.self) { try DiskStore(directory: url) }
                    #expect(error?.code == .permissionDenied)
                }
            }
        }
    }
}
