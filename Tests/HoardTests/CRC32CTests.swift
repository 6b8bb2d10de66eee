import Foundation
import Testing

@testable import Hoard

@Suite("CRC-32C")
struct CRC32CTests {
    static func crc(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { _CRC32C.checksum($0) }
    }

    @Test("Matches the published check value and the iSCSI test vectors (RFC 3720, B.4)")
    func knownVectors() {
        #expect(Self.crc(Array("123456789".utf8)) == 0xE306_9283)
        #expect(Self.crc([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(Self.crc([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(Self.crc(Array(0..<32)) == 0x46DD_794E)
        #expect(Self.crc(Array((0..<32).reversed())) == 0x113F_DB5C)
        #expect(Self.crc([]) == 0)
    }

    @Test("Slicing by 8 agrees with the bitwise definition at every length and alignment, and updates chain")
    func agreesWithBitwise() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        var generator = SplitMix64(seed: 42)
        let data = (0..<300).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        for start in 0..<9 {
            for end in stride(from: start, through: data.count, by: 7) {
                let slice = data[start..<end]
                let fast = slice.withUnsafeBytes { _CRC32C.checksum($0) }
                #expect(fast == bitwise(slice), "bytes \(start)..<\(end)")
                let middle = (start + end) / 2
                let chained = data[middle..<end].withUnsafeBytes {
                    _CRC32C.update(data[start..<middle].withUnsafeBytes { _CRC32C.checksum($0) }, $0)
                }
                #expect(chained == fast)
            }
        }
    }

    @Test("Every implementation this machine runs agrees with the portable code at every length and alignment")
    func implementationsAgreeWithPortable() {
        let names = _CRC32C.implementationNames
        print(
            "CRC-32C: \(names.joined(separator: ", ")) on this machine; updates use \(_CRC32C.hardwareName ?? "portable")"
        )
        #expect(names.first == "portable")
        #expect(_CRC32C.hardwareName == (names.count > 1 ? names.last : nil))
        #if arch(x86_64) || arch(arm64)
        // Every x86-64 and arm64 machine this runs on in CI has the instruction: a
        // detection that fails silently would only show as lost speed.
        #expect(names.count >= 2)
        #endif
        var generator = SplitMix64(seed: 7)
        let data = (0..<4_200).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        // Lengths around the three-stream blocks (3 × 256 and 3 × 8,192 bytes), which the
        // instruction's loop joins with shift tables, and around the folding code's
        // rounds (256 bytes, then 16 at a time, then single bytes).
        let long = (0..<100_003).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let longCounts =
            [255, 256, 257, 271, 272, 511, 512, 513, 767, 768, 769, 1_536, 24_575, 24_576, 24_577]
            + [24_576 + 768 + 9, 49_152, 99_999]
        for implementation in names.indices.dropFirst() {
            for start in 0..<9 {
                for end in stride(from: start, through: data.count, by: 13) {
                    let slice = data[start..<end]
                    let seed = UInt32(truncatingIfNeeded: generator.next())
                    let fast = slice.withUnsafeBytes { _CRC32C.update(implementation: implementation, seed, $0) }
                    let portable = slice.withUnsafeBytes { _CRC32C.portableUpdate(seed, $0) }
                    #expect(fast == portable, "\(names[implementation]): bytes \(start)..<\(end)")
                }
            }
            for count in longCounts {
                for start in [0, 3] {
                    let slice = long[start..<(start + count)]
                    let seed = UInt32(truncatingIfNeeded: generator.next())
                    let fast = slice.withUnsafeBytes { _CRC32C.update(implementation: implementation, seed, $0) }
                    let portable = slice.withUnsafeBytes { _CRC32C.portableUpdate(seed, $0) }
                    #expect(fast == portable, "\(names[implementation]): \(count) bytes from \(start)")
                }
            }
        }
        let dispatched = long.withUnsafeBytes { _CRC32C.update(0x1234_5678, $0) }
        #expect(dispatched == long.withUnsafeBytes { _CRC32C.portableUpdate(0x1234_5678, $0) })
        #expect(Array("123456789".utf8).withUnsafeBytes { _CRC32C.portableUpdate(0, $0) } == 0xE306_9283)
        #expect(_CRC32C.update(0, UnsafeRawBufferPointer(start: nil, count: 0)) == 0)
    }
}
