//! Interpreter-vs-JIT oracle tests over small programs covering every statement and
//! expression kind, every type, all conversions and every run-time error.
mod common;
use common::*;
use tessera_interp::Limits;
use tessera_ir::*;

fn ok_count(rs: &[Result<Option<Scalar>, RuntimeError>]) -> usize {
    rs.iter().filter(|r| r.is_ok()).count()
}

#[test]
fn arithmetic_all_types() {
    for t in ["int", "long", "float", "double"] {
        let src = format!(
            "{t} f({t} a, {t} b) {{ {t} r = a + b; r = r * a - b; r = r + (a * b); r = -r; return r + a / (b == 0 ? 1 : b); }}"
        );
        check(&src, "f", 200, 1);
    }
    check(
        "int f(int a, int b) { return (a & b) ^ (a | ~b); }",
        "f",
        200,
        2,
    );
    check(
        "long f(long a, long b) { return (a & b) ^ (a | ~b); }",
        "f",
        200,
        3,
    );
}

#[test]
fn division_and_remainder() {
    // Division by zero, MIN / -1 and MIN % -1 included among the special values.
    for t in ["int", "long"] {
        let rs = check(
            &format!("{t} f({t} a, {t} b) {{ return a / b; }}"),
            "f",
            300,
            4,
        );
        assert!(rs
            .iter()
            .any(|r| matches!(r, Err(e) if e.kind == ErrorKind::DivisionByZero)));
        assert!(ok_count(&rs) > 50);
        check(
            &format!("{t} f({t} a, {t} b) {{ return a % b; }}"),
            "f",
            300,
            5,
        );
        check(
            &format!("{t} f({t} a, {t} b) {{ a /= b; return a; }}"),
            "f",
            200,
            6,
        );
        check(
            &format!("{t} f({t} a, {t} b) {{ a %= b; return a; }}"),
            "f",
            200,
            7,
        );
    }
    let min = run_both(
        "int f(int a, int b) { return a / b; }",
        "f",
        vec![si(i32::MIN), si(-1)],
        Limits::default(),
    );
    assert_eq!(min, Ok(Some(Scalar::I32(i32::MIN))));
    let rem = run_both(
        "long f(long a, long b) { return a % b; }",
        "f",
        vec![sl(i64::MIN), sl(-1)],
        Limits::default(),
    );
    assert_eq!(rem, Ok(Some(Scalar::I64(0))));
    check(
        "double f(double a, double b) { return a / b; }",
        "f",
        200,
        8,
    );
}

#[test]
fn shifts() {
    for (t, u) in [
        ("int", "int"),
        ("int", "long"),
        ("long", "int"),
        ("long", "long"),
    ] {
        let rs = check(
            &format!("{t} f({t} a, {u} b) {{ return (a << b) + (a >> b); }}"),
            "f",
            300,
            9,
        );
        assert!(rs.iter().any(|r| matches!(
            r,
            Err(RuntimeError {
                kind: ErrorKind::InvalidShift { .. },
                ..
            })
        )));
        assert!(ok_count(&rs) > 20);
        check(
            &format!("{t} f({t} a, {u} b) {{ a <<= b; a >>= 1; return a; }}"),
            "f",
            200,
            10,
        );
    }
}

#[test]
fn comparisons_and_logic() {
    for t in ["int", "long", "float", "double", "bool"] {
        let src = format!(
            "int f({t} a, {t} b) {{ return (a < b) + 2 * (a <= b) + 4 * (a > b) + 8 * (a >= b) + 16 * (a == b) + 32 * (a != b); }}"
        );
        check(&src, "f", 200, 11);
    }
    check(
        "int f(int a, int b, double x) { int c = 0; if (a > 0 && b / a > 1) c = 1; if (a == 0 || b % a == 0) c += 2; if (!(x > 0.5)) c += 4; return c + (x ? 8 : 16); }",
        "f",
        300,
        12,
    );
}

