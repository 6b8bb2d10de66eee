#ifndef HOARD_CSQLITE_SHIM_H
#define HOARD_CSQLITE_SHIM_H

#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a cast macro Swift cannot import; this returns the same destructor.
static inline sqlite3_destructor_type hoard_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
