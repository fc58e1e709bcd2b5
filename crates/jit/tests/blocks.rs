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
