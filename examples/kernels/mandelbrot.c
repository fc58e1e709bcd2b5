// ENTRY: mandelbrot
// DESC: total escape-iteration count of a w x h Mandelbrot image over [-2,1]x[-1.5,1.5] (skeleton benchmark)
// RUN: -D w=256 -D h=192 -D maxit=100
// TEST: -D w=0 -D h=0 -D maxit=10
// TEST: -D w=1 -D h=1 -D maxit=5
// TEST: -D w=2 -D h=3 -D maxit=50
// TEST: -D w=31 -D h=17 -D maxit=64
// BENCH: -D w=3000 -D h=2000 -D maxit=500

// Iterations z <- z^2 + c from z = 0 until |z| > 2 or maxit steps.
int mandel_point(double cr, double ci, int maxit)
{
    double zr = 0.0, zi = 0.0;
    int it = 0;
    while (it < maxit && zr * zr + zi * zi <= 4.0) {
        double t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        it++;
    }
    return it;
}

// Per-element function: sum of iteration counts over one row of pixels.
long mandel_row(int row, int w, int h, int maxit)
{
    double ci = -1.5 + 3.0 * row / h;
    long s = 0;
    for (int col = 0; col < w; col++) {
        double cr = -2.0 + 3.0 * col / w;
        s += mandel_point(cr, ci, maxit);
    }
    return s;
}

long mandelbrot(int w, int h, int maxit)
{
    long total = 0;
    for (int row = 0; row < h; row++)
        total += mandel_row(row, w, h, maxit);
    return total;
}