#[test]
fn conversions() {
    let tys = ["bool", "int", "long", "float", "double"];
    for from in tys {
        for to in tys {
            let src = format!("{to} f({from} a) {{ {to} r = a; return r; }}");
            check(&src, "f", 60, 13);
            let src = format!("{to} f({from} a) {{ return ({to})a; }}");
            check(&src, "f", 30, 14);
        }
    }
    // Saturation and NaN explicitly.
    for v in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e300,
        -1e300,
        3e9,
        -3e9,
        2147483647.5,
        -0.0,
    ] {
        run_both(
            "int f(double a) { return (int)a; }",
            "f",
            vec![sd(v)],
            Limits::default(),
        )
        .unwrap();
        run_both(
            "long f(double a) { return (long)a; }",
            "f",
            vec![sd(v)],
            Limits::default(),
        )
        .unwrap();
        run_both(
            "bool f(double a) { return a; }",
            "f",
            vec![sd(v)],
            Limits::default(),
        )
        .unwrap();
        run_both(
            "float f(double a) { return a; }",
            "f",
            vec![sd(v)],
            Limits::default(),
        )
        .unwrap();
        run_both(
            "int f(double a) { float x = a; return (int)x; }",
            "f",
            vec![sd(v)],
            Limits::default(),
        )
        .unwrap();
    }
    assert_eq!(
        run_both(
            "bool f(double a) { return a; }",
            "f",
            vec![sd(f64::NAN)],
            Limits::default()
        ),
        Ok(Some(Scalar::Bool(true)))
    );
    check("double f(long a) { return a; }", "f", 100, 15);
    check("float f(long a) { return a; }", "f", 100, 16);
}

#[test]
fn inc_dec_and_compound() {
    for t in ["int", "long", "float", "double", "bool"] {
        let src = format!(
            "{t} f({t} a) {{ {t} b = a++; {t} c = ++a; {t} d = a--; {t} e = --a; return b + c + d + e + a; }}"
        );
        check(&src, "f", 100, 17);
    }
    check(
        "double f(int n, double x[n], int i) { x[0] += 1.5; x[n - 1] *= 2; x[0] -= x[n - 1]; x[0] /= 3; int k = 0; k += 2.7; k -= 0.5; return x[0] + k; }",
        "f",
        100,
        18,
    );
    check(
        "int f(int n, int x[n]) { x[0]++; ++x[n-1]; x[0]--; x[0] <<= 2; x[0] |= 1; x[0] &= 7; x[0] ^= 3; return x[0]++ + --x[0]; }",
        "f",
        100,
        19,
    );
}

#[test]
fn builtins() {
    check(
        "double f(double a, double b) { return sqrt(fabs(a)) + exp(a) + log(b) + pow(a, b) + floor(a) + ceil(b) + sin(a) + cos(b) + tanh(a) + fmin(a, b) + fmax(a, b); }",
        "f",
        300,
        20,
    );
    check(
        "float f(float a, float b) { return sqrtf(fabsf(a)) + expf(a) + logf(b) + powf(a, b) + floorf(a) + ceilf(b) + sinf(a) + cosf(b) + tanhf(a) + fminf(a, b) + fmaxf(a, b); }",
        "f",
        300,
        21,
    );
    check(
        "long f(long a, int b) { return min(a, b) * 3 + max(a, b); }",
        "f",
        200,
        22,
    );
    check(
        "double f(int n, double x[n]) { double s = 0; for (int i = 0; i < n; i++) s += exp(x[i]) * pow(x[i], 0.5) + pow(x[i], 2.0); return s; }",
        "f",
        50,
        23,
    );
}

#[test]
fn control_flow() {
    check(
        "int f(int n) { int s = 0; int i = 0; while (i < 10) { i++; if (i == 3) continue; if (i > 7) break; s += i; } do { s += 100; n--; } while (n > 0 && n < 5); for (int j = 0; j < 5; j++) { if (j == 2) continue; s = s * 3 + j; } return s; }",
        "f",
        200,
        24,
    );
    check(
        "int f(int a, int b) { int r = 0; if (a > b) { if (a > 0) r = 1; else r = 2; } else if (a == b) r = 3; else { r = (a, b); } { int z = r * 2; r = z + 1; } return r; }",
        "f",
        200,
        25,
    );
    check(
        "int f(int n) { for (int i = 0; ; i++) { if (i >= 5) return i * n; } return -1; }",
        "f",
        20,
        26,
    );
}

#[test]
fn void_functions_and_calls() {
    let src = "
        void scale(int n, double x[n], double a) { for (int i = 0; i < n; i++) x[i] = x[i] * a; }
        double sum(int n, double x[n]) { double s = 0; for (int i = 0; i < n; i++) s += x[i]; return s; }
        double f(int n, double x[n], double a) { scale(n, x, a); scale(n, x, a), scale(n, x, 0.5); return sum(n, x); }";
    check_with(src, "f", 50, 27, Limits::default(), &[Some(Scalar::I32(7))]);
}

