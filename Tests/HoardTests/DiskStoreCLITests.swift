import Foundation
import Testing

@testable import Hoard

extension DiskStoreSuites {
    /// The `hoard` store commands, run as the built executable on real stores.
    @Suite("DiskStore through the hoard command-line tool", .timeLimit(.minutes(3)))
    struct DiskStoreCLITests {
        static func hoard(_ arguments: String...) throws -> (status: Int32, output: String, errors: String) {
            try hoard(arguments)
        }

        static func hoard(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
            try DiskTest.run(DiskTest.executable(named: "hoard"), arguments)
        }

        @Test("stats, ls, get, rm, trim and verify on a store")
        func commands() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with two namespaces, inline values and files
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000))
                    try store.set("hello, disk", for: "greeting")
                    try store.set(Data([0, 1, 2, 255]), for: "binary", in: "bytes")
                    for i in 0..<20 {
                        try store.set(DiskTest.bytes(2_000, seed: i), for: "big/\(i)", in: "bytes")
                    }
                }
                let path = url.path

                let stats = try Self.hoard("stats", path)
                #expect(stats.status == 0, "\(stats.errors)")
                #expect(stats.output.contains("entries    22"))
                #expect(stats.output.contains("\"bytes\"  21 entries"))
                #expect(stats.output.contains("\"default\"  1 entry,"))

                let list = try Self.hoard("ls", path, "--namespace", "bytes", "--limit", "3")
                #expect(list.status == 0)
                #expect(list.output.split(separator: "\n").count == 3)
                #expect(list.output.contains("\"big/0\"  2.0 KiB  file"))
                #expect(list.errors.contains("(3 of 21 entries"), "counts the namespace listed: \(list.errors)")
                for limit in ["-1", "0"] {
                    let refused = try Self.hoard("ls", path, "--limit=\(limit)")
                    #expect(refused.status != 0)
                    #expect(refused.errors.contains("--limit must be at least 1"), "\(refused.errors)")
                }
                // Dates are ISO 8601 with their offset (Z for UTC).
                #expect(list.output.contains(#/stored \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)  /#))

                let text = try Self.hoard("get", path, "greeting")
                #expect(text.status == 0)
                #expect(text.output == "hello, disk\n")
                let binary = try Self.hoard("get", path, "binary", "-n", "bytes")
                #expect(binary.output.hasPrefix("00000000  00 01 02 ff"))
                let raw = try Self.hoard("get", path, "big/3", "-n", "bytes", "--raw")
                #expect(Data(raw.output.utf8).count > 0)
                let missing = try Self.hoard("get", path, "nope")
                #expect(missing.status != 0)
                #expect(missing.errors.contains("no live entry for key \"nope\""))

                let removed = try Self.hoard("rm", path, "big/0", "big/1", "-n", "bytes")
                #expect(removed.status == 0)
                #expect(removed.output == "removed \"big/0\"\nremoved \"big/1\"\n")

                let trimmed = try Self.hoard("trim", path, "--bytes", "10K")
                #expect(trimmed.status == 0, "\(trimmed.errors)")
                let store = try DiskStore(directory: url)
                #expect(try store.totalUsage().bytes <= 10_240)

                let healthy = try Self.hoard("verify", path)
                #expect(healthy.status == 0)
                #expect(healthy.output.hasSuffix("no damage\n"))
            }
        }

        @Test("get and rm without --namespace use a store's only namespace, and list them when there are several")
        func namespaceChoice() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url)
                    try store.set("Swift feed", for: "swift", in: "feedreader.feeds")
                    try store.set("other", for: "other", in: "feedreader.feeds")
                }
                let path = url.path
                let found = try Self.hoard("get", path, "swift")
                #expect(found.status == 0, "\(found.errors)")
                #expect(found.output == "Swift feed\n")
                let removed = try Self.hoard("rm", path, "swift")
                #expect(removed.status == 0, "\(removed.errors)")
                #expect(try DiskStore(directory: url).entry(for: "swift", in: "feedreader.feeds") == nil)

                try DiskStore(directory: url).set("x", for: "k", in: "second")
                let ambiguous = try Self.hoard("get", path, "other")
                #expect(ambiguous.status != 0)
                #expect(
                    ambiguous.errors.contains("2 namespaces (\"feedreader.feeds\", \"second\")"), "\(ambiguous.errors)")
                let refused = try Self.hoard("rm", path, "--all")
                #expect(refused.status != 0)
                #expect(try DiskStore(directory: url).usage(in: "feedreader.feeds").count == 1, "nothing was removed")
                let chosen = try Self.hoard("get", path, "k", "-n", "second")
                #expect(chosen.output == "x\n")
            }
        }

        @Test("verify lists damage with its key and exits 1; --repair removes it")
        func verifyDamage() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                    try store.set(
                        DiskTest.bytes(100), for: "lost photo", in: "images", storedAt: Date(), expiresAt: nil)
                }
                for name in DiskTest.blobFiles(url) {
                    try FileManager.default.removeItem(at: url.appendingPathComponent("blobs/\(name)"))
                }
                let report = try Self.hoard("verify", url.path)
                #expect(report.status == 1)
                #expect(report.output.contains("missingFile  namespace \"images\"  key \"lost photo\""))
                let repaired = try Self.hoard("verify", url.path, "--repair")
                #expect(repaired.status == 0, "\(repaired.output)")
                let after = try Self.hoard("verify", url.path)
                #expect(after.status == 0)
            }
        }

        @Test("verify --repair says which damage it repaired and which is left, and exits 1 while any is left")
        func verifyRepairLeavesYoungOrphan() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                    try store.set(
                        DiskTest.bytes(100), for: "lost photo", in: "images", storedAt: Date(), expiresAt: nil)
                }
                for name in DiskTest.blobFiles(url) {
                    try FileManager.default.removeItem(at: url.appendingPathComponent("blobs/\(name)"))
                }
                // A value file no entry names, written just now: it may belong to a
                // write in flight, so a repair keeps it.
                try Data([1, 2, 3]).write(to: url.appendingPathComponent("blobs/0123456789abcdef-0123456789abcdef"))

                let text = try Self.hoard("verify", url.path, "--repair")
                #expect(text.status == 1, "the young orphan is left")
                #expect(text.output.hasSuffix("1 entries checked, 2 problems (1 repaired, 1 left)\n"), "\(text.output)")

                let json = try Self.hoard("verify", url.path, "--repair", "--json")
                #expect(json.status == 1)
                let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
                #expect(object?["repaired"] as? Bool == true)
                #expect(object?["healthy"] as? Bool == false)
                let damage = object?["damage"] as? [[String: Any]] ?? []
                let repairedByReason = Dictionary(
                    damage.map { ($0["reason"] as? String ?? "", $0["repaired"] as? Bool) }, uniquingKeysWith: { $1 })
                #expect(repairedByReason == ["orphanedFile": false], "the missing file's entry went in the first run")
            }
        }

        @Test("hoard demo: a second run finds what the first stored in the default location")
        func demoRemembers() throws {
            try DiskTest.withTemporaryDirectory { url in
                let environment = ["XDG_CACHE_HOME": url.path]
                let first = try DiskTest.run(DiskTest.executable(named: "hoard"), ["demo"], environment: environment)
                #expect(first.status == 0, "\(first.errors)")
                #expect(first.output.contains("DiskStore at \(url.path)/hoard/hoard-demo"))
                #expect(first.output.contains("found nothing: this is the first run"))
                #expect(first.output.contains("get   notes/large -> 48 KiB, intact"))
                #expect(first.output.contains("get   token -> miss"))
                let second = try DiskTest.run(DiskTest.executable(named: "hoard"), ["demo"], environment: environment)
                #expect(second.status == 0)
                #expect(
                    second.output.contains(
                        #/found visits = 1, stored by an earlier run at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)/#
                    ))
                #expect(second.output.contains("set   visits = 2"))
                #expect(
                    FileManager.default.fileExists(
                        atPath: url.appendingPathComponent("hoard/hoard-demo/index.sqlite").path))
            }
        }

        @Test("A path that is not a store is a clear error, and nothing is created")
        func notAStore() throws {
            try DiskTest.withTemporaryDirectory { url in
                let missing = try Self.hoard("stats", url.path)
                #expect(missing.status != 0)
                #expect(missing.errors.contains("is not a Hoard store"))
                #expect(!FileManager.default.fileExists(atPath: url.path))

                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                try Data("x".utf8).write(to: url.appendingPathComponent("README"))
                for command in ["stats", "ls", "verify"] {
                    let result = try Self.hoard(command, url.path)
                    #expect(result.status != 0)
                    #expect(result.errors.contains("is not a Hoard store"), "\(command): \(result.errors)")
                }
                #expect(DiskTest.tree(url) == ["README"])
            }
        }

        @Test("get --raw ends with a newline on a terminal, and writes the bytes exactly to a pipe")
        func rawNewlineOnTerminal() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url)
                    try store.set("no newline", for: "k")
                    try store.set("ends with one\n", for: "n")
                }
                let piped = try Self.hoard("get", url.path, "k", "--raw")
                #expect(piped.output == "no newline")
                let hoard = try DiskTest.executable(named: "hoard")
                // The terminal turns "\n" into "\r\n".
                #expect(try Self.onTerminal(hoard, ["get", url.path, "k", "--raw"]) == "no newline\r\n")
                #expect(try Self.onTerminal(hoard, ["get", url.path, "n", "--raw"]) == "ends with one\r\n")
            }
        }

        /// Runs `executable` with its standard output on a new pseudo-terminal and
        /// returns what it wrote there.
        static func onTerminal(_ executable: URL, _ arguments: [String]) throws -> String {
            let master = PseudoTerminal.openMaster()
            try #require(master >= 0, "posix_openpt: \(errno)")
            defer { close(master) }
            let name = try #require(PseudoTerminal.unlockedName(master), "grantpt, unlockpt, ptsname: \(errno)")
            let terminal = open(name, O_RDWR | O_NOCTTY)
            try #require(terminal >= 0, "open the terminal: \(errno)")
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.standardOutput = FileHandle(fileDescriptor: terminal, closeOnDealloc: false)
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            // With every descriptor of the terminal closed, reading the master side
            // returns what was written, then fails: the end.
            close(terminal)
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4_096)
            while true {
                let count = read(master, &buffer, buffer.count)
                if count <= 0 { break }
                output += buffer[0..<count]
            }
            #expect(process.terminationStatus == 0)
            return String(decoding: output, as: UTF8.self)
        }

        /// The pseudo-terminal calls, which Glibc's module leaves out (its headers
        /// declare them only for X/Open): looked up by name where they are not
        /// imported.
        enum PseudoTerminal {
            #if canImport(Darwin)
            static func openMaster() -> Int32 { posix_openpt(O_RDWR | O_NOCTTY) }
            static func unlockedName(_ master: Int32) -> String? {
                guard grantpt(master) == 0, unlockpt(master) == 0, let name = ptsname(master) else { return nil }
                return String(cString: name)
            }
            #else
            static func function<T>(_ name: String, as type: T.Type) -> T {
                guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { fatalError("no \(name) in the C library") }
                return unsafeBitCast(symbol, to: type)
            }
            static func openMaster() -> Int32 {
                function("posix_openpt", as: (@convention(c) (Int32) -> Int32).self)(O_RDWR | O_NOCTTY)
            }
            static func unlockedName(_ master: Int32) -> String? {
                let grant = function("grantpt", as: (@convention(c) (Int32) -> Int32).self)
                let unlock = function("unlockpt", as: (@convention(c) (Int32) -> Int32).self)
                let name = function("ptsname", as: (@convention(c) (Int32) -> UnsafeMutablePointer<CChar>?).self)
                guard grant(master) == 0, unlock(master) == 0, let path = name(master) else { return nil }
                return String(cString: path)
            }
            #endif
        }

        /// Decodes one line of JSON as a dictionary.
        static func object(_ line: some StringProtocol) throws -> [String: Any] {
            let value = try JSONSerialization.jsonObject(with: Data(line.utf8), options: [.fragmentsAllowed])
            return try #require(value as? [String: Any], "not a JSON object: \(line)")
        }

        /// Whether `text` is an ISO 8601 date and time with an offset.
        static func isISODate(_ value: Any?) -> Bool {
            guard let text = value as? String else { return false }
            return text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)/) != nil
        }

        @Test("stats, ls, get and verify --json print the documented objects")
        func json() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with an inline value that never expires and a spilled one that does
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000))
                    try store.set(Data("hello".utf8), for: "greeting", in: "texts", storedAt: Date(), expiresAt: nil)
                    try store.set(
                        DiskTest.bytes(2_000), for: "big", in: "bytes", storedAt: Date(),
                        expiresAt: Date().addingTimeInterval(3_600))
                }
                let path = url.standardizedFileURL.path

                let stats = try Self.hoard("stats", path, "--json")
                #expect(stats.status == 0, "\(stats.errors)")
                #expect(stats.output.split(separator: "\n").count == 1)
                let totals = try Self.object(stats.output)
                #expect(totals["store"] as? String == path)
                #expect(totals["entries"] as? Int == 2)
                #expect(totals["valueBytes"] as? Int == 2_005)
                #expect(totals["valueFiles"] as? Int == 1)
                #expect((totals["bytesOnDisk"] as? Int ?? 0) > 2_000)
                let namespaces = try #require(totals["namespaces"] as? [[String: Any]])
                #expect(namespaces.map { $0["name"] as? String } == ["bytes", "texts"])
                #expect(namespaces.map { $0["entries"] as? Int } == [1, 1])
                #expect(namespaces.map { $0["valueBytes"] as? Int } == [2_000, 5])

                let list = try Self.hoard("ls", path, "--json")
                #expect(list.status == 0, "\(list.errors)")
                let lines = try list.output.split(separator: "\n").map(Self.object)
                #expect(lines.count == 2)
                #expect(lines.map { $0["key"] as? String } == ["big", "greeting"])
                #expect(lines.map { $0["inFile"] as? Bool } == [true, false])
                #expect(lines.map { $0["size"] as? Int } == [2_000, 5])
                #expect(lines.map { $0["expired"] as? Bool } == [false, false])
                #expect(lines.allSatisfy { Self.isISODate($0["storedAt"]) && Self.isISODate($0["accessedAt"]) })
                #expect(Self.isISODate(lines[0]["expiresAt"]))
                #expect(lines[1]["expiresAt"] is NSNull)

                let get = try Self.hoard("get", path, "greeting", "-n", "texts", "--json")
                #expect(get.status == 0, "\(get.errors)")
                let entry = try Self.object(get.output)
                #expect(entry["namespace"] as? String == "texts")
                #expect(entry["key"] as? String == "greeting")
                #expect(entry["size"] as? Int == 5)
                #expect(Self.isISODate(entry["storedAt"]))
                #expect(entry["expiresAt"] is NSNull)
                #expect(try Self.hoard("get", path, "greeting", "--json", "--raw").status != 0)

                let healthy = try Self.hoard("verify", path, "--json")
                #expect(healthy.status == 0, "\(healthy.errors)")
                let report = try Self.object(healthy.output)
                #expect(report["healthy"] as? Bool == true)
                #expect(report["entriesChecked"] as? Int == 2)
                #expect((report["damage"] as? [Any])?.isEmpty == true)

                // When the spilled value's file is lost, verify --json names it and exits 1
                for name in DiskTest.blobFiles(url) {
                    try FileManager.default.removeItem(at: url.appendingPathComponent("blobs/\(name)"))
                }
                let damaged = try Self.hoard("verify", path, "--json")
                #expect(damaged.status == 1)
                let damage = try #require(try Self.object(damaged.output)["damage"] as? [[String: Any]])
                #expect(damage.count == 1)
                #expect(damage.first?["reason"] as? String == "missingFile")
                #expect(damage.first?["namespace"] as? String == "bytes")
                #expect(damage.first?["key"] as? String == "big")
            }
        }

        @Test("stats through a symbolic link to the store measures the store's files on disk")
        func statsThroughLink() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with a spilled value, and a link to its directory
                let real = url.appendingPathComponent("real", isDirectory: true)
                do {
                    let store = try DiskStore(directory: real, configuration: .init(spillThreshold: 1_000))
                    try store.set(DiskTest.bytes(2_000), for: "big")
                }
                let link = url.appendingPathComponent("link")
                try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)

                // When it is measured through the link and directly
                let direct = try Self.object(try Self.hoard("stats", real.path, "--json").output)
                let linked = try Self.hoard("stats", link.path, "--json")

                // Then both count the same files
                #expect(linked.status == 0, "\(linked.errors)")
                let totals = try Self.object(linked.output)
                #expect(totals["valueFiles"] as? Int == 1)
                #expect((totals["bytesOnDisk"] as? Int ?? 0) > 2_000)
                #expect(totals["bytesOnDisk"] as? Int == direct["bytesOnDisk"] as? Int)
            }
        }

        @Test("stats counts value files, not the temporary files an interrupted write left, which still take space")
        func statsLeavesOutTemporaryFiles() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000))
                    try store.set(DiskTest.bytes(2_000), for: "big")
                }
                let before = try Self.object(try Self.hoard("stats", url.path, "--json").output)
                let temporary = url.appendingPathComponent("blobs/0123456789abcdef-0123456789abcdef.tmp")
                try Data(count: 500).write(to: temporary)

                let after = try Self.object(try Self.hoard("stats", url.path, "--json").output)
                #expect(after["valueFiles"] as? Int == 1)
                #expect(after["bytesOnDisk"] as? Int == (before["bytesOnDisk"] as? Int).map { $0 + 500 })
            }
        }

        @Test("A store can be named instead of given by path; the tool says which directory it used")
        func storeByName() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store in the default location of a cache folder
                let caches = url.appendingPathComponent("caches", isDirectory: true)
                do {
                    let store = try DiskStore(directory: caches.appendingPathComponent("com.example.catalog"))
                    try store.set("one", for: "only")
                }
                let environment = ["XDG_CACHE_HOME": caches.path]
                let hoard = try DiskTest.executable(named: "hoard")
                let directory = caches.appendingPathComponent("com.example.catalog").path

                // When it is named
                let stats = try DiskTest.run(hoard, ["stats", "com.example.catalog"], environment: environment)
                let value = try DiskTest.run(hoard, ["get", "com.example.catalog", "only"], environment: environment)

                // Then the name resolves to the default directory, and stderr says so
                #expect(stats.status == 0, "\(stats.errors)")
                #expect(stats.output.contains("entries    1\n"))
                #expect(stats.errors.contains("store \"com.example.catalog\": "))
                #expect(stats.errors.contains("/com.example.catalog"))
                #expect(value.output == "one\n")
                let missing = try DiskTest.run(hoard, ["stats", "com.example.other"], environment: environment)
                #expect(missing.status != 0)
                #expect(missing.errors.contains("is neither a path nor the name of a store in \(caches.path)"))

                // A store in a program's folder is named by its full name, or by its own
                // name while no other program has one of that name
                do {
                    let store = try DiskStore(directory: caches.appendingPathComponent("feeds/feeds.items"))
                    try store.set("swift", for: "latest", in: "feeds.items")
                }
                for name in ["feeds/feeds.items", "feeds.items"] {
                    let found = try DiskTest.run(hoard, ["get", name, "latest"], environment: environment)
                    #expect(found.output == "swift\n", "\(found.errors)")
                    #expect(found.errors.contains("store \"feeds/feeds.items\": \(caches.path)/feeds/feeds.items"))
                }
                _ = try DiskStore(directory: caches.appendingPathComponent("reader/feeds.items"))
                let ambiguous = try DiskTest.run(hoard, ["get", "feeds.items", "latest"], environment: environment)
                #expect(ambiguous.status != 0)
                #expect(ambiguous.errors.contains("\"feeds/feeds.items\", \"reader/feeds.items\""))
                #expect(
                    !FileManager.default.fileExists(atPath: caches.appendingPathComponent("com.example.other").path))
                #expect(FileManager.default.fileExists(atPath: directory))
            }
        }

        /// Runs `hoard` with its standard output on `/dev/full`, where every write fails
        /// (ENOSPC), and returns its status and standard error.
        static func hoardToFullDevice(_ arguments: [String]) throws -> (status: Int32, errors: String) {
            let process = Process()
            process.executableURL = try DiskTest.executable(named: "hoard")
            process.arguments = arguments
            let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
            defer { try? full.close() }
            let errors = Pipe()
            process.standardOutput = full
            process.standardError = errors
            try process.run()
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }

        @Test(
            "Output that cannot be written is a clear error and exit status 1: neither a crash nor a silent success",
            .enabled(if: FileManager.default.fileExists(atPath: "/dev/full")))
        func unwritableOutput() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with an entry
                try DiskStore(directory: url).set("hello", for: "greeting")

                for arguments in [["ls", url.path], ["ls", url.path, "--json"], ["stats", url.path, "--json"]] {
                    // When a command's output goes to a device where every write fails
                    let result = try Self.hoardToFullDevice(arguments)

                    // Then it says so and exits 1, without a crash
                    #expect(result.status == 1, "\(arguments): \(result.errors)")
                    #expect(
                        result.errors.contains("hoard: cannot write to standard output"),
                        "\(arguments): \(result.errors)")
                    #expect(!result.errors.contains("Fatal error"), "\(arguments): \(result.errors)")
                }
            }
        }

        @Test("hoard --version prints the version and exits 0")
        func version() throws {
            let result = try Self.hoard("--version")
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output.wholeMatch(of: /\d+\.\d+\.\d+\n/) != nil, "\(result.output)")
        }

        @Test("hoard --help documents the exit statuses, and the commands exit with them")
        func exitStatuses() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store
                try DiskStore(directory: url).set("hello", for: "greeting")

                // When the help is printed
                let help = try Self.hoard("--help")

                // Then it names each status the tool exits with
                #expect(help.status == 0)
                #expect(help.output.contains("EXIT STATUS"), "\(help.output)")
                for line in ["0 ", "1 ", "64 "] {
                    #expect(help.output.contains("  " + line), "\(line): \(help.output)")
                }
                // And the commands exit with them: success, failure, invalid arguments
                #expect(try Self.hoard("get", url.path, "greeting").status == 0)
                #expect(try Self.hoard("get", url.path, "missing").status == 1)
                #expect(try Self.hoard("get", url.path, "greeting", "--raw", "--json").status == 64)
                #expect(try Self.hoard("stats").status == 64)
            }
        }

        @Test(
            "A negative number given to an option is refused for what it is, not read as a missing value",
            arguments: [
                (["trim", "STORE", "--bytes", "-5"], "not a size: -5"),
                (["trim", "STORE", "--count", "-1"], "--count must not be negative"),
                (["ls", "STORE", "--limit", "-1"], "--limit must be at least 1"),
                (["log", "tail", "STORE/x.log", "-n", "-1"], "-n must be zero or more"),
            ])
        func negativeOptionValues(arguments: [String], message: String) throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store
                try DiskStore(directory: url).set("hello", for: "greeting")
                let arguments = arguments.map { $0.replacingOccurrences(of: "STORE", with: url.path) }

                // When an option gets a negative number after a space
                let result = try Self.hoard(arguments)

                // Then the error says what is wrong with the number, and nothing changed
                #expect(result.status == 64, "\(result.errors)")
                #expect(result.errors.contains(message), "\(result.errors)")
                #expect(!result.errors.contains("Missing value"), "\(result.errors)")
                #expect(try DiskStore(directory: url).entry(for: "greeting", in: "default") != nil)
            }
        }

        @Test("stats, ls, get, verify and storage list leave a store of an older format as it is, and say why")
        func readOnlyCommandsDoNotMigrate() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store of format version 6, as an older program that uses it left it
                try DiskStore(directory: url).set("hello", for: "greeting")
                try DiskStoreChecksumTests.downgradeToVersion6(url)

                for arguments in [
                    ["stats", url.path], ["ls", url.path], ["get", url.path, "greeting"], ["verify", url.path],
                    ["verify", url.path, "--json"],
                ] {
                    // When a command that only reads is run on it
                    let result = try Self.hoard(arguments)

                    // Then it refuses the store, saying why, and the store keeps its format
                    #expect(result.status == 1, "\(arguments): \(result.output)")
                    #expect(result.errors.contains("format version 6"), "\(arguments): \(result.errors)")
                    #expect(try DiskStoreChecksumTests.formatVersion(url) == "6", "\(arguments) migrated the store")
                }

                // And storage list, which opens every store of the cache directory,
                // lists it with the reason and leaves it as it is too
                let environment = ["XDG_CACHE_HOME": url.deletingLastPathComponent().path]
                let list = try DiskTest.run(
                    DiskTest.executable(named: "hoard"), ["storage", "list"], environment: environment)
                #expect(list.status == 0, "\(list.errors)")
                #expect(list.output.contains("format version 6"), "\(list.output)")
                #expect(try DiskStoreChecksumTests.formatVersion(url) == "6", "storage list migrated the store")
            }
        }

        @Test("get changes nothing: an expired or damaged entry stays for ls and verify, and a hit records no access")
        func getChangesNothing() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given an expired entry, a spilled one whose file is lost, and a live one
                // stored an hour ago and never read since
                let hourAgo = Date().addingTimeInterval(-3_600)
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 100))
                    try store.set(
                        Data("old".utf8), for: "expired", in: "ns", storedAt: hourAgo,
                        expiresAt: hourAgo.addingTimeInterval(60))
                    try store.set(DiskTest.bytes(500), for: "lost", in: "ns", storedAt: Date(), expiresAt: nil)
                    try store.set(Data("hello".utf8), for: "live", in: "ns", storedAt: hourAgo, expiresAt: nil)
                }
                for name in DiskTest.blobFiles(url) {
                    try FileManager.default.removeItem(at: url.appendingPathComponent("blobs/\(name)"))
                }
                let before = try DiskStore(directory: url).entries(in: "ns")

                // When each is read with get
                let expired = try Self.hoard("get", url.path, "expired")
                let lost = try Self.hoard("get", url.path, "lost")
                let live = try Self.hoard("get", url.path, "live")

                // Then the live one prints, the others do not, and the store is as it was
                #expect(live.status == 0 && live.output == "hello\n", "\(live.errors)")
                #expect(expired.status == 1, "\(expired.errors)")
                #expect(lost.status == 1, "\(lost.errors)")
                let after = try DiskStore(directory: url).entries(in: "ns")
                #expect(after.map(\.key) == before.map(\.key), "get removed an entry")
                #expect(after.map(\.accessedAt) == before.map(\.accessedAt), "get recorded an access")
                let verify = try Self.hoard("verify", url.path)
                #expect(verify.output.contains("missingFile  namespace \"ns\"  key \"lost\""), "\(verify.output)")
            }
        }

        @Test("Store commands refuse a FIFO, as the store and as its index, without opening it")
        func fifo() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a FIFO where a store is expected, and a store whose index is a FIFO
                let parent = url.deletingLastPathComponent()
                let fifo = parent.appendingPathComponent("pipe").path
                #expect(mkfifo(fifo, 0o600) == 0)
                _ = try DiskStore(directory: url)
                let index = url.appendingPathComponent("index.sqlite").path
                for suffix in ["", "-wal", "-shm"] { unlink(index + suffix) }
                #expect(mkfifo(index, 0o600) == 0)

                for command in ["stats", "ls", "verify", "trim"] {
                    let extra = command == "trim" ? ["--count", "1"] : []
                    // When a store command is given the FIFO
                    let direct = try DiskTest.run(DiskTest.executable(named: "hoard"), [command, fifo] + extra)
                    // Then it refuses it and says what it is
                    #expect(direct.status != 0)
                    #expect(
                        direct.errors.contains("the path is a FIFO, a socket or a device, not a store directory"),
                        "\(command): \(direct.errors)")
                    // And a store whose index is a FIFO is refused too
                    let inside = try DiskTest.run(DiskTest.executable(named: "hoard"), [command, url.path] + extra)
                    #expect(inside.status != 0)
                    #expect(
                        inside.errors.contains("index.sqlite is not a regular file"), "\(command): \(inside.errors)")
                }
            }
        }

        @Test("verify prints each problem SQLite finds in the index on a line of its own, in text and JSON")
        func verifyIndexDamageOneLineEach() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store whose index lost two of its indexes from the schema, so
                // that their pages are no longer used (SQLite reports them together)
                do {
                    let store = try DiskStore(directory: url)
                    for i in 0..<50 {
                        try store.set(
                            DiskTest.bytes(100, seed: i), for: "k\(i)", in: "ns", storedAt: Date(),
                            expiresAt: Date().addingTimeInterval(3_600))
                    }
                }
                let connection = try _SQLiteConnection(path: url.appendingPathComponent("index.sqlite").path)
                try connection.execute(
                    """
                    PRAGMA writable_schema = ON;
                    DELETE FROM sqlite_schema WHERE name IN ('entries_by_expiry', 'entries_with_files');
                    PRAGMA writable_schema = OFF;
                    """)
                connection.close()

                // When it is verified
                let text = try Self.hoard("verify", url.path)
                let json = try Self.hoard("verify", url.path, "--json")

                // Then each problem is one line with its reason, and the summary counts them
                #expect(text.status == 1)
                let lines = text.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                #expect(lines.count >= 3, "\(text.output)")
                for line in lines.dropLast() {
                    #expect(line.hasPrefix("damagedIndex  SQLite's integrity check: "), "\(text.output)")
                    #expect(!line.contains("*** in database"), "\(text.output)")
                }
                #expect(lines.last == "50 entries checked, \(lines.count - 1) problems", "\(text.output)")
                #expect(json.status == 1)
                let damage = try Self.object(json.output)["damage"] as? [[String: Any]] ?? []
                #expect(damage.count == lines.count - 1)
                for item in damage {
                    let detail = item["detail"] as? String ?? ""
                    #expect(!detail.contains("\n") && !detail.contains("*** in database"), "\(detail)")
                }
            }
        }

        @Test(
            "verify lists temporary files a killed write left, exits 0 as the store is healthy; --repair deletes old ones"
        )
        func verifyTemporaryFiles() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a healthy store with the temporary files of two killed writes,
                // one an hour old, one just written
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                    try store.set(DiskTest.bytes(100), for: "photo", in: "images", storedAt: Date(), expiresAt: nil)
                }
                let old = url.appendingPathComponent("blobs/0123456789abcdef-0123456789abcdef.tmp")
                let young = url.appendingPathComponent("blobs/fedcba9876543210-fedcba9876543210.tmp")
                try Data(count: 500).write(to: old)
                try Data(count: 500).write(to: young)
                try FileManager.default.setAttributes(
                    [.modificationDate: Date().addingTimeInterval(-3_600)], ofItemAtPath: old.path)

                // When it is verified
                let text = try Self.hoard("verify", url.path)
                let json = try Self.hoard("verify", url.path, "--json")

                // Then the files are listed, the store is healthy, and the exit status 0
                #expect(text.status == 0, "\(text.output)")
                #expect(text.output.contains("temporaryFile  blobs/0123456789abcdef-0123456789abcdef.tmp"))
                #expect(
                    text.output.hasSuffix("1 entries checked, no damage; 2 temporary files of interrupted writes\n"))
                #expect(json.status == 0)
                let object = try Self.object(json.output)
                #expect(object["healthy"] as? Bool == true)
                let reasons = (object["damage"] as? [[String: Any]] ?? []).compactMap { $0["reason"] as? String }
                #expect(reasons == ["temporaryFile", "temporaryFile"])

                // When it is repaired: the old file is deleted, the young one kept (it may
                // be a write in flight), and the exit status is 0
                let repaired = try Self.hoard("verify", url.path, "--repair")
                #expect(repaired.status == 0, "\(repaired.output)")
                #expect(!FileManager.default.fileExists(atPath: old.path))
                #expect(FileManager.default.fileExists(atPath: young.path))
                #expect(
                    repaired.output.hasSuffix(
                        "1 entries checked, no damage; 2 temporary files of interrupted writes (1 deleted, 1 kept)\n"),
                    "\(repaired.output)")
            }
        }

        @Test(
            "A store whose index header is damaged is reported as damaged, with what to do; a foreign database is not")
        func damagedHeader() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store whose index's first 16 bytes are overwritten
                do {
                    let store = try DiskStore(directory: url)
                    try store.set("hello", for: "greeting")
                }
                let index = url.appendingPathComponent("index.sqlite")
                let handle = try FileHandle(forWritingTo: index)
                try handle.write(contentsOf: Data(repeating: 0xEE, count: 16))
                try handle.close()

                // When it is opened, verified and repaired
                let opening = #expect(throws: HoardError.self) { try DiskStore(directory: url) }
                let verify = try Self.hoard("verify", url.path)
                let repair = try Self.hoard("verify", url.path, "--repair")

                // Then each says the store's index is damaged and what to do
                #expect(opening?.code == .storeDamaged, "\(String(describing: opening))")
                #expect(opening?.message.contains("its SQLite header is damaged") == true)
                for result in [verify, repair] {
                    #expect(result.status != 0)
                    #expect(result.errors.contains("is damaged and cannot be opened"), "\(result.errors)")
                    #expect(result.errors.contains("delete the store's directory (\(url.path))"), "\(result.errors)")
                    #expect(!result.errors.contains("not a Hoard store"))
                }

                // And another program's database with the same name is still not a store
                try FileManager.default.removeItem(at: url)
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
                let foreign = try _SQLiteConnection(path: index.path, create: true)
                try foreign.execute(
                    "PRAGMA application_id = 7; CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hi')")
                foreign.close()
                let refused = #expect(throws: HoardError.self) { try DiskStore(directory: url) }
                #expect(refused?.code == .notAStore)
            }
        }
    }
}
