import Foundation

/// The request traces in `shared/traces`: 1,000,000 little-endian `UInt32` keys
/// each (see that folder's README.md).
enum Traces {
    /// The folder holding the `.u32` files: `$HOARD_TRACES` if set, otherwise
    /// `../shared/traces` beside the repository root (found by walking up from this
    /// source file to the folder that holds `Benchmarks/Package.swift`), otherwise
    /// `../../shared/traces` from the current directory (the Benchmarks package).
    static func directory() -> URL {
        if let override = ProcessInfo.processInfo.environment["HOARD_TRACES"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        let fileManager = FileManager.default
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if fileManager.fileExists(atPath: folder.appendingPathComponent("Benchmarks/Package.swift").path) {
                return folder.deletingLastPathComponent().appendingPathComponent("shared/traces", isDirectory: true)
            }
            folder = folder.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: fileManager.currentDirectoryPath, isDirectory: true)
            .appendingPathComponent("../../shared/traces", isDirectory: true)
            .standardizedFileURL
    }

    /// The keys of trace `name` (`zipf1.0` reads `zipf1.0.u32`).
    /// - Throws: `TraceError` when the file is missing or not a whole number of keys.
    static func load(_ name: String) throws(TraceError) -> [UInt32] {
        let url = directory().appendingPathComponent("\(name).u32")
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw TraceError(message: "\(url.path) not found (set HOARD_TRACES to its folder)")
        }
        guard data.count % 4 == 0 else {
            throw TraceError(message: "\(url.path) is \(data.count) bytes, not a multiple of 4")
        }
        return data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { i in
                UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
            }
        }
    }
}

struct TraceError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
