import Foundation
import Hoard

/// A fresh directory under the system's temporary directory, removed when `body`
/// returns or throws.
func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("hoard-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// The async form of ``withTemporaryDirectory(_:)``.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("hoard-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

/// Raw-bytes logs for tests: messages are `Data`, stored as they are.
func rawLog(_ url: URL, maximumBytes: Int, overwrites: Bool, durability: MessageLog<Data>.Durability = .none) throws
    -> MessageLog<Data>
{
    try MessageLog<Data>(
        fileURL: url, maximumBytes: maximumBytes, overwritesOldMessages: overwrites, durability: durability,
        codec: .cacheValue)
}

/// A message that says who wrote it: `writer` and `sequence` in 8 bytes each, then
/// `padding` bytes derived from both, so a test can check a message is one that was
/// appended, whole.
func taggedMessage(writer: Int, sequence: Int, padding: Int) -> Data {
    var data = Data()
    withUnsafeBytes(of: UInt64(writer).littleEndian) { data.append(contentsOf: $0) }
    withUnsafeBytes(of: UInt64(sequence).littleEndian) { data.append(contentsOf: $0) }
    for i in 0..<padding { data.append(UInt8(truncatingIfNeeded: writer &* 31 &+ sequence &* 7 &+ i)) }
    return data
}

/// The writer and sequence of a ``taggedMessage(writer:sequence:padding:)``, or `nil`
/// when the bytes are not one (wrong length, wrong padding).
func tag(of data: Data) -> (writer: Int, sequence: Int)? {
    guard data.count >= 16 else { return nil }
    let bytes = [UInt8](data)
    func word(_ at: Int) -> Int {
        Int(bytes[at..<at + 8].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }.littleEndian)
    }
    let writer = word(0)
    let sequence = word(8)
    guard taggedMessage(writer: writer, sequence: sequence, padding: data.count - 16) == data else { return nil }
    return (writer, sequence)
}

/// The file's bytes.
func bytes(of url: URL) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: url))
}

/// CRC-32C, bit by bit (the header checksum, computed independently of the library).
func bitwiseCRC32C(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
    }
    return ~crc
}

/// The bytes of a log file that another instance may be writing, as a crash would
/// leave them: read until the 64-byte header checks out.
///
/// The copy takes no lock (a crash image is the file mid-lease), so it can race the
/// lease timer's header write: a read that overlaps a `pwrite` may see half of the
/// old header and half of the new one, which no crash leaves (the kernel finishes a
/// write it started). Such a read fails the header's checksum and is read again; the
/// header is written only when a lease is taken or let go, so a second read sees it
/// whole. After 1,000 torn reads in a row it gives up and returns the last.
func crashImage(of url: URL) throws -> [UInt8] {
    var file: [UInt8] = []
    for _ in 0..<1_000 {
        file = try bytes(of: url)
        guard file.count >= 64 else { return file }
        let stored = file[60..<64].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
        if bitwiseCRC32C(file[0..<60]) == stored { return file }
    }
    return file
}

/// The bytes of `log`'s file once the log has let its append lease go (any read does).
///
/// While an instance holds the lease, the file's header is a checkpoint with the
/// lease flag set, and a timer about a millisecond later writes the exact header: a
/// comparison of bytes taken across that moment would see the lease's own write.
/// Taken at rest on both sides, it sees only what an operation left.
func restingBytes(of url: URL, after log: MessageLog<Data>) throws -> [UInt8] {
    _ = try log.messages()
    return try bytes(of: url)
}

/// Appends `lost` through a second instance that then "crashes" with only the
/// append's header in the file: the record's bytes are zeros, as a crash between
/// the header and the record leaves them.
func tearAppend(of lost: Data, to url: URL, maximumBytes: Int) throws {
    let before = try bytes(of: url)
    do {
        let crashing = try rawLog(url, maximumBytes: maximumBytes, overwrites: true)
        try crashing.append(lost)
    }
    var torn = try bytes(of: url)
    torn.removeSubrange(before.count...)
    try write(torn + [UInt8](repeating: 0, count: 8 + lost.count), to: url)
}

/// Replaces the file's bytes (without `Data.write(to:)`, which syncs on Linux and
/// would make the damage tests wait on the disk).
func write(_ bytes: [UInt8], to url: URL) throws {
    if !FileManager.default.fileExists(atPath: url.path) {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    }
    let handle = try FileHandle(forWritingTo: url)
    defer { try? handle.close() }
    try handle.truncate(atOffset: 0)
    try handle.write(contentsOf: bytes)
}

/// A model of the documented placement rule for a log that overwrites: a record of
/// `8 + payload` bytes goes at the end of the newest record when it fits before the
/// budget, otherwise at offset 64; the oldest records go, oldest first, until none
/// overlaps it. An empty log starts at 64. Without overwrite, a record that does not fit
/// is refused.
struct LogModel {
    let maximumBytes: Int
    let overwrites: Bool
    private(set) var records: [(offset: Int, size: Int, message: Data)] = []
    private var next = 64

    init(maximumBytes: Int, overwrites: Bool) {
        self.maximumBytes = maximumBytes
        self.overwrites = overwrites
    }

    var messages: [Data] { records.map(\.message) }

    /// Appends like the log; returns `false` when the log would refuse it.
    mutating func append(_ message: Data) -> Bool {
        let size = 8 + message.count
        guard size <= maximumBytes - 64 else { return false }
        var position = records.isEmpty ? 64 : next
        if position + size > maximumBytes {
            guard overwrites else { return false }
            position = 64
        }
        let range = position..<(position + size)
        while records.contains(where: { range.overlaps($0.offset..<($0.offset + $0.size)) }) {
            records.removeFirst()
        }
        records.append((position, size, message))
        next = position + size
        return true
    }

    /// Drops the newest record, as opening a log does when a crash tore it (the
    /// records it evicted stay evicted).
    mutating func dropLast() {
        records.removeLast()
        next = records.last.map { $0.offset + $0.size } ?? 64
    }
}
