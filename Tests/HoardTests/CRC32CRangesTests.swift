import Foundation
import Testing

@testable import Hoard

@Suite("CRC-32C of ranges, joined from prefixes")
struct CRC32CRangesTests {
    /// Lengths and offsets around the places the joining code changes course: empty,
    /// one byte, the prefix stride and the direct-length limit, and unaligned ones.
    static let edges = [
        0, 1, 2, 7, 8, 9, 255, 256, 257, 511, 512, 513, 514, 767, 768, 769, 1_023, 1_024, 1_025, 4_095, 4_099,
    ]

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    @Test("combine(checksum(a), checksum(b), b.count) is the checksum of a followed by b, for every implementation")
    func combineMatchesConcatenation() {
        // Given random bytes, split at many places
        let data = Self.random(9_000, seed: 11)
        var generator = SplitMix64(seed: 12)
        let splits =
            Self.edges.flatMap { first in Self.edges.map { (first, $0) } }
            + (0..<200).map { _ in (Int(generator.next() % 4_500), Int(generator.next() % 4_500)) }
        for implementation in _CRC32C.implementationNames.indices {
            func crc(_ bytes: ArraySlice<UInt8>) -> UInt32 {
                bytes.withUnsafeBytes { _CRC32C.update(implementation: implementation, 0, $0) }
            }
            for (first, second) in splits {
                // When the checksums of the two parts are combined
                let a = data[0..<first]
                let b = data[first..<(first + second)]
                let combined = _CRC32C.combine(crc(a), crc(b), secondCount: second)

                // Then they give the checksum of the whole
                #expect(combined == crc(data[0..<(first + second)]), "\(first) then \(second) bytes")
            }
        }
        #expect(_CRC32C.shift(0x1234_5678, byZeroBytes: 0) == 0x1234_5678)
        #expect(_CRC32C.shift(0, byZeroBytes: 12_345) == 0)
        // A shift by n zero bytes is what continuing over n zero bytes adds.
        let zeros = [UInt8](repeating: 0, count: 100_003)
        let seed: UInt32 = 0xCAFE_F00D
        let continued = zeros.withUnsafeBytes { _CRC32C.update(seed, $0) }
        let onlyZeros = zeros.withUnsafeBytes { _CRC32C.checksum($0) }
        #expect(_CRC32C.shift(seed, byZeroBytes: zeros.count) ^ onlyZeros == continued)
        // Shifts compose, also by counts with many hexadecimal digits.
        var generator2 = SplitMix64(seed: 13)
        for _ in 0..<200 {
            let crc = UInt32(truncatingIfNeeded: generator2.next())
            let first = Int(generator2.next() >> 4)
            let second = Int(generator2.next() >> 4)
            let composed = _CRC32C.shift(_CRC32C.shift(crc, byZeroBytes: first), byZeroBytes: second)
            #expect(composed == _CRC32C.shift(crc, byZeroBytes: first + second), "\(first) then \(second)")
        }
    }

    @Test("Every range, empty, one byte, unaligned or around the stride, checksums as the bytes do directly")
    func rangesMatchDirect() {
        // Given random bytes with a length that is not a multiple of the stride
        let data = Self.random(5 * _CRC32CRanges.stride * 4 + 37, seed: 21)
        var ranges = _CRC32CRanges(data)
        var generator = SplitMix64(seed: 22)
        var cases: [Range<Int>] = []
        for start in Self.edges where start <= data.count {
            for length in Self.edges where start + length <= data.count { cases.append(start..<(start + length)) }
        }
        for _ in 0..<1_000 {
            let start = Int(generator.next() % UInt64(data.count + 1))
            let length = Int(generator.next() % UInt64(data.count - start + 1))
            cases.append(start..<(start + length))
        }
        cases += [0..<data.count, data.count..<data.count, (data.count - 1)..<data.count, 0..<0]
        // Shuffled, so prefixes are stored in no particular order.
        var shuffler = SplitMix64(seed: 23)
        cases.shuffle(using: &shuffler)

        for range in cases {
            // When a range is checksummed, continuing a random checksum
            let seed = UInt32(truncatingIfNeeded: generator.next())
            let joined = ranges.update(seed, range)

            // Then it is what every implementation gives over the bytes
            for implementation in _CRC32C.implementationNames.indices {
                let direct = data[range].withUnsafeBytes { _CRC32C.update(implementation: implementation, seed, $0) }
                #expect(joined == direct, "\(range) with \(_CRC32C.implementationNames[implementation])")
            }
        }
        #expect(ranges.update(0, 0..<9) == bitwiseCRC32C(data[0..<9]))
        #expect(ranges.update(0, 3..<1_500) == bitwiseCRC32C(data[3..<1_500]))
    }

    @Test("Once the prefixes are stored, a range of any length checksums at most maximumBytesPerRange bytes")
    func boundedWorkPerRange() {
        // Given ranges of 1 MiB of bytes whose prefixes were all stored by one range
        let data = Self.random(1 << 20, seed: 31)
        var ranges = _CRC32CRanges(data)
        _ = ranges.update(0, 1..<data.count)
        #expect(ranges.checksummedBytes <= data.count + _CRC32CRanges.maximumBytesPerRange)

        // When long ranges are checksummed, each from a different offset
        var generator = SplitMix64(seed: 32)
        for _ in 0..<2_000 {
            let start = Int(generator.next() % UInt64(data.count / 2))
            let before = ranges.checksummedBytes
            let joined = ranges.update(0, start..<data.count)

            // Then each costs a bounded checksum, not the length of the range
            #expect(ranges.checksummedBytes - before <= _CRC32CRanges.maximumBytesPerRange)
            if start % 97 == 0 { #expect(joined == data[start...].withUnsafeBytes { _CRC32C.checksum($0) }) }
        }
    }
}
