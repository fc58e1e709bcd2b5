//! The embedding API (`Kernel`, `Args`): results agree with the reference interpreter on
//! random inputs and awkward sizes, every argument error is reported before anything runs
//! and names the argument, run-time faults come back as the interpreter's errors, compiled
//! kernels are shared through the cache and callable from several threads.

use std::sync::Arc;
use tessera_ir::{ArgValue, ArrayData, ArrayElems};
use tessera_jit::ndarray::{Array2, Array3, ShapeBuilder};
use tessera_jit::{
    Args, CallError, CompileError, ErrorKind, Kernel, Limits, Options, Scalar, ScalarTy,
};

const GEMM: &str = "void gemm(int ni, int nj, int nk, double alpha, double beta,
         double C[ni][nj], double A[ni][nk], double B[nk][nj]) {
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nj; j++) {
            C[i][j] *= beta;
            for (int k = 0; k < nk; k++)
                C[i][j] += alpha * A[i][k] * B[k][j];
        }
}";

const MIXED: &str = "#include <stdbool.h>
long hist(int n, int nb, int x[n], long h[nb], bool seen[nb], float w[n]) {
    long total = 0;
    for (int i = 0; i < n; i++) {
        int b = x[i] % nb;
        h[b] += 1;
        seen[b] = true;
        w[i] = w[i] * 2.0f + b;
        total += x[i];
    }
    return total;
}";

mod common;
use common::Rng;

