import Benchmark
import Foundation
import Hoard

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `MessageLog<Data>` (codec `.cacheValue`, which passes bytes through; overwriting)
/// against plain file I/O measured in the same run, so results compare as ratios.
/// Every benchmark gets a fresh temporary directory in its setup, removed in its
/// teardown.
///
/// - `append 64B`: 1,000 single appends per iteration (`.kilo`: time per message),
///   durability `.none`. Three baselines, each a ring of 72-byte records (message plus
///   the log's 8-byte prefix) in a plain file:
///   - `write(2)`: one `pwrite` per message, nothing else: the floor of any design
///     that persists each message with a system call.
///   - `flock+pwrite+unlock`: the same inside `flock(LOCK_EX)`/`flock(LOCK_UN)`: the
///     floor of any design that locks the file per append, which two processes sharing
///     a file need.
///   - `MessageLog's 5 calls`: the calls an append made before the append lease (lock,
///     `pread` of the 64-byte header, `pwrite` of its 40 changing bytes, `pwritev` of
///     prefix and payload, unlock) with no work between them: the floor of that design.
///     With the lease an append makes one `pwritev`, so `write(2)` is its floor.
/// - `append 64B JSON`: 1,000 appends of a `Codable` struct whose JSON is 68 bytes
///   through the default `.json` codec; `encode 64B JSON` encodes the same 1,000
///   values with `ValueCodec.json` alone, so the two together say how much of an
///   append of a `Codable` message is the codec.
/// - `append 64B batch100`: ten `append(contentsOf:)` batches of 100 per iteration
///   (`.kilo`). Baseline: ten `write(2)` calls of 7,200 bytes.
/// - `append 64B fsync`: one append per iteration, durability `.fsync`. Baseline:
///   one 72-byte `write(2)` plus `fdatasync`.
/// - `read-all 64MiB`: `messages()` of a full 64 MiB log (about 932,000 messages),
///   one per iteration, and `forEachEncodedMessage`, which checks every record but
///   makes no `Data`. Baselines: one `pread` of the file and a walk over its length
///   prefixes (no checksum: the floor of a borrowing read of this format), and a
///   sequential read of the file with `FileHandle` in 1 MiB chunks (the file
///   system's sequential read bandwidth).
let benchmarks: @Sendable () -> Void = {
    registerAppends()
    registerLockedBaselines()
    registerCodecAppends()
    registerReadAll()
}

let messageSize = 64
let message = Data(repeating: 0x42, count: messageSize)
let batch = [Data](repeating: message, count: 100)
let appendBudget = 16 << 20
let readBudget = 64 << 20

/// A fresh directory under the system's temporary directory.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("hoard-bench-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A subject and its directory, handed from a benchmark's setup to its teardown.
final class Fixture<Subject> {
    let subject: Subject
    let directory: URL

    init(subject: Subject, directory: URL) {
        self.subject = subject
        self.directory = directory
    }
}

final class Holder<T> {
    var value: T?
}

func configuration(scaling: BenchmarkScalingFactor, seconds: Int = 2, maxIterations: Int = 1_000_000)
    -> Benchmark.Configuration
{
    .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        units: [.throughput: .count],
        warmupIterations: 3,
        scalingFactor: scaling,
        maxDuration: .seconds(seconds),
        maxIterations: maxIterations
    )
}

/// Registers a benchmark on a subject made in a fresh directory; the teardown
/// closes it (when `close` is given) and removes the directory.
func register<Subject>(
    _ name: String, _ configuration: Benchmark.Configuration,
    make: @escaping (URL) throws -> Subject, close: @escaping (Subject) -> Void = { _ in },
    run: @escaping (Subject) throws -> Void
) {
    let held = Holder<Fixture<Subject>>()
    Benchmark(
        name,
        configuration: configuration,
        closure: { _, fixture in try run(fixture.subject) },
        setup: {
            let directory = try makeTemporaryDirectory()
            let fixture = Fixture(subject: try make(directory), directory: directory)
            held.value = fixture
            return fixture
        },
        teardown: {
            if let fixture = held.value {
                close(fixture.subject)
                try? FileManager.default.removeItem(at: fixture.directory)
            }
            held.value = nil
        }
    )
}

