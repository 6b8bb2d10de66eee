// The target's one function is `static inline` in its header, so that Swift
// callers inline it; this file only makes the header compile with the target.
#include "CHoardPrefetch.h"
