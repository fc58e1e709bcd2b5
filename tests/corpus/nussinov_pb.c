// ENTRY: kernel_nussinov
// DESC: Nussinov RNA folding as PolyBench/C 4.2.1 writes it: bases as `char` (`typedef char
// DESC: base;`), the `match` and `max_score` macros, counters declared at the top, a static
// DESC: kernel in `#pragma scop`; `char` elements read inside `int` arithmetic (promoted to
// DESC: `int`). The harness's random bases are 0..100, so `match` fires only where two sum
// DESC: to 3 (at n=160, 13 pairs i+2 <= j for the harness's seed 1 and 7 for seed 7)
// SCOPS: 1
// RUN: -D n=300
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=3
// TEST: -D n=29
// TEST: -D n=61
// TEST: -D n=160
#include "nussinov_pb.h"

/* RNA bases represented as chars, range is [0,3] */
typedef char base;

#define match(b1, b2) (((b1)+(b2)) == 3 ? 1 : 0)
#define max_score(s1, s2) ((s1 >= s2) ? s1 : s2)

static
void kernel_nussinov(int n, base seq[n + 0],
                     DATA_TYPE table[n + 0][n + 0])
{
  int i, j, k;

#pragma scop
 for (i = _PB_N-1; i >= 0; i--) {
  for (j=i+1; j<_PB_N; j++) {

   if (j-1>=0)
      table[i][j] = max_score(table[i][j], table[i][j-1]);
   if (i+1<_PB_N)
      table[i][j] = max_score(table[i][j], table[i+1][j]);

   if (j-1>=0 && i+1<_PB_N) {
     /* don't allow adjacent elements to bond */
     if (i<j-1)
        table[i][j] = max_score(table[i][j], table[i+1][j-1]+match(seq[i], seq[j]));
     else
        table[i][j] = max_score(table[i][j], table[i+1][j-1]);
   }

   for (k=i+1; k<j; k++) {
      table[i][j] = max_score(table[i][j], table[i][k] + table[k+1][j]);
   }
  }
 }
#pragma endscop

}
