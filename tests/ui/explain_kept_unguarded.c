// ARGS: explain $FILE --entry atax -D m=5 -D n=7
// EXIT: 0
// atax as PolyBench writes it: isl's schedule would read `A` in two separate loop nests, so
// the SCoP keeps its code as written; its accesses still run unguarded, under the entry
// test of the SCoP's assumptions (every subscript within its extent for the parameters it
// runs with), the guarded code as written where the test fails.
#include "kept_atax.h"
