// ARGS: run tests/ui/no_such_kernel.c --entry k -D n=1
// EXIT: 2
// A file that does not exist.