#[test]
fn recursion() {
    let src = "long fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }";
    for n in 0..20 {
        let r = run_both(src, "fib", vec![si(n)], Limits::default());
        assert!(r.is_ok());
    }
    assert_eq!(
        run_both(src, "fib", vec![si(20)], Limits::default()),
        Ok(Some(Scalar::I64(6765)))
    );
}

#[test]
fn stack_overflow() {
    big_stack(stack_overflow_body);
}

fn stack_overflow_body() {
    let src = "int down(int n) { if (n == 0) return 0; return 1 + down(n - 1); }";
    for depth in [0usize, 1, 2, 3, 10, 50, 1000] {
        let limits = Limits {
            max_call_depth: depth,
            ..Limits::default()
        };
        for n in [0, 1, 2, 3, 9, 10, 11, 49, 60, 999, 1200] {
            let r = run_both(src, "down", vec![si(n)], limits);
            if n >= 1 && n as usize >= depth {
                assert!(
                    matches!(
                        r,
                        Err(RuntimeError {
                            kind: ErrorKind::StackOverflow { .. },
                            ..
                        })
                    ),
                    "{r:?}"
                );
            }
        }
    }
}

#[test]
fn missing_return() {
    let src = "int f(int a) { if (a > 0) return 1; }\nint g(int a) { return f(a) + 1; }";
    let r = run_both(src, "g", vec![si(0)], Limits::default());
    assert!(matches!(
        r,
        Err(RuntimeError {
            kind: ErrorKind::MissingReturn { .. },
            ..
        })
    ));
    run_both(src, "g", vec![si(1)], Limits::default()).unwrap();
}

#[test]
fn max_steps() {
    let src = "long g(int n) { return n; }\nlong f(int n) { long s = 0; for (int i = 0; i < n; i++) { int j = 0; do { s += j; j++; } while (j < 3); } return s + g(n); }";
    for max in [0u64, 1, 2, 5, 17, 40, 41, 42, 43, 44, 1000] {
        let limits = Limits {
            max_steps: Some(max),
            ..Limits::default()
        };
        for n in [0, 1, 3, 10] {
            run_both(src, "f", vec![si(n)], limits).ok();
        }
    }
}

#[test]
fn bounds_1d_2d_3d() {
    let rs = check(
        "double f(int n, double x[n], long i) { return x[i]; }",
        "f",
        200,
        30,
    );
    assert!(rs.iter().any(|r| matches!(
        r,
        Err(RuntimeError {
            kind: ErrorKind::IndexOutOfBounds { .. },
            ..
        })
    )));
    let src2 =
        "double f(int n, int m, double a[n][m], long i, long j) { a[i][j] = 1; return a[j][i]; }";
    for (n, m, i, j) in [
        (3, 4, 0, 0),
        (3, 4, 2, 3),
        (3, 4, 3, 0),
        (3, 4, -1, 0),
        (3, 4, 0, 4),
        (3, 4, 1, -5),
        (3, 4, 3, 9),
        (4, 3, 3, 2),
    ] {
        let a = f64a(vec![n as usize, m as usize], vec![0.5; (n * m) as usize]);
        let r = run_both(
            src2,
            "f",
            vec![si(n), si(m), a, sl(i), sl(j)],
            Limits::default(),
        );
        let _ = r;
    }
    let src3 = "int f(int n, int x[n][n][n], long i, long j, long k) { x[i][j][k] += x[k][j][i]; return x[i][j][k]; }";
    let mut r = Rng(31);
    let p = prog(src3);
    let jit = tessera_jit::Compiled::compile(&p, &Default::default()).unwrap();
    let (fid, _) = p.function("f").unwrap();
    let mut errs = 0;
    for _ in 0..300 {
        let n = r.range(0, 3) as i32;
        let len = (n * n * n) as usize;
        let x = ArgValue::Array(ArrayData {
            shape: vec![n as usize; 3],
            elems: ArrayElems::I32((0..len as i32).collect()),
        });
        let args = vec![
            si(n),
            x,
            sl(r.range(-1, 3)),
            sl(r.range(-1, 3)),
            sl(r.range(-1, 3)),
        ];
        if same(&p, &jit, fid, &args, Limits::default(), src3).is_err() {
            errs += 1;
        }
    }
    assert!(errs > 30);
}

