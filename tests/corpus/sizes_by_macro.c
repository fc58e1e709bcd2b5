// ENTRY: blur
// DESC: a 3x3 box blur over an image whose size is a macro (constant extents, bounds like
// DESC: N - 1), counters at the top (the gcc oracle cannot take -D N=... over the #define)
// SCOPS: 1
// RUN:
// TEST:
#define N 29
void blur(float in[N][N], float out[N][N])
{
  int x, y;
  for (y = 1; y < N - 1; y++)
    for (x = 1; x < N - 1; x++)
      out[y][x] = (in[y-1][x-1] + in[y-1][x] + in[y-1][x+1]
                 + in[y][x-1]   + in[y][x]   + in[y][x+1]
                 + in[y+1][x-1] + in[y+1][x] + in[y+1][x+1]) / 9.0f;
}