/// A uniform double in [-0.5, 0.5).
fn uniform(rng: &mut Rng) -> f64 {
    (rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

fn interp(src: &str, entry: &str, args: &mut [ArgValue]) -> Option<Scalar> {
    let prog = tessera_sema::compile_source(src, &Default::default()).expect("valid source");
    let fid = prog.function(entry).expect("entry exists").0;
    tessera_interp::call(&prog, fid, args, Limits::default()).expect("interpreter runs")
}

fn f64s(a: &ArgValue) -> Vec<f64> {
    match a {
        ArgValue::Array(ArrayData {
            elems: ArrayElems::F64(v),
            ..
        }) => v.clone(),
        _ => unreachable!(),
    }
}

#[test]
fn gemm_matches_interpreter_on_awkward_sizes() {
    let k = Kernel::compile(GEMM, "gemm", &Options::default()).unwrap();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for &(ni, nj, nk) in &[
        (0, 0, 0),
        (1, 1, 1),
        (2, 3, 1),
        (0, 5, 3),
        (4, 0, 2),
        (3, 2, 0),
        (7, 13, 5),
        (17, 3, 11),
    ] {
        let mut a: Vec<f64> = (0..ni * nk).map(|_| uniform(&mut rng)).collect();
        let mut b: Vec<f64> = (0..nk * nj).map(|_| uniform(&mut rng)).collect();
        let mut c: Vec<f64> = (0..ni * nj).map(|_| uniform(&mut rng)).collect();
        let (alpha, beta) = (uniform(&mut rng), uniform(&mut rng));
        let arr = |v: &Vec<f64>, s: &[usize]| {
            ArgValue::Array(ArrayData {
                shape: s.to_vec(),
                elems: ArrayElems::F64(v.clone()),
            })
        };
        let mut ref_args = vec![
            ArgValue::Scalar(Scalar::I32(ni as i32)),
            ArgValue::Scalar(Scalar::I32(nj as i32)),
            ArgValue::Scalar(Scalar::I32(nk as i32)),
            ArgValue::Scalar(Scalar::F64(alpha)),
            ArgValue::Scalar(Scalar::F64(beta)),
            arr(&c, &[ni, nj]),
            arr(&a, &[ni, nk]),
            arr(&b, &[nk, nj]),
        ];
        interp(GEMM, "gemm", &mut ref_args);
        // Arguments in a different order than declared: they are matched by name.
        let r = k
            .call(
                &mut Args::new()
                    .array("B", &mut b, &[nk, nj])
                    .scalar("beta", beta)
                    .array("C", &mut c, &[ni, nj])
                    .scalar("nk", nk)
                    .scalar("ni", ni)
                    .array("A", &mut a, &[ni, nk])
                    .scalar("nj", nj)
                    .scalar("alpha", alpha),
            )
            .unwrap();
        assert_eq!(r, None);
        let want = f64s(&ref_args[5]);
        assert_eq!(
            c.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "gemm {ni}x{nj}x{nk} differs from the interpreter"
        );
    }
}

#[test]
fn all_element_types_and_return_value() {
    let k = Kernel::compile(MIXED, "hist", &Options::default()).unwrap();
    assert_eq!(
        k.signature(),
        "long hist(int n, int nb, int x[n], long h[nb], _Bool seen[nb], float w[n])"
    );
    for n in [0usize, 1, 2, 13] {
        let nb = 5usize;
        let mut x: Vec<i32> = (0..n as i32).map(|i| i * 7 + 3).collect();
        let mut h = vec![0i64; nb];
        let mut seen = vec![false; nb];
        let mut w: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let mut ref_args = vec![
            ArgValue::Scalar(Scalar::I32(n as i32)),
            ArgValue::Scalar(Scalar::I32(nb as i32)),
            ArgValue::Array(ArrayData {
                shape: vec![n],
                elems: ArrayElems::I32(x.clone()),
            }),
            ArgValue::Array(ArrayData {
                shape: vec![nb],
                elems: ArrayElems::I64(h.clone()),
            }),
            ArgValue::Array(ArrayData {
                shape: vec![nb],
                elems: ArrayElems::Bool(seen.clone()),
            }),
            ArgValue::Array(ArrayData {
                shape: vec![n],
                elems: ArrayElems::F32(w.clone()),
            }),
        ];
        let want = interp(MIXED, "hist", &mut ref_args);
        let got = k
            .call(
                &mut Args::new()
                    .scalar("n", n as i32)
                    .scalar("nb", nb as i64)
                    .array("x", &mut x, &[n])
                    .array("h", &mut h, &[nb])
                    .array("seen", &mut seen, &[nb])
                    .array("w", &mut w, &[n]),
            )
            .unwrap();
        assert_eq!(got, want);
        match (&ref_args[3], &ref_args[4], &ref_args[5]) {
            (
                ArgValue::Array(ArrayData {
                    elems: ArrayElems::I64(rh),
                    ..
                }),
                ArgValue::Array(ArrayData {
                    elems: ArrayElems::Bool(rs),
                    ..
                }),
                ArgValue::Array(ArrayData {
                    elems: ArrayElems::F32(rw),
                    ..
                }),
            ) => {
                assert_eq!(&h, rh);
                assert_eq!(&seen, rs);
                assert_eq!(&w, rw);
            }
            _ => unreachable!(),
        }
    }
}

const CHARS: &str = "typedef char base;
char fold(int n, char c, base s[n], int out[n]) {
    for (int i = 0; i < n; i++) {
        out[i] = s[i] + c;
        s[i] = s[i] * 3 + c;
    }
    return s[0] + 100;
}";

#[test]
fn char_arrays_and_scalars() {
    let k = Kernel::compile(CHARS, "fold", &Options::default()).unwrap();
    assert_eq!(
        k.signature(),
        "signed char fold(int n, signed char c, signed char s[n], int out[n])"
    );
    let n = 6usize;
    let mut s: Vec<i8> = vec![-128, -1, 0, 1, 100, 127];
    let mut out = vec![0i32; n];
    let mut ref_args = vec![
        ArgValue::Scalar(Scalar::I32(n as i32)),
        ArgValue::Scalar(Scalar::I8(-100)),
        ArgValue::Array(ArrayData {
            shape: vec![n],
            elems: ArrayElems::I8(s.clone()),
        }),
        ArgValue::Array(ArrayData {
            shape: vec![n],
            elems: ArrayElems::I32(out.clone()),
        }),
    ];
    let want = interp(CHARS, "fold", &mut ref_args);
    let got = k
        .call(
            &mut Args::new()
                .scalar("n", n)
                .scalar("c", -100i8)
                .array("s", &mut s, &[n])
                .array("out", &mut out, &[n]),
        )
        .unwrap();
    // Promoted arithmetic, wrapping stores: -128 * 3 - 100 = -484 stores as 28; the return
    // value 28 + 100 = 128 wraps to -128.
    assert_eq!(want, Some(Scalar::I8(-128)));
    assert_eq!(got, want);
    assert_eq!(out, vec![-228, -101, -100, -99, 0, 27]);
    assert_eq!(s, vec![28, -103, -100, -97, -56, 25]);
    assert_eq!(
        ref_args[2],
        ArgValue::Array(ArrayData {
            shape: vec![n],
            elems: ArrayElems::I8(s.clone()),
        })
    );
    // A `char` parameter takes integers in -128..=127 only.
    let mut s2 = vec![0i8; 1];
    let mut out2 = vec![0i32; 1];
    let e = k
        .call(
            &mut Args::new()
                .scalar("n", 1)
                .scalar("c", 128)
                .array("s", &mut s2, &[1])
                .array("out", &mut out2, &[1]),
        )
        .unwrap_err();
    assert!(
        matches!(e, CallError::ScalarType { ref arg, expected: ScalarTy::I8, .. } if arg == "c"),
        "{e:?}"
    );
    // An `int` array is not a `char` array.
    let mut wide = vec![0i32; 1];
    let e = k
        .call(
            &mut Args::new()
                .scalar("n", 1)
                .scalar("c", 1)
                .array("s", &mut wide, &[1])
                .array("out", &mut out2, &[1]),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            CallError::ElemType {
                expected: ScalarTy::I8,
                given: ScalarTy::I32,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn ndarray_views_zero_copy() {
    let src = "void axpy3(int a, int b, int c, double s, double X[a][b][c], double Y[a][b][c]) {
        for (int i = 0; i < a; i++)
            for (int j = 0; j < b; j++)
                for (int k = 0; k < c; k++)
                    Y[i][j][k] += s * X[i][j][k];
    }";
    let k = Kernel::compile(src, "axpy3", &Options::default()).unwrap();
    let mut x = Array3::<f64>::from_shape_fn((2, 3, 4), |(i, j, l)| (i * 12 + j * 4 + l) as f64);
    let mut y = Array3::<f64>::ones((2, 3, 4));
    let before = y.as_ptr();
    k.call(
        &mut Args::new()
            .scalar("a", 2)
            .scalar("b", 3)
            .scalar("c", 4)
            .scalar("s", 2.0)
            .array_nd("X", &mut x)
            .array_nd("Y", &mut y),
    )
    .unwrap();
    assert_eq!(y.as_ptr(), before, "results are written in place");
    assert_eq!(y[[1, 2, 3]], 1.0 + 2.0 * 23.0);
    assert_eq!(y[[0, 0, 0]], 1.0);

    // A transposed (Fortran-order) view is rejected, not silently read in the wrong order.
    let mut f = Array2::<f64>::zeros((3, 2).f());
    let t = Kernel::compile(
        "void z(int n, int m, double M[n][m]) { M[0][0] = 1.0; }",
        "z",
        &Options::default(),
    )
    .unwrap();
    let e = t
        .call(
            &mut Args::new()
                .scalar("n", 3)
                .scalar("m", 2)
                .array_nd("M", &mut f),
        )
        .unwrap_err();
    assert!(
        matches!(e, CallError::NotContiguous { ref arg, .. } if arg == "M"),
        "{e:?}"
    );
    assert_eq!(f[[0, 0]], 0.0, "nothing ran");
}

#[test]
fn argument_errors_name_the_argument_and_run_nothing() {
    let k = Kernel::compile(GEMM, "gemm", &Options::default()).unwrap();
    let (ni, nj, nk) = (2usize, 3usize, 4usize);
    let mut a = vec![1.0; ni * nk];
    let mut b = vec![1.0; nk * nj];
    let mut c = vec![7.0; ni * nj];
    let mut ci = vec![0i32; ni * nj];

    macro_rules! call {
        ($($m:ident($($x:expr),*)).*) => {
            k.call(&mut Args::new()$(.$m($($x),*))*).unwrap_err()
        };
    }
    // Missing `beta`.
    let e = call!(scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .array("C", &mut c, &[ni, nj])
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::Missing { ref arg, .. } if arg == "beta"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "missing argument `beta`: `gemm` expects `double beta`"
    );

    // Unknown name.
    let e = call!(scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .scalar("gamma", 1.0)
        .array("C", &mut c, &[ni, nj])
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::Unknown { ref arg, .. } if arg == "gamma"),
        "{e:?}"
    );
    assert!(e.to_string().contains("`alpha`"), "{e}");

    // Given twice.
    let e = call!(scalar("ni", ni)
        .scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .array("C", &mut c, &[ni, nj])
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert_eq!(e, CallError::Duplicate { arg: "ni".into() });

    // A scalar where an array is expected.
    let e = call!(scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .scalar("C", 1.0)
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::Kind { ref arg, .. } if arg == "C"),
        "{e:?}"
    );

    // A float for an int.
    let e = call!(scalar("ni", 2.5)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .array("C", &mut c, &[ni, nj])
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::ScalarType { ref arg, expected: ScalarTy::I32, .. } if arg == "ni"),
        "{e:?}"
    );

    // An int array for a double array.
    let e = call!(scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .array("C", &mut ci, &[ni, nj])
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::ElemType { ref arg, expected: ScalarTy::F64, given: ScalarTy::I32 } if arg == "C"),
        "{e:?}"
    );

    // A shape that is not the declared one: A is [ni][nk] = [2][4], given [4][2].
    let e = call!(scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .array("C", &mut c, &[ni, nj])
        .array("A", &mut a, &[nk, ni])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::Shape { ref arg, ref expected, ref given, .. }
            if arg == "A" && expected == &[2, 4] && given == &[4, 2]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "argument `A`: shape [4][2] does not match the declared `double A[ni][nk]` = [2][4]"
    );

    // A slice whose length is not the product of its shape.
    let e = call!(scalar("ni", ni)
        .scalar("nj", nj)
        .scalar("nk", nk)
        .scalar("alpha", 1.0)
        .scalar("beta", 1.0)
        .array("C", &mut c, &[ni, nj + 1])
        .array("A", &mut a, &[ni, nk])
        .array("B", &mut b, &[nk, nj]));
    assert!(
        matches!(e, CallError::Length { ref arg, len: 6, .. } if arg == "C"),
        "{e:?}"
    );

    assert!(c.iter().all(|&x| x == 7.0), "no failed call ran the kernel");
    assert_eq!(e.arg(), Some("C"));
    assert!(e.runtime().is_none());
}

#[test]
fn runtime_errors_are_the_interpreters() {
    let src = "int f(int n, int d, int x[n]) {
    int s = 0;
    for (int i = 0; i <= n; i++)
        s += x[i] / d;
    return s;
}";
    let k = Kernel::compile(src, "f", &Options::default()).unwrap();
    let mut x = vec![4i32, 8, 12];
    for (d, want) in [(0i32, "division by zero"), (2, "index out of bounds")] {
        let mut ref_args = vec![
            ArgValue::Scalar(Scalar::I32(3)),
            ArgValue::Scalar(Scalar::I32(d)),
            ArgValue::Array(ArrayData {
                shape: vec![3],
                elems: ArrayElems::I32(x.clone()),
            }),
        ];
        let prog = tessera_sema::compile_source(src, &Default::default()).unwrap();
        let ref_err = tessera_interp::call(
            &prog,
            prog.function("f").unwrap().0,
            &mut ref_args,
            Limits::default(),
        )
        .unwrap_err();
        let e = k
            .call(
                &mut Args::new()
                    .scalar("n", 3)
                    .scalar("d", d)
                    .array("x", &mut x, &[3]),
            )
            .unwrap_err();
        let rt = e.runtime().expect("a run-time error");
        assert_eq!(rt, &ref_err, "the JIT reports what the interpreter reports");
        assert!(rt.kind.to_string().starts_with(want), "{rt}");
        assert_eq!(rt.loc.line, 4);
        if let ErrorKind::IndexOutOfBounds { array, index, .. } = &rt.kind {
            assert_eq!((array.as_str(), index.as_slice()), ("x", &[3i64][..]));
        }
    }
}

