#ifndef CHOARD_CRC32C_H
#define CHOARD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI,
/// ext4 and LevelDB: the checksum of "123456789" is 0xE3069283.
///
/// Every function continues a checksum: `update(update(0, a), b)` is the checksum
/// of `a` followed by `b`, and `update(0, bytes)` is the checksum of `bytes`.
/// `bytes` may be NULL when `count` is 0. All functions are thread-safe, and every
/// implementation gives the same result.

/// The checksum of whatever `crc` was the checksum of, followed by `count` bytes, by
/// the fastest implementation this machine runs (found out once, at the first call):
/// on x86-64 with AVX-512 VPCLMULQDQ, carry-less multiplies folding 256 bytes a round
/// (inputs of 256 bytes or more); otherwise the CPU's CRC-32C instruction (SSE4.2
/// `crc32` on x86-64, the ARMv8 CRC extension on arm64); otherwise portable C.
uint32_t hoard_crc32c_update(uint32_t crc, const void *bytes, size_t count);

/// The same as `hoard_crc32c_update`, always in portable C (slicing by 8).
uint32_t hoard_crc32c_update_portable(uint32_t crc, const void *bytes, size_t count);

/// The name of the fastest implementation this machine runs ("avx512-vpclmulqdq",
/// "sse4.2" or "armv8-crc"), or NULL when it runs only the portable code.
const char *hoard_crc32c_hardware_name(void);

/// How many implementations this machine runs, at least 1. Index 0 is the portable
/// code, the last is the one `hoard_crc32c_update` uses; tests compare them all.
size_t hoard_crc32c_implementation_count(void);

/// The name of implementation `index` ("portable" for 0), or NULL when `index` is
/// not below `hoard_crc32c_implementation_count()`.
const char *hoard_crc32c_implementation_name(size_t index);

/// `hoard_crc32c_update` by implementation `index`, or by the fastest when `index`
/// is not below `hoard_crc32c_implementation_count()`.
uint32_t hoard_crc32c_update_with(size_t index, uint32_t crc, const void *bytes, size_t count);

#endif
