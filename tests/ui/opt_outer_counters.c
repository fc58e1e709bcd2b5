// ARGS: explain $FILE --entry k --tile-sizes 128
// EXIT: 0
// Counters declared at the top of the function and reused by several loops (C89 and
// PolyBench style) are loop counters for the optimiser when every read of them is inside a
// loop over them and no such loop nests in another: the value a loop leaves behind is then
// dead. `i` and `j` qualify (one SCoP, no statement for the declarations); `t` is read after
// its loop, so its loop keeps its code, with one reason.
void k(int n, double A[n][n], double x[n], long out[1]) {
  int i, j, t;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] * 0.5 + x[j];
  for (j = 0; j < n; j++)
    x[j] = 0.0;
  for (t = 0; t < n; t++)
    x[t] += 1.0;
  out[0] = t;
}
