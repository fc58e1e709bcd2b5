// ENTRY: mandel_image
// DESC: Mandelbrot escape counts written into an h x w int image over [-2,1]x[-1.5,1.5]
// RUN: -D w=256 -D h=192 -D maxit=100
// TEST: -D w=0 -D h=0 -D maxit=10
// TEST: -D w=1 -D h=2 -D maxit=5
// TEST: -D w=29 -D h=19 -D maxit=64
// BENCH: -D w=3000 -D h=2000 -D maxit=500

// Same iteration as mandelbrot.c, written with do/while and an early break.
int escape_count(double cr, double ci, int maxit)
{
    double zr = 0.0, zi = 0.0;
    int it = 0;
    if (maxit <= 0)
        return 0;
    do {
        if (zr * zr + zi * zi > 4.0)
            break;
        double t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        ++it;
    } while (it < maxit);
    return it;
}

// Per-element function: fills one row of the image.
void mandel_image_row(int row, int w, int h, int maxit, int out[h][w])
{
    double ci = -1.5 + 3.0 * row / h;
    for (int col = 0; col < w; col++)
        out[row][col] = escape_count(-2.0 + 3.0 * col / w, ci, maxit);
}

void mandel_image(int w, int h, int maxit, int out[h][w])
{
    for (int row = 0; row < h; row++)
        mandel_image_row(row, w, h, maxit, out);
}
