// ARGS: run $FILE --entry k --mode opt -D n=90 -D alpha=0.5 --init random:1 --shuffle-parallel 1
// EXIT: 0
// The register tile unrolls i1 (2 iterations) by 4; its member disappears and the parallel
// mark landed on i2, which carries the output dependence on A[i1]. Every loop is now checked
// for parallelism on the final schedule as the AST is built; checksums equal interp's.
void k(double A[100], double B[3][100], double alpha, int n) {
  for (int i1 = 0; i1 < 2; i1++)
    for (int i2 = 2; i2 < n; i2++) {
      double s = alpha - B[i1 + 1][i2] * A[i2 + 3];
      A[i1] = s;
    }
}
