/* The C prelude lives with the C printer; this path is what the harnesses -include. */
#include "../crates/ir/src/prelude.h"
