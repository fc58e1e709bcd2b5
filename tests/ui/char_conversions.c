// ARGS: run $FILE --entry k -D v=200 -D w=4294967361 -D d=300.5 -D f=-1e10 --mode interp
// EXIT: 0
// Every check of char_conversions.h passes in the interpreter: result 1048575 (2^20 - 1).
#include "char_conversions.h"
