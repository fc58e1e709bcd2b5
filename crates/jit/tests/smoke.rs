mod common;
use common::*;

#[test]
fn dot() {
    let src = "double dot(int n, double x[n], double y[n]) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * y[i]; return s; }";
    let r = run_both(
        src,
        "dot",
        vec![
            si(3),
            f64a(vec![3], vec![1.0, 2.0, 3.0]),
            f64a(vec![3], vec![4.0, 5.0, 6.0]),
        ],
        Default::default(),
    );
    assert_eq!(r, Ok(Some(tessera_ir::Scalar::F64(32.0))));
}

/// A loop whose `vectorize` is false carries `llvm.loop.vectorize.enable = false`, and the
/// loop vectorizer leaves it alone: under fast-math it vectorizes the dot product's
/// reduction otherwise. Both compute what the interpreter does (sums of products of small
/// integers: exact in any order).
#[test]
fn loops_marked_not_to_vectorize_are_not_vectorized() {
    use std::collections::HashMap;
    use tessera_ir::Stmt;
    fn mark(body: &mut [Stmt]) {
        for s in body {
            match s {
                Stmt::While { vectorize, .. } => *vectorize = false,
                Stmt::Block(b) => mark(b),
                _ => {}
            }
        }
    }
    let src = "double dot(int n, double x[n], double y[n]) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * y[i]; return s; }";
    let prog = tessera_sema::compile_source(src, &HashMap::new()).unwrap();
    let mut marked = prog.clone();
    mark(&mut marked.functions[0].body);
    let opts = tessera_jit::Options {
        fast_math: true,
        ..Default::default()
    };
    let plain = tessera_jit::Compiled::compile(&prog, &opts).unwrap();
    let kept = tessera_jit::Compiled::compile(&marked, &opts).unwrap();
    assert!(plain.llvm_ir().contains("vector.body"));
    assert!(!plain.llvm_ir().contains("llvm.loop.vectorize.enable"));
    assert!(kept
        .llvm_ir()
        .contains("!\"llvm.loop.vectorize.enable\", i1 false"));
    assert!(!kept.llvm_ir().contains("vector.body"));
    let (fid, _) = prog.function("dot").unwrap();
    let n = 37;
    let args = || {
        vec![
            si(n),
            f64a(vec![n as usize], (0..n).map(|i| (i % 7) as f64).collect()),
            f64a(
                vec![n as usize],
                (0..n).map(|i| (i % 5) as f64 - 2.0).collect(),
            ),
        ]
    };
    let want = tessera_interp::call(&prog, fid, &mut args(), Default::default()).unwrap();
    assert!(want.is_some());
    assert_eq!(plain.call(fid, &mut args()).unwrap(), want);
    assert_eq!(kept.call(fid, &mut args()).unwrap(), want);
}

#[test]
fn read_only_arrays_are_refused_for_written_parameters() {
    use tessera_jit::{Args, CallError, Kernel, Options};
    let src = "void f(long n, const double a[n], double b[n]) { for (long i = 0; i < n; i++) b[i] = 2 * a[i]; }\n\
               void g(long n, double a[n]) { f(n, a, a); }";
    let k = Kernel::compile(src, "f", &Options::default()).unwrap();
    let a = [1.0, 2.0];
    let mut b = [0.0; 2];
    k.call(
        &mut Args::new()
            .scalar("n", 2)
            .array_ref("a", &a, &[2])
            .array("b", &mut b, &[2]),
    )
    .unwrap();
    assert_eq!(b, [2.0, 4.0]);
    let e = k
        .call(
            &mut Args::new()
                .scalar("n", 2)
                .array_ref("a", &a, &[2])
                .array_ref("b", &b, &[2]),
        )
        .unwrap_err();
    assert!(
        matches!(&e, CallError::ReadOnly { arg, .. } if arg == "b"),
        "{e}"
    );
    // Written through a call: `g` passes `a` where `f` writes.
    let g = Kernel::compile(src, "g", &Options::default()).unwrap();
    let e = g
        .call(&mut Args::new().scalar("n", 2).array_ref("a", &a, &[2]))
        .unwrap_err();
    assert!(
        matches!(&e, CallError::ReadOnly { arg, .. } if arg == "a"),
        "{e}"
    );
    // The interpreter never writes a read-only argument back.
    let (prog, fid) = (k.program().clone(), k.func_id());
    tessera_jit::interpret(
        &prog,
        fid,
        &mut Args::new()
            .scalar("n", 2)
            .array_ref("a", &a, &[2])
            .array("b", &mut b, &[2]),
        Default::default(),
    )
    .unwrap();
    assert_eq!((a, b), ([1.0, 2.0], [2.0, 4.0]));
}
