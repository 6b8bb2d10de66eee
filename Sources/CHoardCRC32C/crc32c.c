#include "CHoardCRC32C.h"
#include "crc32c_tables.h"
#include "crc32c_shift_tables.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
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

// Folding with carry-less multiplies (AVX-512 VPCLMULQDQ): the message is a
// polynomial, and a 16-byte block B followed by n bytes contributes to the CRC what
// B.lo * (x^(8n+32) mod P) + B.hi * (x^(8n-32) mod P) contributes at the block n
// bytes further on (bit-reflected, each constant shifted left by one). Four 64-byte
// accumulators fold 256 bytes per round, two multiplies per 64 bytes; the last
// 16-byte remainder goes through the `crc32` instruction, which reduces it modulo P.
// The constants were derived (and the fold checked against the bitwise CRC) by
// scripts/generate-crc32c-fold-constants.

/// The constant pairs (for the low and the high half of a 16-byte block) that fold it
/// forward by 256, 64, 48, 32 and 16 bytes.
#define HOARD_CRC32C_FOLD_256_LO 0x0DCB17AA4ULL
#define HOARD_CRC32C_FOLD_256_HI 0x0B9E02B86ULL
#define HOARD_CRC32C_FOLD_64_LO 0x0740EEF02ULL
#define HOARD_CRC32C_FOLD_64_HI 0x09E4ADDF8ULL
#define HOARD_CRC32C_FOLD_48_LO 0x01C291D04ULL
#define HOARD_CRC32C_FOLD_48_HI 0x1D82C63DAULL
#define HOARD_CRC32C_FOLD_32_LO 0x1384AA63AULL
#define HOARD_CRC32C_FOLD_32_HI 0x0BA4FC28EULL
#define HOARD_CRC32C_FOLD_16_LO 0x0F20C0DFEULL
#define HOARD_CRC32C_FOLD_16_HI 0x14CD00BD6ULL

/// The smallest input the folding code takes; shorter ones go to the instruction.
#define HOARD_CRC32C_FOLD_MINIMUM 256

#define HOARD_CRC32C_FOLD_TARGET __attribute__((target("avx512f,avx2,vpclmulqdq,pclmul,sse4.2")))

/// Each 16-byte lane of `x` folded forward by what the lane of `k` stands for, plus `data`.
HOARD_CRC32C_FOLD_TARGET
static inline __m512i hoard_crc32c_fold512(__m512i x, __m512i k, __m512i data) {
    return _mm512_ternarylogic_epi64(
        _mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), data, 0x96);
}

/// `x` folded forward 16 bytes, plus `data`.
HOARD_CRC32C_FOLD_TARGET
static inline __m128i hoard_crc32c_fold128(__m128i x, __m128i k, __m128i data) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
}

/// The constant pair `lo`, `hi` in every 16-byte lane.
HOARD_CRC32C_FOLD_TARGET
static inline __m512i hoard_crc32c_lanes(uint64_t lo, uint64_t hi) {
    return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)hi, (long long)lo));
}

HOARD_CRC32C_FOLD_TARGET
static uint32_t hoard_crc32c_update_folded(uint32_t crc, const void *bytes, size_t count) {
    if (count < HOARD_CRC32C_FOLD_MINIMUM) return hoard_crc32c_update_hardware(crc, bytes, count);
    const unsigned char *p = bytes;
    __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
    // The register before the message is the same as that register added to its
    // first four bytes, with a register of zero. (Zero-extended: a cast would leave
    // the upper lanes undefined, which unoptimised builds do fill with garbage.)
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
    p += 256;
    count -= 256;
    const __m512i k256 = hoard_crc32c_lanes(HOARD_CRC32C_FOLD_256_LO, HOARD_CRC32C_FOLD_256_HI);
    while (count >= 256) {
        x0 = hoard_crc32c_fold512(x0, k256, _mm512_loadu_si512(p));
        x1 = hoard_crc32c_fold512(x1, k256, _mm512_loadu_si512(p + 64));
        x2 = hoard_crc32c_fold512(x2, k256, _mm512_loadu_si512(p + 128));
        x3 = hoard_crc32c_fold512(x3, k256, _mm512_loadu_si512(p + 192));
        p += 256;
        count -= 256;
    }
    const __m512i k64 = hoard_crc32c_lanes(HOARD_CRC32C_FOLD_64_LO, HOARD_CRC32C_FOLD_64_HI);
    x1 = hoard_crc32c_fold512(x0, k64, x1);
    x2 = hoard_crc32c_fold512(x1, k64, x2);
    x3 = hoard_crc32c_fold512(x2, k64, x3);
    // x3's lanes sit at 0, 16, 32 and 48 bytes: fold the first three onto the last.
    const __m512i lanes = _mm512_set_epi64(
        0, 0, (long long)HOARD_CRC32C_FOLD_16_HI, (long long)HOARD_CRC32C_FOLD_16_LO,
        (long long)HOARD_CRC32C_FOLD_32_HI, (long long)HOARD_CRC32C_FOLD_32_LO,
        (long long)HOARD_CRC32C_FOLD_48_HI, (long long)HOARD_CRC32C_FOLD_48_LO);
    __m512i t = _mm512_xor_si512(_mm512_clmulepi64_epi128(x3, lanes, 0x00), _mm512_clmulepi64_epi128(x3, lanes, 0x11));
    __m256i t256 = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
    __m128i v = _mm_xor_si128(_mm256_castsi256_si128(t256), _mm256_extracti128_si256(t256, 1));
    v = _mm_xor_si128(v, _mm512_extracti32x4_epi32(x3, 3));
    const __m128i k16 = _mm_set_epi64x((long long)HOARD_CRC32C_FOLD_16_HI, (long long)HOARD_CRC32C_FOLD_16_LO);
    while (count >= 16) {
        v = hoard_crc32c_fold128(v, k16, _mm_loadu_si128((const __m128i *)(const void *)p));
        p += 16;
        count -= 16;
    }
    // The CRC of the 16 bytes of v with a register of zero, then the rest.
    uint64_t c0 = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));
    c0 = _mm_crc32_u64(c0, (uint64_t)_mm_extract_epi64(v, 1));
    while (count >= 8) {
        c0 = _mm_crc32_u64(c0, load64(p));
        p += 8;
        count -= 8;
    }
    uint32_t c32 = (uint32_t)c0;
    while (count > 0) {
        c32 = _mm_crc32_u8(c32, *p);
        p++;
        count--;
    }
    return ~c32;
}

