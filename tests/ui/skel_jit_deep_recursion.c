// ARGS: skel $FILE --entry work --over 8990..9000 --skeleton chunk --tau 2 --mode jit --threads 2
// EXIT: 0
// 9,000 calls deep with large frames on the pool's workers (a native stack overflow
// abort before the workers got stacks sized for the depth limit).
double deep(int n, double x, double a[40]) {
    if (n == 0) return x;
    double v0 = a[0] * x + n;
    double v1 = a[1] * x + n;
    double v2 = a[2] * x + n;
    double v3 = a[3] * x + n;
    double v4 = a[4] * x + n;
    double v5 = a[5] * x + n;
    double v6 = a[6] * x + n;
    double v7 = a[7] * x + n;
    double v8 = a[8] * x + n;
    double v9 = a[9] * x + n;
    double v10 = a[10] * x + n;
    double v11 = a[11] * x + n;
    double v12 = a[12] * x + n;
    double v13 = a[13] * x + n;
    double v14 = a[14] * x + n;
    double v15 = a[15] * x + n;
    double v16 = a[16] * x + n;
    double v17 = a[17] * x + n;
    double v18 = a[18] * x + n;
    double v19 = a[19] * x + n;
    double v20 = a[20] * x + n;
    double v21 = a[21] * x + n;
    double v22 = a[22] * x + n;
    double v23 = a[23] * x + n;
    double v24 = a[24] * x + n;
    double v25 = a[25] * x + n;
    double v26 = a[26] * x + n;
    double v27 = a[27] * x + n;
    double v28 = a[28] * x + n;
    double v29 = a[29] * x + n;
    double v30 = a[30] * x + n;
    double v31 = a[31] * x + n;
    double v32 = a[32] * x + n;
    double v33 = a[33] * x + n;
    double v34 = a[34] * x + n;
    double v35 = a[35] * x + n;
    double v36 = a[36] * x + n;
    double v37 = a[37] * x + n;
    double v38 = a[38] * x + n;
    double v39 = a[39] * x + n;
    a[0] += 1.0;
    a[5] += 1.0;
    a[10] += 1.0;
    a[15] += 1.0;
    a[20] += 1.0;
    a[25] += 1.0;
    a[30] += 1.0;
    a[35] += 1.0;
    double r = deep(n - 1, x + 1.0, a);
    return r + (v0*v0 + v1*v7 + v2*v14 + v3*v21 + v4*v28 + v5*v35 + v6*v2 + v7*v9 + v8*v16 + v9*v23 + v10*v30 + v11*v37 + v12*v4 + v13*v11 + v14*v18 + v15*v25 + v16*v32 + v17*v39 + v18*v6 + v19*v13 + v20*v20 + v21*v27 + v22*v34 + v23*v1 + v24*v8 + v25*v15 + v26*v22 + v27*v29 + v28*v36 + v29*v3 + v30*v10 + v31*v17 + v32*v24 + v33*v31 + v34*v38 + v35*v5 + v36*v12 + v37*v19 + v38*v26 + v39*v33) * 1e-9;
}
double work(int i) {
    double a[40];
    return deep(i, 0.5, a);
}
