extension _CRC32C {
    /// The checksum of A followed by B, from the checksum of A, the checksum of B and
    /// B's length, without B's bytes.
    ///
    /// `combine(checksum(a), checksum(b), secondCount: b.count) == checksum(a + b)`, for
    /// any bytes (the initial value and the final inversion of CRC-32C cancel out).
    ///
    /// - Complexity: O(log `secondCount`): one multiplication modulo the polynomial per
    ///   nonzero hexadecimal digit of `secondCount`.
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
    /// - Complexity: O(log `count`): one multiplication per nonzero hexadecimal digit
    ///   of `count`.
    static func shift(_ crc: UInt32, byZeroBytes count: Int) -> UInt32 {
        precondition(count >= 0, "a CRC-32C cannot be shifted by a negative number of bytes")
        var crc = crc
        var remaining = UInt(count)
        var digit = 0
        while remaining != 0 && crc != 0 {
            let nibble = Int(remaining & 0xF)
            if nibble != 0 { crc = multiply(crc, zeroBytePowers[digit * 15 + nibble - 1]) }
            remaining >>= 4
            digit += 1
        }
        return crc
    }

    /// x^(8 × j × 16^k) modulo the polynomial, at `k * 15 + j - 1`, for k in 0..<16
    /// and j in 1...15 (bit-reflected, as the register is: bit 31 is x^0): the shifts
    /// by each hexadecimal digit of a byte count, at most 16 multiplications per shift.
    private static let zeroBytePowers: [UInt32] = {
        var powers: [UInt32] = []
        var base: UInt32 = 0x0080_0000  // x^8, then x^(8 × 16^k)
        for _ in 0..<16 {
            var power = base
            for _ in 1...15 {
                powers.append(power)
                power = multiply(power, base)
            }
            base = power
        }
        return powers
    }()

    /// `a` times `b` modulo the polynomial, both bit-reflected (bit 31 is x^0).
    ///
    /// Without branches on the bits, which a processor cannot predict.
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var a = a
        var b = b
        var product: UInt32 = 0
        while a != 0 {
            product ^= b & (0 &- (a >> 31))
            a <<= 1
            b = (b >> 1) ^ (0x82F6_3B78 & (0 &- (b & 1)))
        }
        return product
    }
}