static int hoard_crc32c_detect_folding(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    if (!(ecx & bit_SSE4_2) || !(ecx & bit_PCLMUL) || !(ecx & bit_OSXSAVE)) return 0;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    if (!(ebx & bit_AVX512F) || !(ecx & bit_VPCLMULQDQ)) return 0;
    // The operating system saves the AVX-512 state (XCR0: SSE, AVX, opmask, the upper
    // halves of zmm0-15, zmm16-31).
    unsigned int xcr0, xcr0_high;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
    return (xcr0 & 0xE6) == 0xE6;
}

static const char hoard_crc32c_folding[] = "avx512-vpclmulqdq";
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

typedef uint32_t (*hoard_crc32c_function)(uint32_t crc, const void *bytes, size_t count);

/// One way of computing the checksum and the name `hoard_crc32c_implementation_name`
/// gives it.
struct hoard_crc32c_implementation {
    const char *name;
    hoard_crc32c_function update;
};

/// Every implementation this file has for the CPU it is built for, slowest first; a
/// machine runs a prefix of them (`hoard_crc32c_implementation_count`).
static const struct hoard_crc32c_implementation hoard_crc32c_implementations[] = {
    {"portable", hoard_crc32c_update_portable},
#if HOARD_CRC32C_X86 || HOARD_CRC32C_ARM
    {hoard_crc32c_hardware, hoard_crc32c_update_hardware},
#endif
#if HOARD_CRC32C_X86
    {hoard_crc32c_folding, hoard_crc32c_update_folded},
#endif
};

/// How many of `hoard_crc32c_implementations` this machine runs: 0 until found
/// out, at the first call. Two threads racing there find out the same and store the
/// same.
static _Atomic size_t hoard_crc32c_usable = 0;

size_t hoard_crc32c_implementation_count(void) {
    size_t usable = atomic_load_explicit(&hoard_crc32c_usable, memory_order_relaxed);
    if (usable == 0) {
        usable = 1;
#if HOARD_CRC32C_X86 || HOARD_CRC32C_ARM
        if (hoard_crc32c_detect()) usable = 2;
#endif
#if HOARD_CRC32C_X86
        if (usable == 2 && hoard_crc32c_detect_folding()) usable = 3;
#endif
        atomic_store_explicit(&hoard_crc32c_usable, usable, memory_order_relaxed);
    }
    return usable;
}

const char *hoard_crc32c_implementation_name(size_t index) {
    return index < hoard_crc32c_implementation_count() ? hoard_crc32c_implementations[index].name : NULL;
}

uint32_t hoard_crc32c_update_with(size_t index, uint32_t crc, const void *bytes, size_t count) {
    size_t usable = hoard_crc32c_implementation_count();
    return hoard_crc32c_implementations[index < usable ? index : usable - 1].update(crc, bytes, count);
}

static uint32_t hoard_crc32c_resolve(uint32_t crc, const void *bytes, size_t count);

/// The fastest implementation this machine runs; until the first call, the function
/// that finds it out.
static _Atomic(hoard_crc32c_function) hoard_crc32c_fastest = hoard_crc32c_resolve;

static uint32_t hoard_crc32c_resolve(uint32_t crc, const void *bytes, size_t count) {
    hoard_crc32c_function fastest = hoard_crc32c_implementations[hoard_crc32c_implementation_count() - 1].update;
    atomic_store_explicit(&hoard_crc32c_fastest, fastest, memory_order_relaxed);
    return fastest(crc, bytes, count);
}

uint32_t hoard_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    return atomic_load_explicit(&hoard_crc32c_fastest, memory_order_relaxed)(crc, bytes, count);
}

const char *hoard_crc32c_hardware_name(void) {
    size_t usable = hoard_crc32c_implementation_count();
    return usable > 1 ? hoard_crc32c_implementations[usable - 1].name : NULL;
}
