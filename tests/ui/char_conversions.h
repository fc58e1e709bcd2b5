// The conversions of `char` (8-bit, signed), each check one bit of the result (all 20 pass:
// 1048575). Shared by char_conversions.c (interpreter) and char_conversions_jit.c (JIT).
// Called with v=200, w=4294967361 (2^32 + 65), d=300.5, f=-1e10.

char twice(char x) {
    return x * 2; // computed in int, converted on return
}

void fill(int n, char a[n], int v) {
    for (int i = 0; i < n; i++)
        a[i] = v + i;
}

long k(int v, long w, double d, float f) {
    long ok = 0;
    long bit = 1;
    char a = 200;                 // constant, converted at compile time
    ok |= (a == -56) * bit; bit *= 2;
    char b = v;                   // int -> char at run time: low 8 bits
    ok |= (b == -56) * bit; bit *= 2;
    char c = w;                   // long -> char
    ok |= (c == 65) * bit; bit *= 2;
    char e = d;                   // double -> char saturates, as to int
    ok |= (e == 127 && (char)-d == -128 && (char)(d - 200.9) == 99) * bit; bit *= 2;
    char g = f;                   // float -> char saturates
    ok |= (g == -128) * bit; bit *= 2;
    char h = d * 0.0 / 0.0;       // NaN -> 0
    ok |= (h == 0) * bit; bit *= 2;
    char p = 127;
    char old = p++;               // ++ computes in int, the store wraps
    ok |= (old == 127 && p == -128 && --p == 127) * bit; bit *= 2;
    char m = 100;
    m += 100;                     // compound assignment in int, converted back
    ok |= (m == -56 && (m *= 3) == 88) * bit; bit *= 2;
    ok |= (twice(100) == -56 && twice(v) == -112) * bit; bit *= 2;
    char arr[3];
    fill(3, arr, 254);
    ok |= (arr[0] == -2 && arr[1] == -1 && arr[2] == 0) * bit; bit *= 2;
    ok |= ((char)(v + 56) == 0 && (int)(char)255 == -1) * bit; bit *= 2;
    char z = 256;
    ok |= (z ? 0 : 1) * bit; bit *= 2;  // a condition tests the converted value
    char neg = -1;
    ok |= (neg < 0 && neg < a + 100) * bit; bit *= 2;
    char t = (v > 0);             // comparison (int 1) -> char
    ok |= (t == 1) * bit; bit *= 2;
    double x = (char)200;         // char -> double
    ok |= (x == -56.0) * bit; bit *= 2;
    char s = 1;
    s <<= 7;                      // 128 in int, -128 stored
    ok |= (s == -128 && (s >> 1) == -64) * bit; bit *= 2;
    char q = v ? a : c;           // ?: of two chars
    ok |= (q == -56) * bit; bit *= 2;
    ok |= (min(a, c) == -56 && max(a, c) == 65) * bit; bit *= 2;
    ok |= (~(char)0 == -1 && -(char)-128 == 128) * bit; bit *= 2;
    char big = 100;
    ok |= (big * big == 10000 && big + big + big + big == 400) * bit; bit *= 2;
    return ok;
}