func openLog(in directory: URL, budget: Int, durability: MessageLog<Data>.Durability) throws -> MessageLog<Data> {
    try MessageLog<Data>(
        fileURL: directory.appendingPathComponent("log"), maximumBytes: budget, overwritesOldMessages: true,
        durability: durability, codec: .cacheValue)
}

/// Baseline: a plain file written with `write(2)` at a moving offset that wraps at
/// the budget, like a ring buffer with no header, framing or checksums.
final class PlainFile {
    let descriptor: Int32
    let budget: Int
    var offset = 0
    let record: [UInt8]

    init(in directory: URL, budget: Int) throws {
        descriptor = open(directory.appendingPathComponent("plain").path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
        self.budget = budget
        record = [UInt8](repeating: 0x42, count: messageSize + 8)
    }

    func write(records: Int, sync: Bool) throws {
        let bytes = records * record.count
        if offset + bytes > budget { offset = 0 }
        let chunk = records == 1 ? record : [UInt8]((0..<records).map { _ in record }.joined())
        let written = chunk.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes else { throw CocoaError(.fileWriteUnknown) }
        offset += bytes
        if sync {
            #if canImport(Darwin)
            let synced = fsync(descriptor)
            #else
            let synced = fdatasync(descriptor)
            #endif
            guard synced == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
    }

    func close() {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Darwin)
        _ = Darwin.close(descriptor)
        #endif
    }
}

func registerAppends() {
    register(
        "append 64B: MessageLog", configuration(scaling: .kilo),
        make: { try openLog(in: $0, budget: appendBudget, durability: .none) }
    ) { log in
        for _ in 0..<1_000 { try log.append(message) }
    }
    register(
        "append 64B: baseline write(2)", configuration(scaling: .kilo),
        make: { try PlainFile(in: $0, budget: appendBudget) }, close: { $0.close() }
    ) { file in
        for _ in 0..<1_000 { try file.write(records: 1, sync: false) }
    }
    register(
        "append 64B batch100: MessageLog", configuration(scaling: .kilo),
        make: { try openLog(in: $0, budget: appendBudget, durability: .none) }
    ) { log in
        for _ in 0..<10 { try log.append(contentsOf: batch) }
    }
    register(
        "append 64B batch100: baseline write(2)", configuration(scaling: .kilo),
        make: { try PlainFile(in: $0, budget: appendBudget) }, close: { $0.close() }
    ) { file in
        for _ in 0..<10 { try file.write(records: 100, sync: false) }
    }
    register(
        "append 64B fsync: MessageLog", configuration(scaling: .one, seconds: 3, maxIterations: 300),
        make: { try openLog(in: $0, budget: appendBudget, durability: .fsync) }
    ) { log in
        try log.append(message)
    }
    register(
        "append 64B fsync: baseline write(2)+fdatasync", configuration(scaling: .one, seconds: 3, maxIterations: 300),
        make: { try PlainFile(in: $0, budget: appendBudget) }, close: { $0.close() }
    ) { file in
        try file.write(records: 1, sync: true)
    }
}

/// Appends `messages` messages in batches of 10,000.
func fill(_ log: MessageLog<Data>, messages: Int) throws {
    var appended = 0
    while appended < messages {
        let count = min(10_000, messages - appended)
        try log.append(contentsOf: [Data](repeating: message, count: count))
        appended += count
    }
}

func registerReadAll() {
    let expected = (readBudget - 64) / (messageSize + 8)
    register(
        "read-all 64MiB: MessageLog", configuration(scaling: .one, seconds: 5, maxIterations: 200),
        make: { directory in
            let log = try openLog(in: directory, budget: readBudget, durability: .none)
            try fill(log, messages: expected)
            return log
        }
    ) { log in
        let messages = try log.messages()
        precondition(messages.count >= expected - 1, "the log holds \(messages.count) messages")
        blackHole(messages)
    }
    register(
        "read-all 64MiB: MessageLog forEachEncodedMessage",
        configuration(scaling: .one, seconds: 5, maxIterations: 200),
        make: { directory in
            let log = try openLog(in: directory, budget: readBudget, durability: .none)
            try fill(log, messages: expected)
            return log
        }
    ) { log in
        var count = 0
        var bytes = 0
        try log.forEachEncodedMessage { payload in
            count += 1
            bytes += payload.count
        }
        precondition(count >= expected - 1, "the log holds \(count) messages")
        blackHole(bytes)
    }
    register(
        "read-all 64MiB: baseline pread+walk", configuration(scaling: .one, seconds: 5, maxIterations: 200),
        make: { directory in
            let log = try openLog(in: directory, budget: readBudget, durability: .none)
            try fill(log, messages: expected)
            return directory.appendingPathComponent("log")
        }
    ) { url in
        let count = try preadAndWalk(url)
        precondition(count >= expected - 1, "walked \(count) records")
        blackHole(count)
    }
    register(
        "read-all 64MiB: baseline pread+walk+Data", configuration(scaling: .one, seconds: 5, maxIterations: 200),
        make: { directory in
            let log = try openLog(in: directory, budget: readBudget, durability: .none)
            try fill(log, messages: expected)
            return directory.appendingPathComponent("log")
        }
    ) { url in
        let messages = try preadAndWalk(url, makingData: true)
        precondition(messages.count >= expected - 1, "walked \(messages.count) records")
        blackHole(messages)
    }
    register(
        "read-all 64MiB: baseline FileHandle read", configuration(scaling: .one, seconds: 5, maxIterations: 200),
        make: { directory in
            let url = directory.appendingPathComponent("log")
            let log = try openLog(in: directory, budget: readBudget, durability: .none)
            try fill(log, messages: expected)
            return url
        }
    ) { url in
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var total = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { total += chunk.count }
        precondition(total >= readBudget / 2, "read \(total) bytes")
        blackHole(total)
    }
}

/// Baseline of a borrowing read: one `pread` of the whole file into one buffer, then a
/// walk over its records (length prefix, skip the payload), no checksum, no copy:
/// the least any reader of this format can do.
func preadAndWalk(_ url: URL) throws -> Int {
    var count = 0
    var bytes = 0
    try preadAndWalk(url) { payload in
        count += 1
        bytes &+= payload.count
    }
    blackHole(bytes)
    return count
}

/// Baseline of `messages()`: the same, making one `Data` per message: the least any
/// reader that returns `[Data]` can do.
func preadAndWalk(_ url: URL, makingData: Bool) throws -> [Data] {
    var messages: [Data] = []
    try preadAndWalk(url) { payload in messages.append(Data(payload)) }
    return messages
}

func preadAndWalk(_ url: URL, _ body: (UnsafeRawBufferPointer) -> Void) throws {
    let descriptor = open(url.path, O_RDONLY)
    guard descriptor >= 0 else { throw CocoaError(.fileReadUnknown) }
    defer { _ = close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { throw CocoaError(.fileReadUnknown) }
    let size = Int(info.st_size)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
    defer { buffer.deallocate() }
    var read = 0
    while read < size {
        let got = pread(descriptor, buffer.baseAddress! + read, size - read, off_t(read))
        guard got > 0 else { throw CocoaError(.fileReadUnknown) }
        read += got
    }
    var position = 64
    while size - position >= 8 {
        let length = Int(buffer.loadUnaligned(fromByteOffset: position, as: UInt32.self).littleEndian)
        guard length <= size - position - 8 else { break }
        body(UnsafeRawBufferPointer(rebasing: buffer[(position + 8)..<(position + 8 + length)]))
        position += 8 + length
    }
}
