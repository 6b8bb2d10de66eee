extension _CRC32C {
    /// The checksum of A followed by B, from the checksum of A, the checksum of B and
    /// B's length, without B's bytes.
    ///
    /// `combine(checksum(a), checksum(b), secondCount: b.count) == checksum(a + b)`, for
    /// any bytes (the initial value and the final inversion of CRC-32C cancel out).
    ///
    /// - Complexity: O(log `secondCount`): one multiplication modulo the polynomial per
    ///   set bit of `secondCount`.
    static func combine(_ first: UInt32, _ second: UInt32, secondCount: Int) -> UInt32 {
        shift(first, byZeroBytes: secondCount) ^ second
    }

    /// `crc` times x^(8 × `count`) modulo the polynomial: the part a checksum of A
    /// contributes to the checksum of A followed by `count` more bytes, whatever they
    /// are.
    ///
    /// So `shift(checksum(a), byZeroBytes: b.count) ^ checksum(b) == checksum(a + b)`
    /// (``combine(_:_:secondCount:)``), and the function is linear:
    /// `shift(x ^ y, byZeroBytes: n) == shift(x, byZeroBytes: n) ^ shift(y, byZeroBytes: n)`.
    ///
    /// - Parameter count: At least 0.
    /// - Complexity: O(log `count`): one multiplication per set bit of `count`.
    static func shift(_ crc: UInt32, byZeroBytes count: Int) -> UInt32 {
        precondition(count >= 0, "a CRC-32C cannot be shifted by a negative number of bytes")
        var crc = crc
        var remaining = UInt(count)
        var power = 0
        while remaining != 0 && crc != 0 {
            if remaining & 1 != 0 { crc = multiply(crc, zeroBytePowers[power]) }
            remaining >>= 1
            power += 1
        }
        return crc
    }

    /// x^(8 × 2^k) modulo the polynomial for k in 0..<64 (bit-reflected, as the
    /// register is: bit 31 is x^0): the shifts by 1, 2, 4, … zero bytes.
    private static let zeroBytePowers: [UInt32] = {
        var powers: [UInt32] = [0x0080_0000]  // x^8
        for _ in 1..<64 { powers.append(multiply(powers[powers.count - 1], powers[powers.count - 1])) }
        return powers
    }()

    /// `a` times `b` modulo the polynomial, both bit-reflected (bit 31 is x^0).
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var a = a
        var b = b
        var product: UInt32 = 0
        while a != 0 {
            if a & 0x8000_0000 != 0 { product ^= b }
            a <<= 1
            b = b & 1 != 0 ? (b >> 1) ^ 0x82F6_3B78 : b >> 1
        }
        return product
    }
}
