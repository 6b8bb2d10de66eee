import Benchmark
import Foundation
import Hoard

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a plain-file baseline does per message, besides writing it.
enum Locking {
    /// `flock(LOCK_EX)`, one `pwrite` of the record, `flock(LOCK_UN)`.
    case lockAndWrite
    /// The system calls of a MessageLog append: lock, `pread` of 64 header bytes,
    /// `pwrite` of 40 header bytes, `pwritev` of the 8-byte prefix and the payload,
    /// unlock.
    case messageLogCalls
}

extension PlainFile {
    /// Writes one 72-byte record at the ring's next offset, with the calls `locking`
    /// says around it.
    func write(locking: Locking) throws {
        if offset + record.count > budget { offset = 64 }
        guard flock(descriptor, LOCK_EX) == 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { flock(descriptor, LOCK_UN) }
        let written: Int
        switch locking {
        case .lockAndWrite:
            written = record.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        case .messageLogCalls:
            written = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { header in
                guard pread(descriptor, header.baseAddress, 64, 0) >= 0,
                    pwrite(descriptor, header.baseAddress! + 24, 40, 24) == 40
                else { return -1 }
                return record.withUnsafeBytes { bytes in
                    var vectors = [
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: 8),
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress! + 8), iov_len: 64),
                    ]
                    return pwritev(descriptor, &vectors, 2, off_t(offset))
                }
            }
        }
        guard written == record.count else { throw CocoaError(.fileWriteUnknown) }
        offset += record.count
    }
}

func registerLockedBaselines() {
    register(
        "append 64B: baseline flock+pwrite+unlock", configuration(scaling: .kilo),
        make: { try PlainFile(in: $0, budget: appendBudget) }, close: { $0.close() }
    ) { file in
        for _ in 0..<1_000 { try file.write(locking: .lockAndWrite) }
    }
    register(
        "append 64B: baseline MessageLog's 5 calls", configuration(scaling: .kilo),
        make: { try PlainFile(in: $0, budget: appendBudget) }, close: { $0.close() }
    ) { file in
        for _ in 0..<1_000 { try file.write(locking: .messageLogCalls) }
    }
}

/// A message whose JSON is 68 bytes.
struct Event: Codable, Sendable {
    var name: String
    var sequence: Int
    var level: Int
}

let event = Event(name: "user tapped the share button", sequence: 1_000_000, level: 3)

func registerCodecAppends() {
    register(
        "append 64B JSON: MessageLog<Event>", configuration(scaling: .kilo),
        make: { directory in
            try MessageLog<Event>(
                fileURL: directory.appendingPathComponent("log"), maximumBytes: appendBudget,
                overwritesOldMessages: true)
        }
    ) { log in
        for _ in 0..<1_000 { try log.append(event) }
    }
    register(
        "encode 64B JSON: ValueCodec.json alone", configuration(scaling: .kilo),
        make: { _ in ValueCodec<Event>.json }
    ) { codec in
        for _ in 0..<1_000 {
            let data = try codec.encode(event)
            precondition(data.count == 68, "the event encodes to \(data.count) bytes")
            blackHole(data)
        }
    }
}
