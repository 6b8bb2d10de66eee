#include "CHoardCRC32C.h"
#include "crc32c_tables.h"
#include "crc32c_shift_tables.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#define HOARD_CRC32C_X86 1
#elif defined(__aarch64__) || defined(__arm64__)
#include <arm_acle.h>
#define HOARD_CRC32C_ARM 1
#if defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif
#endif

static inline uint64_t load64(const unsigned char *p) {
    uint64_t word;
    memcpy(&word, p, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

/// The register `crc` after the zero bytes `table` stands for (LONG or SHORT).
static inline uint64_t hoard_crc32c_shift(const uint32_t table[4][256], uint64_t crc) {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^ table[3][(crc >> 24) & 0xFF];
}

/// Three independent streams of the 8-byte instruction `WORD` over three adjacent
/// blocks of `BLOCK` bytes, as long as three remain, joined with `TABLE` (the shift
/// by `BLOCK` zero bytes).
#define HOARD_CRC32C_THREE_STREAMS(WORD, BLOCK, TABLE)                                     \
    while (count >= 3 * (BLOCK)) {                                                    \
        uint64_t c1 = 0, c2 = 0;                                                      \
        const unsigned char *end = p + (BLOCK);                                       \
        do {                                                                          \
            c0 = WORD(c0, load64(p));                                                 \
            c1 = WORD(c1, load64(p + (BLOCK)));                                       \
            c2 = WORD(c2, load64(p + 2 * (BLOCK)));                                   \
            p += 8;                                                                   \
        } while (p < end);                                                            \
        c0 = hoard_crc32c_shift(TABLE, c0) ^ c1;                                      \
        c0 = hoard_crc32c_shift(TABLE, c0) ^ c2;                                      \
        p += 2 * (BLOCK);                                                             \
        count -= 3 * (BLOCK);                                                         \
    }

/// The body of a hardware CRC-32C: three independent streams of the 8-byte
/// instruction `WORD` over blocks of LONG, then SHORT, bytes (the instruction's
/// latency is three times its throughput, so one stream leaves two thirds of the
/// unit idle), then the rest one stream.
#define HOARD_CRC32C_HARDWARE_BODY(WORD, BYTE)                                            \
    const unsigned char *p = bytes;                                                   \
    uint64_t c0 = (uint32_t)~crc;                                                     \
    HOARD_CRC32C_THREE_STREAMS(WORD, HOARD_CRC32C_LONG, hoard_crc32c_long)            \
    HOARD_CRC32C_THREE_STREAMS(WORD, HOARD_CRC32C_SHORT, hoard_crc32c_short)          \
    while (count >= 8) {                                                              \
        c0 = WORD(c0, load64(p));                                                     \
        p += 8;                                                                       \
        count -= 8;                                                                   \
    }                                                                                 \
    uint32_t c32 = (uint32_t)c0;                                                      \
    while (count > 0) {                                                               \
        c32 = BYTE(c32, *p);                                                          \
        p++;                                                                          \
        count--;                                                                      \
    }                                                                                 \
    return ~c32;

uint32_t hoard_crc32c_update_portable(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    const uint32_t (*t)[256] = hoard_crc32c_tables;
    crc = ~crc;
    while (count >= 8) {
        uint64_t word = load64(p) ^ crc;
        crc = t[7][word & 0xFF] ^ t[6][(word >> 8) & 0xFF] ^ t[5][(word >> 16) & 0xFF] ^ t[4][(word >> 24) & 0xFF]
            ^ t[3][(word >> 32) & 0xFF] ^ t[2][(word >> 40) & 0xFF] ^ t[1][(word >> 48) & 0xFF] ^ t[0][word >> 56];
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xFF];
        p++;
        count--;
    }
    return ~crc;
}

#if HOARD_CRC32C_X86
__attribute__((target("sse4.2")))
static uint32_t hoard_crc32c_update_hardware(uint32_t crc, const void *bytes, size_t count) {
    HOARD_CRC32C_HARDWARE_BODY(_mm_crc32_u64, _mm_crc32_u8)
}

static int hoard_crc32c_detect(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

static const char hoard_crc32c_hardware[] = "sse4.2";
#elif HOARD_CRC32C_ARM
__attribute__((target("crc")))
static uint32_t hoard_crc32c_update_hardware(uint32_t crc, const void *bytes, size_t count) {
    HOARD_CRC32C_HARDWARE_BODY(__crc32cd, __crc32cb)
}

static int hoard_crc32c_detect(void) {
#if defined(__APPLE__)
    int value = 0;
    size_t size = sizeof value;
    if (sysctlbyname("hw.optional.armv8_crc32", &value, &size, NULL, 0) != 0) return 0;
    return value != 0;
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#else
    return 0;
#endif
}

static const char hoard_crc32c_hardware[] = "armv8-crc";
#endif

#if HOARD_CRC32C_X86 || HOARD_CRC32C_ARM
/// 0: not found out yet; 1: the portable code; 2: the instruction. Found out once;
/// two threads racing at the first call find out the same and store the same.
static _Atomic int hoard_crc32c_mode = 0;

static int hoard_crc32c_current_mode(void) {
    int mode = atomic_load_explicit(&hoard_crc32c_mode, memory_order_relaxed);
    if (mode == 0) {
        mode = hoard_crc32c_detect() ? 2 : 1;
        atomic_store_explicit(&hoard_crc32c_mode, mode, memory_order_relaxed);
    }
    return mode;
}

uint32_t hoard_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    if (hoard_crc32c_current_mode() == 2) return hoard_crc32c_update_hardware(crc, bytes, count);
    return hoard_crc32c_update_portable(crc, bytes, count);
}

const char *hoard_crc32c_hardware_name(void) {
    return hoard_crc32c_current_mode() == 2 ? hoard_crc32c_hardware : NULL;
}
#else
uint32_t hoard_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    return hoard_crc32c_update_portable(crc, bytes, count);
}

const char *hoard_crc32c_hardware_name(void) {
    return NULL;
}
#endif
