// ARGS: run $FILE --entry atax -D m=5 -D n=7 --mode opt --init random:3
// EXIT: 0
// The atax of explain_kept_unguarded.c run unguarded: the checksums of run_kept_unguarded_interp.c.
#include "kept_atax.h"
