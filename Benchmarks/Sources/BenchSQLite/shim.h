#ifndef HOARD_BENCH_SQLITE_SHIM_H
#define HOARD_BENCH_SQLITE_SHIM_H

#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a cast macro Swift cannot import; this returns the same destructor.
static inline sqlite3_destructor_type bench_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// `sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)` (a variadic call Swift cannot make):
/// turns off SQLite's memory statistics, and with them the process-wide mutex every
/// `sqlite3_malloc` and `sqlite3_free` takes. Only before SQLite is initialised;
/// returns `SQLITE_OK`, or `SQLITE_MISUSE` after.
static inline int bench_sqlite_memory_statistics_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#endif