#[test]
fn assignment_order() {
    // Place indices are evaluated and checked before the value; compound reads the old value first.
    let src = "int f(int n, int x[n], int i) { int k = 0; x[i] = (k = 5); x[k - 5] += (x[0] = 10); return k + x[0]; }";
    for i in -1..4 {
        run_both(
            src,
            "f",
            vec![si(3), i32a(vec![1, 2, 3]), si(i)],
            Limits::default(),
        )
        .ok();
    }
    let src = "int f(int n, int x[n]) { int a = 1; a += (a = 10); x[0] += (x[0] = 7); return a * 100 + x[0]; }";
    assert_eq!(
        run_both(src, "f", vec![si(1), i32a(vec![1])], Limits::default()),
        Ok(Some(Scalar::I32(1108)))
    );
    // Error in the index expression happens before the bounds check of an earlier dimension.
    let src = "int f(int n, int x[n][n], int a) { return x[n][10 / a]; }";
    let r = run_both(
        src,
        "f",
        vec![
            si(2),
            ArgValue::Array(ArrayData {
                shape: vec![2, 2],
                elems: ArrayElems::I32(vec![0; 4]),
            }),
            si(0),
        ],
        Limits::default(),
    );
    assert_eq!(r.unwrap_err().kind, ErrorKind::DivisionByZero);
}

#[test]
fn sub_arrays_and_shapes() {
    let src = "
        double rowsum(int m, double r[m]) { double s = 0; for (int j = 0; j < m; j++) s += r[j]; return s; }
        void fill(int m, double r[m], double v) { for (int j = 0; j < m; j++) r[j] = v + j; }
        double part(int k, int m, double a[k][m]) { return a[k - 1][m - 1]; }
        double f(int n, int m, double a[n][m], long i, int k, int mm) {
            fill(m, a[i], 7.0);
            double s = rowsum(m, a[i]) + part(k, m, a) + part(k, mm, a);
            return s + rowsum(mm, a[0]);
        }";
    let p = prog(src);
    let jit = tessera_jit::Compiled::compile(&p, &Default::default()).unwrap();
    let (fid, _) = p.function("f").unwrap();
    let mut r = Rng(40);
    let mut kinds = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let n = r.range(1, 4);
        let m = r.range(1, 4);
        let mut a = ArrayData::zeros(ScalarTy::F64, &[n as usize, m as usize]).unwrap();
        a.fill_random(r.next(), "a");
        let args = vec![
            si(n as i32),
            si(m as i32),
            ArgValue::Array(a),
            sl(r.range(-1, 4)),
            si(r.range(-1, 5) as i32),
            si(r.range(-1, 5) as i32),
        ];
        match same(&p, &jit, fid, &args, Limits::default(), src) {
            Ok(_) => kinds.insert("ok".to_string()),
            Err(e) => kinds.insert(format!("{:?}", std::mem::discriminant(&e.kind))),
        };
    }
    assert!(kinds.len() >= 3, "{kinds:?}");
}

#[test]
fn aliased_array_arguments() {
    // `shift` and `axpy` get the same array (or the same row) for `x` and `y`, which makes
    // their loops recurrences. The JIT declares accesses to distinct arrays of a function
    // not to alias (LLVM scoped no-alias metadata) except for parameter pairs that some call
    // binds to the same storage: if such a pair were declared distinct, LLVM would vectorise
    // these loops without run-time overlap checks and the results would differ.
    let src = "
        void shift(int n, double x[n], double y[n]) {
            for (int i = 0; i + 1 < n; i++) y[i + 1] = x[i] * 0.5 + y[i + 1];
        }
        void axpy(int n, double a, double x[n], double y[n]) {
            for (int i = 1; i < n; i++) y[i] = y[i] + a * x[i - 1];
        }
        void both(int n, double x[n], double y[n], double z[n]) { shift(n, x, y); axpy(n, 0.25, y, z); }
        double f(int n, double a[n][n], double b[n], double c[n]) {
            shift(n, b, b);
            for (int r = 0; r < n; r++) shift(n, a[r], a[r]);
            axpy(n, 2.0, a[0], a[0]);
            shift(n, b, c);
            both(n, c, c, c);
            double s = 0;
            for (int i = 0; i < n; i++) s += b[i] + c[i] + a[i][n - 1 - i];
            return s;
        }";
    let p = prog(src);
    let jit = tessera_jit::Compiled::compile(&p, &Default::default()).unwrap();
    let (fid, _) = p.function("f").unwrap();
    let mut r = Rng(41);
    for n in [1usize, 2, 3, 7, 16, 33, 64] {
        let mut a = ArrayData::zeros(ScalarTy::F64, &[n, n]).unwrap();
        a.fill_random(r.next(), "a");
        let mut b = ArrayData::zeros(ScalarTy::F64, &[n]).unwrap();
        b.fill_random(r.next(), "b");
        let mut c = ArrayData::zeros(ScalarTy::F64, &[n]).unwrap();
        c.fill_random(r.next(), "c");
        let args = vec![
            si(n as i32),
            ArgValue::Array(a),
            ArgValue::Array(b),
            ArgValue::Array(c),
        ];
        same(&p, &jit, fid, &args, Limits::default(), src).unwrap();
    }
}

