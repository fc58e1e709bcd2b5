// ARGS: run $FILE --entry k -D n=37 --init random:3 --mode opt
// EXIT: 0
// char_array.h in the opt mode: the same checksums as the other two modes.
#include "char_array.h"
