//! The front door in every mode: identical results and identical errors from the
//! interpreter, the JIT and the optimiser on one and two threads.

use tessera::{Args, CallError, Error, ErrorKind, Kernel, Mode, Scalar, ThreadsError};

const GEMM: &str = include_str!("../../../examples/kernels/gemm.c");
const JACOBI: &str = include_str!("../../../examples/kernels/jacobi-2d.c");

/// PolyBench style: the counters are declared at the top of the function.
const SYRK_TOP: &str = "void syrk(int n, int m, double alpha, double beta,
          double C[n][n], double A[n][m])
{
    int i, j, k;
    for (i = 0; i < n; i++) {
        for (j = 0; j <= i; j++)
            C[i][j] *= beta;
        for (k = 0; k < m; k++)
            for (j = 0; j <= i; j++)
                C[i][j] += alpha * A[i][k] * A[j][k];
    }
}
";

/// Every way to run a kernel: (mode, threads).
const WAYS: [(Mode, Option<usize>); 5] = [
    (Mode::Interp, None),
    (Mode::Jit, None),
    (Mode::Opt, Some(1)),
    (Mode::Opt, Some(2)),
    (Mode::Opt, None),
];

fn compile(src: &str, entry: &str, mode: Mode, threads: Option<usize>) -> Kernel {
    let b = Kernel::builder(src, entry).mode(mode);
    let b = match threads {
        Some(t) => b.threads(t),
        None => b,
    };
    b.compile()
        .unwrap_or_else(|e| panic!("{entry} in {mode}: {e}"))
}

/// Deterministic inputs: not all equal, different per array.
fn data(n: usize, salt: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| ((i * 2654435761 + salt * 97) % 1000) as f64 / 997.0 - 0.3)
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn gemm_is_identical_in_every_mode_at_awkward_sizes() {
    let kernels: Vec<Kernel> = WAYS
        .iter()
        .map(|&(m, t)| compile(GEMM, "gemm", m, t))
        .collect();
    for &(ni, nj, nk) in &[
        (0, 0, 0),
        (0, 3, 2),
        (1, 1, 1),
        (2, 1, 2),
        (1, 2, 0),
        (3, 5, 7),
        (13, 2, 11),
        (17, 19, 23),
        (37, 31, 41),
    ] {
        let mut outs = Vec::new();
        for k in &kernels {
            let mut a = data(ni * nk, 1);
            let mut b = data(nk * nj, 2);
            let mut c = data(ni * nj, 3);
            let r = k
                .call(
                    &mut Args::new()
                        .scalar("ni", ni)
                        .scalar("nj", nj)
                        .scalar("nk", nk)
                        .scalar("alpha", 1.5)
                        .scalar("beta", -1.2)
                        .array("C", &mut c, &[ni, nj])
                        .array("A", &mut a, &[ni, nk])
                        .array("B", &mut b, &[nk, nj]),
                )
                .unwrap();
            assert_eq!(r, None);
            outs.push(bits(&c));
        }
        for (o, way) in outs.iter().zip(WAYS).skip(1) {
            assert_eq!(
                o, &outs[0],
                "gemm {ni}x{nj}x{nk}: {way:?} differs from interp"
            );
        }
    }
}

#[test]
fn stencil_is_identical_in_every_mode_at_awkward_sizes() {
    let kernels: Vec<Kernel> = WAYS
        .iter()
        .map(|&(m, t)| compile(JACOBI, "jacobi_2d", m, t))
        .collect();
    for &(tsteps, n) in &[(0, 0), (1, 1), (2, 2), (3, 3), (2, 5), (4, 13), (3, 29)] {
        let mut outs = Vec::new();
        for k in &kernels {
            let mut a = data(n * n, 4);
            let mut b = data(n * n, 5);
            k.call(
                &mut Args::new()
                    .scalar("tsteps", tsteps)
                    .scalar("n", n)
                    .array("A", &mut a, &[n, n])
                    .array("B", &mut b, &[n, n]),
            )
            .unwrap();
            outs.push((bits(&a), bits(&b)));
        }
        for (o, way) in outs.iter().zip(WAYS).skip(1) {
            assert_eq!(o, &outs[0], "jacobi tsteps={tsteps} n={n}: {way:?}");
        }
    }
}

