#ifndef CHOARD_PREFETCH_H
#define CHOARD_PREFETCH_H

/// Asks the processor to start loading the cache line holding `address` into
/// every cache level, for a coming write, and returns at once. A hint only: it
/// never faults (any address may be given, even one that is not mapped), never
/// changes memory, and does nothing on a compiler without `__builtin_prefetch`.
/// Inlined into Swift callers, it is one instruction (`prefetchw` or `prefetcht0`
/// on x86-64, `prfm pstl1keep` on arm64).
static inline __attribute__((always_inline)) void hoard_prefetch_for_write(const void *address) {
#if defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
    __builtin_prefetch(address, 1, 3);
#endif
#endif
}

#endif
