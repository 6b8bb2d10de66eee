import CHoardCRC32C

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum the message
/// log and the disk store use.
///
/// The same checksum as iSCSI, ext4 and LevelDB: `checksum("123456789")` is
/// `0xE3069283`. ``update(_:_:)`` continues a checksum, so
/// `update(update(0, a), b) == checksum(a + b)`.
///
/// The work is done by the `CHoardCRC32C` C target, by the fastest implementation
/// the machine runs, found out once at run time: on x86-64 with AVX-512
/// VPCLMULQDQ, carry-less multiplies folding 256 bytes a round (inputs of 256 bytes
/// or more; about three times the instruction's speed on 100 KiB); otherwise the
/// CPU's CRC-32C instruction (SSE4.2 on x86-64, the ARMv8 CRC extension on arm64);
/// otherwise portable C (slicing by 8). All give the same checksum.
enum _CRC32C {
    /// The checksum of `bytes`.
    @inline(__always)
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        hoard_crc32c_update(0, bytes.baseAddress, bytes.count)
    }

    /// The checksum of whatever `crc` was the checksum of, followed by `bytes`.
    @inline(__always)
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        hoard_crc32c_update(crc, bytes.baseAddress, bytes.count)
    }

    /// ``update(_:_:)`` in portable code, whatever the CPU has (for tests that
    /// compare the two).
    static func portableUpdate(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        hoard_crc32c_update_portable(crc, bytes.baseAddress, bytes.count)
    }

    /// The implementation ``update(_:_:)`` uses (`"avx512-vpclmulqdq"`, `"sse4.2"`,
    /// `"armv8-crc"`), or `nil` when it uses the portable code.
    static var hardwareName: String? {
        hoard_crc32c_hardware_name().map { String(cString: $0) }
    }

    /// The names of the implementations this machine runs, slowest first: the
    /// portable code, then those the CPU allows; ``update(_:_:)`` uses the last.
    static var implementationNames: [String] {
        (0..<hoard_crc32c_implementation_count()).map { String(cString: hoard_crc32c_implementation_name($0)) }
    }

    /// ``update(_:_:)`` by the implementation at `index` in ``implementationNames``
    /// (for tests that compare each with the portable code).
    static func update(implementation index: Int, _ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        hoard_crc32c_update_with(index, crc, bytes.baseAddress, bytes.count)
    }

    /// The checksum of a 4-byte little-endian integer.
    static func checksum(of value: UInt32) -> UInt32 {
        withUnsafeBytes(of: value.littleEndian) { checksum($0) }
    }

    /// `crc` continued over the UTF-8 bytes of `string`.
    static func update(_ crc: UInt32, _ string: String) -> UInt32 {
        var string = string
        return string.withUTF8 { update(crc, UnsafeRawBufferPointer($0)) }
    }
}
