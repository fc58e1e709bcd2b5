// A kernel over `char` arrays (filled by --init random with 0..100) and a `char` scalar local
// to the loop body: stores wrap (`s[i] * 3 + i` reaches 336, `t[j] - t[i]` spans -255..255),
// reads are promoted to `int`. char_array_interp.c, char_array_jit.c and char_array_opt.c
// run it in the three modes and print the same checksums; the optimiser transforms all of it
// (one SCoP).
void k(int n, char s[n], char t[n], int out[n]) {
    for (int i = 0; i < n; i++)
        t[i] = s[i] * 3 + i;
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++) {
            char d = t[j] - t[i];
            out[j] += d * 2 + t[i];
        }
    for (int i = 0; i < n; i++)
        s[i] = t[n - 1 - i];
}
