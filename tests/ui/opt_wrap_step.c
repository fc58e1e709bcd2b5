// ARGS: run $FILE --entry k --mode opt --init random:1
// EXIT: 0
// The counter wraps when stepped by 1579999209: the interpreter runs the body 4 times before
// the wrapped counter leaves the loop; opt ran it 2 times. The checksum is interp's.
void k(double A[4]) {
  for (int i = 0; i < 2000000000; i += 1579999209) A[0] += 1.0;
}
