#ifndef CHOARD_CRC32C_H
#define CHOARD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI,
/// ext4 and LevelDB: the checksum of "123456789" is 0xE3069283.
///
/// Every function continues a checksum: `update(update(0, a), b)` is the checksum
/// of `a` followed by `b`, and `update(0, bytes)` is the checksum of `bytes`.
/// `bytes` may be NULL when `count` is 0. All functions are thread-safe.

/// The checksum of whatever `crc` was the checksum of, followed by `count` bytes.
/// Uses the CPU's CRC-32C instruction when it has one (SSE4.2 `crc32` on x86-64, the
/// ARMv8 CRC extension on arm64), found out once, at the first call; otherwise
/// the portable code. Both give the same result.
uint32_t hoard_crc32c_update(uint32_t crc, const void *bytes, size_t count);

/// The same as `hoard_crc32c_update`, always in portable C (slicing by 8).
uint32_t hoard_crc32c_update_portable(uint32_t crc, const void *bytes, size_t count);

/// The name of the instruction `hoard_crc32c_update` uses ("sse4.2" or
/// "armv8-crc"), or NULL when it uses the portable code.
const char *hoard_crc32c_hardware_name(void);

#endif
