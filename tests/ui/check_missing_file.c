// ARGS: check tests/ui/does_not_exist.c
// EXIT: 2