#[test]
fn compile_errors() {
    let e = Kernel::builder("void k(int n, double A[n]) { A[0] = undefined_name; }", "k")
        .file_name("mine.c")
        .compile()
        .unwrap_err();
    match &e {
        CompileError::Frontend {
            rendered,
            diagnostics,
        } => {
            assert_eq!(diagnostics.len(), 1);
            assert!(
                rendered.starts_with(
                    "mine.c:1:37: error: use of undeclared identifier `undefined_name`"
                ),
                "{rendered}"
            );
        }
        other => panic!("{other:?}"),
    }
    let e = Kernel::compile(GEMM, "gemv", &Options::default()).unwrap_err();
    assert!(
        matches!(e, CompileError::NoSuchFunction { ref entry, ref available, .. }
        if entry == "gemv" && available == &["gemm".to_string()]),
        "{e:?}"
    );
}

#[test]
fn defines_and_cache() {
    let src = "#define N 4\nlong s(long A[N]) { long t = 0; for (int i = 0; i < N; i++) t += A[i]; return t; }";
    let k8 = Kernel::builder(src, "s").define("N", 8).compile().unwrap();
    let mut a: Vec<i64> = (1..=8).collect();
    assert_eq!(
        k8.call(&mut Args::new().array("A", &mut a, &[8])).unwrap(),
        Some(Scalar::I64(36))
    );
    let k4 = Kernel::builder(src, "s").compile().unwrap();
    let e = k4
        .call(&mut Args::new().array("A", &mut a, &[8]))
        .unwrap_err();
    assert!(matches!(e, CallError::Shape { .. }), "{e:?}");
    // The same source, entry and options compile once.
    let again = Kernel::builder(src, "s").define("N", 8).compile().unwrap();
    assert!(Arc::ptr_eq(k8.compiled(), again.compiled()));
    assert!(!Arc::ptr_eq(k8.compiled(), k4.compiled()));
}

