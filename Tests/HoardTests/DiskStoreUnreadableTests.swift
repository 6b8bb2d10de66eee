import Foundation
import Hoard
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskStoreSuites {
    /// A value file the process may not read, seen through `hoard verify` run as a user
    /// without the permission (as root, the test runs the tool as `nobody` with
    /// `setpriv`, since root reads any file).
    @Suite("DiskStore: a value file that cannot be read", .timeLimit(.minutes(2)))
    struct DiskStoreUnreadableTests {
        /// Runs the `hoard` tool with `arguments` as a user that cannot read `hidden`:
        /// as root, the tool runs as `nobody`, who is given the store at `url` except
        /// `hidden` (root reads any file); otherwise as this user. `hidden` is made
        /// mode 0 for the call.
        static func hoardWithout(
            _ hidden: String, inStore url: URL, _ arguments: [String]...
        ) throws -> [(status: Int32, output: String, errors: String)] {
            var command = [try DiskTest.executable(named: "hoard").path]
            if geteuid() == 0 {
                for path in [url.deletingLastPathComponent().path, url.path] { chmod(path, 0o755) }
                let owned = try FileManager.default.subpathsOfDirectory(atPath: url.path).map {
                    url.appendingPathComponent($0).path
                }
                for path in [url.path] + owned { chown(path, 65_534, 65_534) }
                chown(hidden, 0, 0)
                command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
            }
            var mode = stat()
            stat(hidden, &mode)
            chmod(hidden, 0)
            defer { chmod(hidden, mode.st_mode & 0o777) }
            return try arguments.map {
                try DiskTest.run(URL(fileURLWithPath: command[0]), Array(command.dropFirst()) + $0)
            }
        }

        @Test("verify reports an unreadable value file as unreadableFile, and --repair leaves it")
        func unreadableBlob() throws {
            try DiskTest.withTemporaryDirectory { url in
                // Given a store with a value in a file, and that file unreadable
                let secret = DiskTest.bytes(5_000, seed: 7)
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000))
                    try store.set(secret, for: "big", in: "ns")
                    try store.set("small", for: "small", in: "ns")
                }
                let blobs = url.appendingPathComponent("blobs")
                let name = try #require(try FileManager.default.contentsOfDirectory(atPath: blobs.path).first)
                let blob = blobs.appendingPathComponent(name).path

                // When verify runs (and repairs) as a user that cannot read it
                let runs = try Self.hoardWithout(
                    blob, inStore: url, ["verify", url.path, "--json"], ["verify", url.path, "--repair"])
                let (checked, repaired) = (runs[0], runs[1])

                // Then the file is reported as unreadable, not damaged, and is still there
                #expect(checked.status == 1, "\(checked.output) \(checked.errors)")
                #expect(checked.output.contains("\"reason\":\"unreadableFile\""), "\(checked.output)")
                #expect(checked.output.contains("cannot be read"))
                #expect(repaired.output.contains("unreadableFile"), "\(repaired.output) \(repaired.errors)")
                #expect(repaired.status == 1, "a file that cannot be read is not repaired")
                #expect(FileManager.default.fileExists(atPath: blob))
                let store = try DiskStore(directory: url)
                #expect(try store.value(for: "big", as: Data.self, in: "ns") == secret)
            }
        }

        @Test("A store this user may not write says so, not that its format record is unreadable")
        func readOnlyStore() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url)
                    try store.set("value", for: "k", in: "ns")
                }
                let hoard = try DiskTest.executable(named: "hoard")
                var command = [hoard.path]
                let paths =
                    [url.path]
                    + (try FileManager.default.subpathsOfDirectory(atPath: url.path)).map {
                        url.appendingPathComponent($0).path
                    }
                if geteuid() == 0 {
                    // Root may write anything: the tool runs as nobody, who may read but not write.
                    chmod(url.deletingLastPathComponent().path, 0o755)
                    for path in paths { chmod(path, path == url.path || path.hasSuffix("blobs") ? 0o755 : 0o644) }
                    command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", hoard.path]
                } else {
                    for path in paths { chmod(path, path == url.path || path.hasSuffix("blobs") ? 0o555 : 0o444) }
                }
                defer { for path in paths { chmod(path, path == url.path || path.hasSuffix("blobs") ? 0o700 : 0o600) } }
                let stats = try DiskTest.run(
                    URL(fileURLWithPath: command[0]), Array(command.dropFirst()) + ["stats", url.path])
                #expect(stats.status != 0)
                #expect(stats.errors.contains("cannot be opened by this user"), "\(stats.errors)")
                #expect(!stats.errors.contains("format record"), "\(stats.errors)")
            }
        }

        @Test("stats says the size on disk is unknown when the store's files cannot be listed, instead of 0 B")
        func unlistableBlobs() throws {
            try DiskTest.withTemporaryDirectory { url in
                do {
                    let store = try DiskStore(directory: url, configuration: .init(spillThreshold: 1_000))
                    try store.set(DiskTest.bytes(5_000, seed: 3), for: "big", in: "ns")
                }
                let blobs = url.appendingPathComponent("blobs").path
                let runs = try Self.hoardWithout(
                    blobs, inStore: url, ["stats", url.path], ["stats", url.path, "--json"])
                let (stats, json) = (runs[0], runs[1])
                #expect(stats.status == 0, "\(stats.errors)")
                #expect(stats.output.contains("entries    1"))
                #expect(stats.output.contains("on disk    unknown"), "\(stats.output)")
                #expect(stats.errors.contains("cannot measure the store's size on disk"), "\(stats.errors)")
                #expect(json.output.contains("\"bytesOnDisk\":null"), "\(json.output)")
            }
        }
    }
}