#[test]
fn entry_shape_mismatch() {
    let src = "double f(int n, double x[n][2 * n]) { return x[0][0]; }";
    for (n, shape) in [
        (2, vec![2, 4]),
        (2, vec![2, 3]),
        (3, vec![2, 6]),
        (0, vec![0, 0]),
        (2, vec![8]),
    ] {
        let len = shape.iter().product();
        let r = run_both(
            src,
            "f",
            vec![si(n), f64a(shape.clone(), vec![1.0; len])],
            Limits::default(),
        );
        if shape != vec![n as usize, 2 * n as usize] {
            assert!(
                matches!(
                    r,
                    Err(RuntimeError {
                        kind: ErrorKind::ShapeMismatch { .. },
                        ..
                    })
                ),
                "{r:?}"
            );
        }
    }
    // Errors while evaluating declared extents come first.
    let src = "double f(int n, int d, double x[n / d]) { return 0; }";
    let r = run_both(
        src,
        "f",
        vec![si(2), si(0), f64a(vec![2], vec![1.0; 2])],
        Limits::default(),
    );
    assert_eq!(r.unwrap_err().kind, ErrorKind::DivisionByZero);
}

#[test]
fn local_arrays() {
    let src = "
        double f(int n, long m) {
            double acc = 0;
            for (int it = 0; it < n; it++) {
                double t[m][3];
                for (long i = 0; i < m; i++) { t[i][0] = i + it; t[i][2] = t[i][0] * 2; }
                if (it == 2) continue;
                int z[4];
                z[it % 4] = it;
                acc += t[m - 1][2] + z[0];
                if (it == 5) break;
            }
            bool b[2];
            b[1] = acc > 3;
            return acc + b[1] + b[0];
        }";
    for n in [0, 1, 3, 7] {
        for m in [-1i64, 0, 1, 4] {
            run_both(src, "f", vec![si(n), sl(m)], Limits::default()).ok();
        }
    }
    // Bad extents and the arena limit.
    let src = "long f(long a, long b) { int t[a][b]; return 1; }";
    for (a, b) in [
        (-1, 2),
        (2, -1),
        (1 << 40, 1 << 40),
        (1 << 62, 4),
        (0, -1),
        (1000, 1000),
        (10, 10),
    ] {
        let limits = Limits {
            arena_bytes: 1 << 20,
            ..Limits::default()
        };
        run_both(src, "f", vec![sl(a), sl(b)], limits).ok();
    }
    // Arrays are freed at the end of their list: a loop stays within the arena.
    let src = "long f(int n) { long s = 0; for (int i = 0; i < n; i++) { long t[1000]; t[i % 1000] = i; s += t[i % 1000]; } return s; }";
    let limits = Limits {
        arena_bytes: 8000,
        ..Limits::default()
    };
    assert!(run_both(src, "f", vec![si(50)], limits).is_ok());
    let limits = Limits {
        arena_bytes: 7999,
        ..Limits::default()
    };
    assert!(run_both(src, "f", vec![si(50)], limits).is_err());
    // Recursion accumulates arena use.
    let src =
        "long r(int n) { long t[100]; t[0] = n; if (n == 0) return 0; return t[0] + r(n - 1); }";
    for arena in [800u64, 4000, 80000] {
        run_both(
            src,
            "r",
            vec![si(20)],
            Limits {
                arena_bytes: arena,
                ..Limits::default()
            },
        )
        .ok();
    }
    // Returning from inside nested lists releases everything.
    let src = "long h(int n) { long c[200]; return n; }\nlong r(int n) { long s = 0; for (int i = 0; i < n; i++) { long a[100]; { long b[100]; if (i == 3) return h(n); } } return s; }";
    run_both(
        src,
        "r",
        vec![si(5)],
        Limits {
            arena_bytes: 3200,
            ..Limits::default()
        },
    )
    .unwrap();
    run_both(
        src,
        "r",
        vec![si(5)],
        Limits {
            arena_bytes: 3199,
            ..Limits::default()
        },
    )
    .unwrap_err();
}