#[test]
fn one_kernel_many_threads() {
    let k = Kernel::compile(GEMM, "gemm", &Options::default()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let k = &k;
            s.spawn(move || {
                let n = 3 + t;
                let mut a = vec![1.0; n * n];
                let mut b = vec![2.0; n * n];
                let mut c = vec![0.0; n * n];
                for _ in 0..50 {
                    k.call(
                        &mut Args::new()
                            .scalar("ni", n)
                            .scalar("nj", n)
                            .scalar("nk", n)
                            .scalar("alpha", 1.0)
                            .scalar("beta", 0.0)
                            .array("C", &mut c, &[n, n])
                            .array("A", &mut a, &[n, n])
                            .array("B", &mut b, &[n, n]),
                    )
                    .unwrap();
                }
                assert!(c.iter().all(|&x| x == 2.0 * n as f64));
            });
        }
    });
}

/// Runs `f` on a thread with a 2 MiB stack (the default of spawned threads) and returns its
/// result: a crash there (stack overflow, segfault) would abort the whole test binary.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn program(src: &str) -> (tessera_ir::Program, tessera_ir::FuncId) {
    let prog = tessera_sema::compile_source(src, &Default::default()).expect("valid source");
    let fid = prog.functions.len() - 1;
    (prog, tessera_ir::FuncId(fid as u32))
}

