// A missing file, errors inside an included file, a file including itself, a bad name.
#include "fixtures/pp/no_such_file.h"
#include "fixtures/pp/bad.h"
#include "fixtures/pp/self.h"
#include nothing
#include <stdio.h>
int f(void) { return OK; }
