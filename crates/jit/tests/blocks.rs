//! Block counters in the optimised code (`Compiled::compile_counting`): the counting build
//! computes what the plain build computes, its counts follow the control flow exactly where
//! the control flow is known (the entry function's blocks run once per call; a loop whose
//! trip count is data-dependent runs its body blocks in proportion), and misuse is an error.

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, Scalar, ScalarTy};
use tessera_jit::{Compiled, Options};

fn prog(src: &str) -> tessera_ir::Program {
    tessera_sema::compile_source(src, &HashMap::new()).unwrap()
}

const COLLATZ: &str = "long steps(long x) { long s = 0; while (x != 1) { if (x % 2 == 0) x = x / 2; else x = 3 * x + 1; s++; } return s; }";

#[test]
fn counting_build_computes_the_same_and_counts_the_loop() {
    let p = prog(COLLATZ);
    let plain = Compiled::compile(&p, &Options::default()).unwrap();
    let counted = Compiled::compile_counting(&p, &Options::default()).unwrap();
    let blocks = counted.blocks().unwrap();
    assert!(!blocks.is_empty());
    let fid = plain.func_id("steps").unwrap();
    for x in [1i64, 2, 3, 27, 97] {
        let mut a = vec![ArgValue::Scalar(Scalar::I64(x))];
        let want = plain.call(fid, &mut a.clone()).unwrap();
        let mut c = vec![0i64; blocks.len()];
        let got = counted.call_counted(fid, &mut a, &mut c).unwrap();
        assert_eq!(want, got);
        let Some(Scalar::I64(steps)) = got else {
            panic!()
        };
        // The entry wrapper's first block runs exactly once per call.
        let entry = blocks
            .iter()
            .position(|b| b.function.starts_with("tessera_entry") && b.index == 0)
            .unwrap();
        assert_eq!(c[entry], 1, "x = {x}");
        // Some block runs once per iteration, and none more often than iterations + 1 (the
        // loop test). (The body function may be inlined into the entry wrapper.)
        let body: Vec<i64> = c.clone();
        assert!(body.iter().all(|&n| n <= steps + 1), "x = {x}: {body:?}");
        if steps > 0 {
            assert!(body.iter().any(|&n| n >= steps), "x = {x}: {body:?}");
        }
        // Every counted instruction class total is finite and the totals grow with steps.
        let total: i64 = c.iter().sum();
        assert!(total >= 1);
    }
    // Counts accumulate over calls into the same buffer.
    let mut c = vec![0i64; blocks.len()];
    for _ in 0..3 {
        counted
            .call_counted(fid, &mut [ArgValue::Scalar(Scalar::I64(1))], &mut c)
            .unwrap();
    }
    let entry = blocks
        .iter()
        .position(|b| b.function.starts_with("tessera_entry") && b.index == 0)
        .unwrap();
    assert_eq!(c[entry], 3);
    // A plain call of a counting build counts into a scratch buffer and works.
    assert_eq!(
        counted
            .call(fid, &mut [ArgValue::Scalar(Scalar::I64(27))])
            .unwrap(),
        Some(Scalar::I64(111))
    );
}

#[test]
fn counting_misuse_is_an_error() {
    let p = prog(COLLATZ);
    let plain = Compiled::compile(&p, &Options::default()).unwrap();
    let fid = plain.func_id("steps").unwrap();
    assert!(plain.blocks().is_none());
    let e = plain
        .call_counted(fid, &mut [ArgValue::Scalar(Scalar::I64(3))], &mut [0; 4])
        .unwrap_err();
    assert!(e.to_string().contains("without block counters"), "{e}");
    let counted = Compiled::compile_counting(&p, &Options::default()).unwrap();
    let n = counted.blocks().unwrap().len();
    let e = counted
        .call_counted(
            fid,
            &mut [ArgValue::Scalar(Scalar::I64(3))],
            &mut vec![0; n + 1],
        )
        .unwrap_err();
    assert!(e.to_string().contains("counters for"), "{e}");
}