/// Malformed `ArgValue`s (the fields of `ArrayData` are public) through
/// `Compiled::call` and `tessera_interp::call`: the same `BadCall` error naming the
/// argument, before anything runs. Each of these used to crash the process in the JIT.
#[test]
fn malformed_arg_values_are_errors_in_both_back_ends() {
    let src = "double get(long n, long i, double x[n]) { return x[i]; }";
    let (prog, fid) = program(src);
    let jit = tessera_jit::Compiled::compile(&prog, &Options::default()).unwrap();
    let arr = |shape: Vec<usize>, len: usize| {
        ArgValue::Array(ArrayData {
            shape,
            elems: ArrayElems::F64(vec![1.0; len]),
        })
    };
    let s = |v: i64| ArgValue::Scalar(Scalar::I64(v));
    let cases: Vec<(Vec<ArgValue>, &str)> = vec![
        // The shape claims 2^20 elements, the data holds 4: i = 1000 passed the bounds check.
        (
            vec![s(1 << 20), s(1000), arr(vec![1 << 20], 4)],
            "argument `x`: shape [1048576] does not describe the 4 elements given",
        ),
        // `[usize::MAX]` is `-1` as a `long`: it matched `n = -1` and admitted any index.
        (
            vec![s(-1), s(1 << 40), arr(vec![usize::MAX], 4)],
            "argument `x`: shape [18446744073709551615]: extent 18446744073709551615 does not fit in a `long`",
        ),
        // A scalar for the array: the JIT dereferenced address 8.
        (
            vec![s(i64::MIN), s(0), s(7)],
            "argument `x`: expected an array of `double`, given the scalar `7`",
        ),
        (
            vec![arr(vec![4], 4), s(0), arr(vec![4], 4)],
            "argument `n`: expected a `long` scalar, given an array of `double`",
        ),
        (
            vec![
                s(4),
                s(0),
                ArgValue::Array(ArrayData {
                    shape: vec![4],
                    elems: ArrayElems::I32(vec![0; 4]),
                }),
            ],
            "argument `x`: expected an array of `double`, given an array of `int`",
        ),
        (vec![s(4), s(0)], "`get` takes 3 arguments, 2 given"),
        // The element count overflows `usize`.
        (
            vec![s(4), s(0), arr(vec![1 << 40, 1 << 40], 4)],
            "argument `x`: shape [1099511627776][1099511627776] does not describe the 4 elements given",
        ),
    ];
    for (mut args, want) in cases {
        let e = jit.call(fid, &mut args).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::BadCall {
                message: want.to_string()
            }
        );
        assert_eq!(e.function, "get");
        let i = tessera_interp::call(&prog, fid, &mut args, Limits::default()).unwrap_err();
        assert_eq!(e, i);
        assert_eq!(e.to_string(), i.to_string());
    }
    // Well-formed arguments still run.
    let mut ok = vec![s(4), s(3), arr(vec![4], 4)];
    assert_eq!(jit.call(fid, &mut ok).unwrap(), Some(Scalar::F64(1.0)));
}