#[test]
fn bool_arrays_and_float_arrays() {
    check(
        "int f(int n, bool b[n], float x[n]) { int c = 0; for (int i = 0; i < n; i++) { if (b[i]) c++; b[i] = !b[i]; x[i] = x[i] * 2.5f + b[i]; } return c; }",
        "f",
        50,
        50,
    );
}

#[test]
fn concurrent_calls() {
    let src = "long fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }";
    let p = prog(src);
    let jit = std::sync::Arc::new(tessera_jit::Compiled::compile(&p, &Default::default()).unwrap());
    let (fid, _) = p.function("fib").unwrap();
    let hs: Vec<_> = (0..4)
        .map(|k| {
            let j = jit.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let r = j.call(fid, &mut [si(15 + k)]).unwrap();
                    assert!(r.is_some());
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn api_ir_asm_cache_and_options() {
    let src = "double f(int n, double x[n]) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * 2; return s; }";
    let a = tessera_jit::Compiled::cached(src, "f", &Default::default()).unwrap();
    let b = tessera_jit::Compiled::cached(src, "f", &Default::default()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert!(tessera_jit::Compiled::cached(src, "nope", &Default::default()).is_err());
    assert!(a.llvm_ir().contains("define"));
    let asm = a.asm().unwrap();
    assert!(asm.contains("tessera_entry0"));
    assert!(a.compile_ms() > 0.0);
    let fm = tessera_jit::Options {
        fast_math: true,
        ..Default::default()
    };
    let c = tessera_jit::Compiled::cached(src, "f", &fm).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
    let r = c
        .call(
            tessera_ir::FuncId(0),
            &mut [si(4), f64a(vec![4], vec![1.0, 2.0, 3.0, 4.0])],
        )
        .unwrap();
    assert_eq!(r, Some(Scalar::F64(20.0)));
    for lvl in 0..=3 {
        let p = prog(src);
        let o = tessera_jit::Options {
            opt_level: lvl,
            ..Default::default()
        };
        let j = tessera_jit::Compiled::compile(&p, &o).unwrap();
        assert_eq!(
            j.call(
                tessera_ir::FuncId(0),
                &mut [si(1), f64a(vec![1], vec![3.0])]
            )
            .unwrap(),
            Some(Scalar::F64(6.0))
        );
    }
    // Guards off: in-bounds programs still agree.
    let p = prog(src);
    let j = tessera_jit::Compiled::compile(
        &p,
        &tessera_jit::Options {
            guards: false,
            ..Default::default()
        },
    )
    .unwrap();
    // SAFETY: the accesses of `f(2, x[2])` are in bounds.
    assert_eq!(
        unsafe {
            j.call_unchecked(
                tessera_ir::FuncId(0),
                &mut [si(2), f64a(vec![2], vec![1.0, 2.0])],
            )
        }
        .unwrap(),
        Some(Scalar::F64(6.0))
    );
    // The safe call refuses unguarded code.
    let e = j
        .call(
            tessera_ir::FuncId(0),
            &mut [si(2), f64a(vec![2], vec![1.0, 2.0])],
        )
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::BadCall { .. }), "{e}");
}

#[test]
fn compiled_is_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<tessera_jit::Compiled>();
    let p = prog("int f(int a) { return a; }");
    let j = tessera_jit::Compiled::compile(&p, &Default::default()).unwrap();
    assert_eq!(j.func_id("f"), Some(FuncId(0)));
    assert_eq!(j.func_id("g"), None);
}

#[test]
fn deep_recursion_default_limit() {
    // JIT frames are small: the default depth limit (10 000) fits a test thread's stack.
    // (The debug-build interpreter needs a much larger stack for this, so the expected
    // values are written out: depth n+1 is reached by down(n).)
    let p = prog("int down(int n) { if (n == 0) return 0; return 1 + down(n - 1); }");
    let j = tessera_jit::Compiled::compile(&p, &Default::default()).unwrap();
    assert_eq!(
        j.call(FuncId(0), &mut [si(9_999)]).unwrap(),
        Some(Scalar::I32(9_999))
    );
    let e = j.call(FuncId(0), &mut [si(10_000)]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::StackOverflow { limit: 10_000 });
    assert_eq!(e.function, "down");
}