#[test]
fn vectorised_loops_count_vector_instructions() {
    // A loop LLVM vectorises: its counted body blocks run about n / width times, and the
    // vector class is non-zero; the results equal the plain build's.
    let p = prog("void axpy(int n, double a, double x[n], double y[n]) { for (int i = 0; i < n; i++) y[i] = y[i] + a * x[i]; }");
    let counted = Compiled::compile_counting(&p, &Options::default()).unwrap();
    let plain = Compiled::compile(&p, &Options::default()).unwrap();
    let fid = plain.func_id("axpy").unwrap();
    let n = 1003usize;
    let mut x = ArrayData::zeros(ScalarTy::F64, &[n]).unwrap();
    x.fill_random(1, "x");
    let mut y = ArrayData::zeros(ScalarTy::F64, &[n]).unwrap();
    y.fill_random(2, "y");
    let args = vec![
        ArgValue::Scalar(Scalar::I32(n as i32)),
        ArgValue::Scalar(Scalar::F64(1.5)),
        ArgValue::Array(x),
        ArgValue::Array(y),
    ];
    let mut a1 = args.clone();
    plain.call(fid, &mut a1).unwrap();
    let blocks = counted.blocks().unwrap();
    let mut c = vec![0i64; blocks.len()];
    let mut a2 = args.clone();
    counted.call_counted(fid, &mut a2, &mut c).unwrap();
    assert_eq!(a1, a2);
    let vec_work: i64 = blocks
        .iter()
        .zip(&c)
        .map(|(b, &k)| b.classes[4] as i64 * k)
        .sum();
    let max_count = *c.iter().max().unwrap();
    assert!(vec_work > 0, "no vector instructions executed");
    assert!(
        max_count < n as i64,
        "a block ran {max_count} times for n = {n}"
    );
}

/// The loop features of the block a loop's recurrence is attributed to (its header), summed
/// over the program's blocks: strided accesses and the five chain classes.
fn features(src: &str) -> ([u32; 5], u32, u32) {
    use tessera_jit::blocks::{BRANCH_DATA, CHAIN, STRIDED};
    let counted = Compiled::compile_counting(&prog(src), &Options::default()).unwrap();
    let blocks = counted.blocks().unwrap();
    let mut chain = [0u32; 5];
    let (mut strided, mut data) = (0, 0);
    for b in blocks {
        for (a, c) in chain.iter_mut().zip(&b.classes[CHAIN..CHAIN + 5]) {
            *a += c;
        }
        strided += b.classes[STRIDED];
        data += b.classes[BRANCH_DATA];
        // Every block in a loop names a header that is itself in the list.
        if let Some(h) = b.loop_head {
            assert!(h < blocks.len() && blocks[h].function == b.function);
        }
    }
    (chain, strided, data)
}

#[test]
fn loop_features_find_recurrences_and_strides() {
    // chain_int, chain_float, chain_idiv, chain_fmath, chain_mem.
    let (c, s, _) = features(
        "long f(int n) { long x = 7; for (int i = 0; i < n; i++) { x = x * 31 + 5; x = x ^ (x >> 3); } return x; }",
    );
    assert!(c[0] >= 3 && c[1] == 0 && c[3] == 0 && s == 0, "{c:?} {s}");
    let (c, _, _) = features(
        // (LLVM unrolls this loop: one add and one division per copy of the body.)
        "double f(int n) { double x = 1.5; for (int i = 0; i < n; i++) x = 1.0 / (x + 1.0); return x; }",
    );
    assert!(c[3] >= 1 && c[1] == c[3], "{c:?}");
    let (c, _, _) = features(
        "long f(int n) { long a = 1000003, b = 77; for (int i = 0; i < n; i++) { long t = a % b; a = b; b = t + 1; } return a; }",
    );
    assert!(c[2] >= 1, "{c:?}");
    // Pointer chasing: the next index is loaded.
    let (c, _, _) = features(
        "int f(int n, int nx[n]) { int j = 0; for (int i = 0; i < n; i++) j = nx[j]; return j; }",
    );
    assert!(c[4] >= 1, "{c:?}");
    // Through memory: each iteration loads what the previous one stored (Gauss-Seidel).
    // (LLVM forwards the value through a phi in small cases; in the example kernel it does
    // not.)
    let (c, _, _) = features(include_str!("../../../examples/kernels/seidel-2d.c"));
    assert!(c[4] >= 1 && c[3] >= 1, "{c:?}");
    // A transposing copy walks A by columns; a plain copy does not.
    let (_, s, _) = features(
        "void f(int n, double A[n][n], double B[n][n]) { for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) B[i][j] = A[j][i]; }",
    );
    assert!(s >= 1, "{s}");
    let (c, s, _) = features(
        "void f(int n, double A[n][n], double B[n][n]) { for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) B[i][j] = A[i][j]; }",
    );
    assert!(s == 0 && c[1] == 0 && c[3] == 0, "{c:?} {s}");
}