/// Code compiled without guards runs only through the unsafe `call_unchecked`.
#[test]
fn unguarded_kernels_need_the_unsafe_call() {
    let src = "double get(int n, int i, double x[n]) { return x[i]; }";
    let opts = Options {
        guards: false,
        ..Default::default()
    };
    let k = Kernel::compile(src, "get", &opts).unwrap();
    let mut x = vec![1.0, 2.0, 3.0];
    // Out of bounds: with guards off this would read far outside `x`; it is refused.
    let e = k
        .call(
            &mut Args::new()
                .scalar("n", 3)
                .scalar("i", 1 << 30)
                .array("x", &mut x, &[3]),
        )
        .unwrap_err();
    assert!(matches!(&e, CallError::Unguarded { function } if function == "get"));
    assert!(e.to_string().contains("call_unchecked"), "{e}");
    // SAFETY: index 2 of a 3-element array.
    let r = unsafe {
        k.call_unchecked(
            &mut Args::new()
                .scalar("n", 3)
                .scalar("i", 2)
                .array("x", &mut x, &[3]),
        )
    };
    assert_eq!(r.unwrap(), Some(Scalar::F64(3.0)));
    // The same through `Compiled`.
    let c = k.compiled();
    let mut args = vec![
        ArgValue::Scalar(Scalar::I32(3)),
        ArgValue::Scalar(Scalar::I32(1 << 30)),
        ArgValue::Array(ArrayData {
            shape: vec![3],
            elems: ArrayElems::F64(x.clone()),
        }),
    ];
    let e = c.call(k.func_id(), &mut args).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::BadCall { .. }), "{e}");
    // With guards `call_unchecked` is `call`.
    let g = Kernel::compile(src, "get", &Options::default()).unwrap();
    // SAFETY: guarded code.
    let e = unsafe {
        g.call_unchecked(
            &mut Args::new()
                .scalar("n", 3)
                .scalar("i", 3)
                .array("x", &mut x, &[3]),
        )
    }
    .unwrap_err();
    assert!(matches!(
        e.runtime().map(|r| &r.kind),
        Some(ErrorKind::IndexOutOfBounds { .. })
    ));
}

