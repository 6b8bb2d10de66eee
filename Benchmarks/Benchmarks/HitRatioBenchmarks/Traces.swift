import Foundation

/// The request traces committed in the repository's `Tests/Traces` folder:
/// 1,000,000 little-endian `UInt32` keys each (that folder's README.md describes them
/// and gives the reference figures).
enum Traces {
    /// Requests in every trace.
    static let requests = 1_000_000

    /// The folder holding the traces: `$HOARD_TRACES` if set (raw `.u32` files, as
    /// `scripts/expand-traces` writes them), otherwise the repository's `Tests/Traces`
    /// (found by walking up from this source file to the folder that holds
    /// `Benchmarks/Package.swift`).
    static func directory() throws(TraceError) -> URL {
        if let override = ProcessInfo.processInfo.environment["HOARD_TRACES"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Benchmarks/Package.swift").path) {
                return folder.appendingPathComponent("Tests/Traces", isDirectory: true)
            }
            folder = folder.deletingLastPathComponent()
        }
        throw TraceError(message: "no repository root (a folder holding Benchmarks/Package.swift) above \(#filePath)")
    }

    /// The keys of trace `name`. `loop` is generated (key `i % 100_000` for request `i`);
    /// `$HOARD_TRACES/<name>.u32` is read as is; otherwise `Tests/Traces/<name>.u32.gz`
    /// is expanded with `gzip -dc`.
    /// - Throws: `TraceError` when the file is missing, gzip fails, or the trace is not
    ///   1,000,000 keys.
    static func load(_ name: String) throws(TraceError) -> [UInt32] {
        if name == "loop" {
            return (0..<requests).map { UInt32($0 % 100_000) }
        }
        let folder = try directory()
        let data: Data
        if ProcessInfo.processInfo.environment["HOARD_TRACES"].map({ !$0.isEmpty }) ?? false {
            let url = folder.appendingPathComponent("\(name).u32")
            guard let contents = FileManager.default.contents(atPath: url.path) else {
                throw TraceError(message: "\(url.path) not found (HOARD_TRACES names its folder)")
            }
            data = contents
        } else {
            data = try gunzip(folder.appendingPathComponent("\(name).u32.gz"))
        }
        guard data.count == requests * 4 else {
            throw TraceError(message: "trace \(name) is \(data.count) bytes, not \(requests * 4)")
        }
        return data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { i in
                UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
            }
        }
    }

    /// The bytes of the gzip file at `url`, expanded by `gzip -dc`.
    private static func gunzip(_ url: URL) throws(TraceError) -> Data {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw TraceError(message: "\(url.path) not found")
        }
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["gzip", "-dc", url.path]
        let output = Pipe()
        gzip.standardOutput = output
        do {
            try gzip.run()
        } catch {
            throw TraceError(message: "cannot run gzip -dc \(url.path): \(error)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        gzip.waitUntilExit()
        guard gzip.terminationStatus == 0 else {
            throw TraceError(message: "gzip -dc \(url.path) exited with status \(gzip.terminationStatus)")
        }
        return data
    }
}

struct TraceError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
