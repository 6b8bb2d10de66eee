import Foundation
import Hoard
import Testing

extension DiskStoreSuites {
    /// The `hoard` store commands, run as the built executable on real stores.
    @Suite("DiskStore through the hoard command-line tool", .timeLimit(.minutes(3)))
    struct DiskStoreCLITests {
        static func hoard(_ arguments: String...) throws -> (status: Int32, output: String, errors: String) {
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
                #expect(stats.output.contains("\"default\"  1 entries"))

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

        @Test("verify lists damage with its key and exits 1; --repair removes it")
        func verifyDamage() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 10))
                    try store.set(DiskTest.bytes(100), for: "lost photo", in: "images", storedAt: Date(), expiresAt: nil)
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

        @Test("hoard demo: a second run finds what the first stored in the default location")
        func demoRemembers() throws {
            try DiskTest.withTemporaryDirectory { url in
                let environment = ["XDG_CACHE_HOME": url.path]
                let first = try DiskTest.run(DiskTest.executable(named: "hoard"), ["demo"], environment: environment)
                #expect(first.status == 0, "\(first.errors)")
                #expect(first.output.contains("DiskStore at \(url.path)/hoard-demo"))
                #expect(first.output.contains("found nothing: this is the first run"))
                #expect(first.output.contains("get   notes/large -> 48 KiB, intact"))
                #expect(first.output.contains("get   token -> miss"))
                let second = try DiskTest.run(DiskTest.executable(named: "hoard"), ["demo"], environment: environment)
                #expect(second.status == 0)
                #expect(second.output.contains("found visits = 1, stored by an earlier run"))
                #expect(second.output.contains("set   visits = 2"))
                #expect(FileManager.default.fileExists(atPath: url.appendingPathComponent("hoard-demo/index.sqlite").path))
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
    }
}