/// Recursion whose frames do not fit in a 2 MiB stack: 9,000 calls deep (below the default
/// limit of 10,000), each frame holding 40 doubles live across the call. It used to abort
/// the process with a native stack overflow in the JIT; now the JIT switches to a stack
/// large enough for the depth limit, and the interpreter grows its stack on the heap: both
/// give the result.
const DEEP: &str = "double deep(int n, double x, double a[40]) {
    if (n == 0) return x;
    double v0 = a[0] * x + n; double v1 = a[1] * x + n; double v2 = a[2] * x + n;
    double v3 = a[3] * x + n; double v4 = a[4] * x + n; double v5 = a[5] * x + n;
    double v6 = a[6] * x + n; double v7 = a[7] * x + n; double v8 = a[8] * x + n;
    double v9 = a[9] * x + n; double v10 = a[10] * x + n; double v11 = a[11] * x + n;
    double v12 = a[12] * x + n; double v13 = a[13] * x + n; double v14 = a[14] * x + n;
    double v15 = a[15] * x + n; double v16 = a[16] * x + n; double v17 = a[17] * x + n;
    double v18 = a[18] * x + n; double v19 = a[19] * x + n; double v20 = a[20] * x + n;
    a[n % 40] += 1.0;
    double r = deep(n - 1, x + 1.0, a);
    return r + (v0 * v1 + v2 * v3 + v4 * v5 + v6 * v7 + v8 * v9 + v10 * v11 + v12 * v13
        + v14 * v15 + v16 * v17 + v18 * v19 + v20) * 1e-9;
}";

fn deep_args(n: i32) -> Vec<ArgValue> {
    vec![
        ArgValue::Scalar(Scalar::I32(n)),
        ArgValue::Scalar(Scalar::F64(0.5)),
        ArgValue::Array(ArrayData {
            shape: vec![40],
            elems: ArrayElems::F64((0..40).map(|i| i as f64 * 0.25).collect()),
        }),
    ]
}