#[test]
fn counters_declared_at_the_top_are_optimised_and_identical() {
    let kernels: Vec<Kernel> = WAYS
        .iter()
        .map(|&(m, t)| compile(SYRK_TOP, "syrk", m, t))
        .collect();
    // The optimiser treats the nest as a SCoP.
    let opt = &kernels[3];
    assert!(
        opt.explain().contains("SCoP 1 in `syrk`"),
        "{}",
        opt.explain()
    );
    assert_eq!(
        opt.poly_summary(),
        Some("poly: 1 of 1 SCoP optimised, 0 loop nests not SCoPs")
    );
    for &(n, m) in &[(0, 0), (1, 0), (1, 1), (2, 3), (5, 7), (19, 11), (31, 2)] {
        let mut outs = Vec::new();
        for k in &kernels {
            let mut a = data(n * m, 6);
            let mut c = data(n * n, 7);
            k.call(
                &mut Args::new()
                    .scalar("n", n)
                    .scalar("m", m)
                    .scalar("alpha", 0.5)
                    .scalar("beta", 2.0)
                    .array("C", &mut c, &[n, n])
                    .array("A", &mut a, &[n, m]),
            )
            .unwrap();
            outs.push(bits(&c));
        }
        for (o, way) in outs.iter().zip(WAYS).skip(1) {
            assert_eq!(o, &outs[0], "syrk n={n} m={m}: {way:?}");
        }
    }
}

#[test]
fn return_values_and_integer_arrays_agree() {
    let src = "long hist(int n, int k, int x[n], long h[k]) {
        long s = 0;
        for (int i = 0; i < n; i++) { h[x[i] % k] += 1; s += x[i]; }
        return s;
    }";
    let mut seen = Vec::new();
    for (m, t) in WAYS {
        let k = compile(src, "hist", m, t);
        let mut x: Vec<i32> = (0..29).map(|i| (i * 7 + 3) % 31).collect();
        let mut h = vec![0i64; 5];
        let r = k
            .call(
                &mut Args::new()
                    .scalar("n", 29)
                    .scalar("k", 5)
                    .array("x", &mut x, &[29])
                    .array("h", &mut h, &[5]),
            )
            .unwrap();
        seen.push((r, h));
    }
    assert!(matches!(seen[0].0, Some(Scalar::I64(_))));
    for s in &seen[1..] {
        assert_eq!(s, &seen[0]);
    }
}

#[test]
fn a_bad_argument_is_the_same_error_value_in_every_mode() {
    let src = "void axpy(int n, double a, double x[n], double y[n]) {
        for (int i = 0; i < n; i++) y[i] += a * x[i];
    }";
    let mut errors: Vec<Vec<CallError>> = Vec::new();
    for (m, t) in WAYS {
        let k = compile(src, "axpy", m, t);
        let (mut x, mut y) = (vec![1.0; 4], vec![2.0; 4]);
        let mut xi = vec![1i32; 4];
        let e = vec![
            // Missing `y`.
            k.call(
                &mut Args::new()
                    .scalar("n", 4)
                    .scalar("a", 1.0)
                    .array("x", &mut x, &[4]),
            )
            .unwrap_err(),
            // Unknown `z`, given twice, wrong kind, a float for an int.
            k.call(&mut Args::new().scalar("z", 1)).unwrap_err(),
            k.call(&mut Args::new().scalar("n", 1).scalar("n", 1))
                .unwrap_err(),
            k.call(
                &mut Args::new()
                    .scalar("n", 4)
                    .scalar("a", 1.0)
                    .scalar("x", 1.0)
                    .array("y", &mut y, &[4]),
            )
            .unwrap_err(),
            k.call(
                &mut Args::new()
                    .scalar("n", 4.0)
                    .scalar("a", 1.0)
                    .array("x", &mut x, &[4])
                    .array("y", &mut y, &[4]),
            )
            .unwrap_err(),
            // An int array for a double one; a shape that is not the declared one; a slice
            // whose length is not the shape's.
            k.call(
                &mut Args::new()
                    .scalar("n", 4)
                    .scalar("a", 1.0)
                    .array("x", &mut xi, &[4])
                    .array("y", &mut y, &[4]),
            )
            .unwrap_err(),
            k.call(
                &mut Args::new()
                    .scalar("n", 3)
                    .scalar("a", 1.0)
                    .array("x", &mut x, &[4])
                    .array("y", &mut y, &[4]),
            )
            .unwrap_err(),
            k.call(
                &mut Args::new()
                    .scalar("n", 4)
                    .scalar("a", 1.0)
                    .array("x", &mut x, &[5])
                    .array("y", &mut y, &[4]),
            )
            .unwrap_err(),
        ];
        // Nothing ran.
        assert_eq!((x, y), (vec![1.0; 4], vec![2.0; 4]));
        errors.push(e);
    }
    let e = &errors[0];
    assert!(matches!(&e[0], CallError::Missing { arg, .. } if arg == "y"));
    assert!(matches!(&e[1], CallError::Unknown { arg, .. } if arg == "z"));
    assert!(matches!(&e[2], CallError::Duplicate { arg } if arg == "n"));
    assert!(matches!(&e[3], CallError::Kind { arg, .. } if arg == "x"));
    assert!(matches!(&e[4], CallError::ScalarType { arg, .. } if arg == "n"));
    assert!(matches!(&e[5], CallError::ElemType { arg, .. } if arg == "x"));
    assert!(matches!(&e[6], CallError::Shape { arg, .. } if arg == "x"));
    assert!(matches!(&e[7], CallError::Length { arg, .. } if arg == "x"));
    for (other, way) in errors.iter().zip(WAYS).skip(1) {
        assert_eq!(other, e, "{way:?}");
    }
}

