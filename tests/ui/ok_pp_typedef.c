// ARGS: check $FILE
// EXIT: 0
// Scalar typedefs (of a typedef too), `static` and `static inline`, constant extents.
typedef double DATA_TYPE;
typedef long idx_t;
typedef idx_t index_t;
typedef double DATA_TYPE;
static inline DATA_TYPE sq(DATA_TYPE v) { return v * v; }
static void kernel(index_t n, DATA_TYPE A[1000 + 0][1100 + 0]) {
    DATA_TYPE tmp[10 + 2][3 * 4];
    for (index_t i = 0; i < n && i < 12; i++) {
        tmp[i][0] = (DATA_TYPE)i;
        A[i][0] = sq(tmp[i][0]);
    }
}
