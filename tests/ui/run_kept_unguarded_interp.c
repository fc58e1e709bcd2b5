// ARGS: run $FILE --entry atax -D m=5 -D n=7 --mode interp --init random:3
// EXIT: 0
// The reference for run_kept_unguarded.c.
#include "kept_atax.h"