#[test]
fn deep_recursion_on_a_small_stack_is_not_a_crash() {
    let (prog, fid) = program(DEEP);
    let prog = Arc::new(prog);
    let jit = Arc::new(tessera_jit::Compiled::compile(&prog, &Options::default()).unwrap());
    for n in [9_000, 10_000] {
        let (p, j) = (prog.clone(), jit.clone());
        let (ri, rj, ai, aj) = on_small_stack(move || {
            let mut ai = deep_args(n);
            let mut aj = deep_args(n);
            let ri = tessera_interp::call(&p, fid, &mut ai, Limits::default());
            let rj = j.call(fid, &mut aj);
            (ri, rj, ai, aj)
        });
        assert_eq!(ri, rj, "depth {n}");
        assert_eq!(ai, aj, "depth {n}");
        if n == 9_000 {
            assert!(ri.is_ok(), "{ri:?}");
        } else {
            assert_eq!(
                ri.unwrap_err().kind,
                ErrorKind::StackOverflow { limit: 10_000 }
            );
        }
    }
    // Through `Kernel::call` on a small stack too.
    let k = Kernel::compile(DEEP, "deep", &Options::default()).unwrap();
    let r = on_small_stack(move || {
        let mut a: Vec<f64> = (0..40).map(|i| i as f64 * 0.25).collect();
        k.call(
            &mut Args::new()
                .scalar("n", 9_000)
                .scalar("x", 0.5)
                .array("a", &mut a, &[40]),
        )
        .map_err(|e| e.to_string())
    });
    assert!(r.is_ok(), "{r:?}");
}

/// When the native stack does run out first (here: a depth limit raised to 10^8, which no
/// stack the JIT switches to covers), the JIT reports a `stack overflow` error instead of
/// crashing; the thread stays usable.
#[test]
fn native_stack_exhaustion_is_an_error() {
    let (prog, fid) = program(DEEP);
    let opts = Options {
        limits: Limits {
            max_call_depth: 100_000_000,
            ..Default::default()
        },
        ..Default::default()
    };
    let jit = Arc::new(tessera_jit::Compiled::compile(&prog, &opts).unwrap());
    let e = on_small_stack(move || {
        let e = jit.call(fid, &mut deep_args(50_000_000)).unwrap_err();
        // Still fine afterwards.
        assert!(jit.call(fid, &mut deep_args(100)).is_ok());
        e
    });
    assert_eq!(e.kind, ErrorKind::NativeStackOverflow);
    assert_eq!(e.function, "deep");
    assert!(e.to_string().contains("stack overflow"), "{e}");
}

/// A 20,000-statement straight-line function (one guarded access per statement) compiles
/// and gives the interpreter's result. Such functions took minutes in the O3 pipeline
/// (InstCombine's queries over thousands of guards on the same extent); huge functions
/// now get their implied guards folded first and the O1 pipeline. No timing threshold.
#[test]
fn huge_straight_line_function_compiles() {
    let mut src = String::from("long h(int n, long v[n]) {\n    long k = 1;\n");
    for i in 0..20_000 {
        src += &format!(
            "    k = k * {} + v[{}] / {};\n",
            i % 7 + 2,
            i % 64,
            i % 5 + 1
        );
    }
    src += "    return k;\n}\n";
    let k = Kernel::compile(&src, "h", &Options::default()).unwrap();
    let v: Vec<i64> = (0..64).map(|i| i * 3 - 50).collect();
    let mut vj = v.clone();
    let r = k
        .call(&mut Args::new().scalar("n", 64).array("v", &mut vj, &[64]))
        .unwrap();
    let mut args = vec![
        ArgValue::Scalar(Scalar::I32(64)),
        ArgValue::Array(ArrayData {
            shape: vec![64],
            elems: ArrayElems::I64(v),
        }),
    ];
    assert_eq!(r, interp(&src, "h", &mut args));
    // Too short an array: the guards are still there.
    let mut short = vec![0i64; 10];
    let e = k
        .call(&mut Args::new().scalar("n", 10).array("v", &mut short, &[10]))
        .unwrap_err();
    assert!(matches!(
        e.runtime().map(|r| &r.kind),
        Some(ErrorKind::IndexOutOfBounds { .. })
    ));
}