#[test]
fn a_run_time_error_names_array_index_and_location_in_every_mode() {
    // i + d runs past the end when d > 0; the stencil's read is in a SCoP.
    let src = "void smooth(int n, int d, double x[n], double y[n]) {
    for (int i = 1; i < n - 1; i++)
        y[i] = (x[i - 1] + x[i] + x[i + d]) / 3;
}
";
    let mut errs = Vec::new();
    for (m, t) in WAYS {
        let k = compile(src, "smooth", m, t);
        let n = 11;
        let (mut x, mut y) = (data(n, 8), vec![0.0; n]);
        let err = k
            .call(
                &mut Args::new()
                    .scalar("n", n)
                    .scalar("d", 3)
                    .array("x", &mut x, &[n])
                    .array("y", &mut y, &[n]),
            )
            .unwrap_err();
        let rt = err.runtime().expect("a run-time error").clone();
        assert!(
            matches!(&rt.kind, ErrorKind::IndexOutOfBounds { array, index, .. }
                if array == "x" && index == &[11]),
            "{m}: {err}"
        );
        assert_eq!((rt.loc.line, rt.function.as_str()), (3, "smooth"), "{m}");
        // Writes before the fault are visible, as with the interpreter.
        errs.push((err, bits(&y)));
    }
    for (e, way) in errs.iter().zip(WAYS).skip(1) {
        assert_eq!(e, &errs[0], "{way:?}");
    }
}

#[test]
fn a_compile_error_carries_a_located_diagnostic() {
    let src =
        "void f(int n, double x[n]) {\n    for (int i = 0; i < n; i++)\n        x[i] = y;\n}\n";
    for (m, t) in WAYS {
        let b = Kernel::builder(src, "f").mode(m).file_name("bad.c");
        let b = match t {
            Some(t) => b.threads(t),
            None => b,
        };
        let err = b.compile().unwrap_err();
        let d = err.diagnostics();
        assert_eq!(d.len(), 1, "{m}: {err}");
        assert_eq!((d[0].span.line, d[0].span.col), (3, 16), "{m}");
        let text = err.to_string();
        assert!(text.starts_with("bad.c:3:16: error:"), "{m}: {text}");
        assert!(text.contains("x[i] = y;"), "{m}: the source line: {text}");
    }
    // No such entry: the functions that exist are listed.
    let err = Kernel::builder(GEMM, "gemn").compile().unwrap_err();
    assert!(err.diagnostics().is_empty());
    assert!(err.to_string().contains("`gemm`"), "{err}");
}

