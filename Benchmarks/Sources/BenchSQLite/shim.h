#ifndef HOARD_BENCH_SQLITE_SHIM_H
#define HOARD_BENCH_SQLITE_SHIM_H

#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a cast macro Swift cannot import; this returns the same destructor.
static inline sqlite3_destructor_type bench_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
