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