#[test]
fn thread_counts_are_bounded_like_the_cli() {
    for m in [Mode::Interp, Mode::Jit, Mode::Opt] {
        let err = Kernel::builder(GEMM, "gemm")
            .mode(m)
            .threads(0)
            .compile()
            .unwrap_err();
        assert!(
            matches!(err, Error::Threads(ThreadsError::ZeroThreads)),
            "{err}"
        );
        for absurd in [tessera::MAX_THREADS + 1, usize::MAX] {
            let err = Kernel::builder(GEMM, "gemm")
                .mode(m)
                .threads(absurd)
                .compile()
                .unwrap_err();
            assert!(
                matches!(err, Error::Threads(ThreadsError::TooManyThreads { requested, .. }) if requested == absurd),
                "{err}"
            );
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = tessera::max_threads(cores);
    assert!(Kernel::builder(GEMM, "gemm")
        .mode(Mode::Opt)
        .threads(max + 1)
        .compile()
        .is_err());
    let k = Kernel::builder(GEMM, "gemm")
        .mode(Mode::Opt)
        .threads(3)
        .compile()
        .unwrap();
    assert_eq!(k.threads(), Some(3));
}

#[test]
fn options_out_of_range_are_errors() {
    let b = || Kernel::builder(GEMM, "gemm");
    assert!(matches!(
        b().tile_sizes([32, 0]).compile(),
        Err(Error::Options(_))
    ));
    assert!(matches!(
        b().tile_sizes([]).compile(),
        Err(Error::Options(_))
    ));
    assert!(matches!(
        b().register_tile(0).compile(),
        Err(Error::Options(_))
    ));
    assert!(matches!(
        b().mode(Mode::Interp).guards(false).compile(),
        Err(Error::Options(_))
    ));
    assert!(matches!(
        b().mode(Mode::Interp).fast_math(true).compile(),
        Err(Error::Options(_))
    ));
}

#[test]
fn explain_mentions_the_scop_in_every_mode() {
    for (m, t) in WAYS {
        let k = compile(GEMM, "gemm", m, t);
        let text = k.explain();
        assert!(text.contains("SCoP 1 in `gemm`"), "{m}: {text}");
        assert!(text.contains("schedule"), "{m}: {text}");
        // The same text on the next call.
        assert!(std::ptr::eq(text, k.explain()));
    }
    // A loop nest that is not a SCoP says why.
    let src =
        "void f(int n, int x[n]) { for (int i = 0; i < n; i++) if (x[i] > 0) x[x[i] % n] = 0; }";
    let k = compile(src, "f", Mode::Opt, Some(1));
    assert!(k.explain().contains("not a SCoP"), "{}", k.explain());
    assert_eq!(
        k.poly_summary(),
        Some("poly: 0 of 0 SCoPs optimised, 1 loop nest not SCoPs")
    );
}

#[test]
fn unguarded_kernels_run_only_through_the_unsafe_call() {
    for m in [Mode::Jit, Mode::Opt] {
        let k = Kernel::builder(GEMM, "gemm")
            .mode(m)
            .guards(false)
            .compile()
            .unwrap();
        let (mut a, mut b, mut c) = (vec![1.0; 4], vec![1.0; 4], vec![1.0; 4]);
        let mut args = Args::new()
            .scalar("ni", 2)
            .scalar("nj", 2)
            .scalar("nk", 2)
            .scalar("alpha", 1.0)
            .scalar("beta", 1.0)
            .array("C", &mut c, &[2, 2])
            .array("A", &mut a, &[2, 2])
            .array("B", &mut b, &[2, 2]);
        assert!(matches!(
            k.call(&mut args),
            Err(CallError::Unguarded { .. })
        ));
        // SAFETY: gemm stays within the arrays, whose shapes are checked.
        unsafe { k.call_unchecked(&mut args) }.unwrap();
        drop(args);
        assert_eq!(c, [3.0; 4]);
    }
}

#[test]
fn one_kernel_is_called_from_many_threads_at_once() {
    let k = compile(GEMM, "gemm", Mode::Opt, Some(2));
    let reference = compile(GEMM, "gemm", Mode::Interp, None);
    let run = |k: &Kernel, n: usize| {
        let (mut a, mut b, mut c) = (data(n * n, 1), data(n * n, 2), data(n * n, 3));
        k.call(
            &mut Args::new()
                .scalar("ni", n)
                .scalar("nj", n)
                .scalar("nk", n)
                .scalar("alpha", 1.0)
                .scalar("beta", 0.5)
                .array("C", &mut c, &[n, n])
                .array("A", &mut a, &[n, n])
                .array("B", &mut b, &[n, n]),
        )
        .unwrap();
        bits(&c)
    };
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let k = k.clone();
                s.spawn(move || run(&k, 20 + t))
            })
            .collect();
        for (t, h) in hs.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), run(&reference, 20 + t));
        }
    });
}
