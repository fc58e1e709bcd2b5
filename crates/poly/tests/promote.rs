//! Register promotion (`tessera_poly::promote`) on kernels from source: which elements it
//! keeps in locals, and that the promoted function computes what the original does (the
//! reference interpreter runs both on random inputs at sizes 0, 1, 2, 3 and 7).

mod common;

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, ArrayElems, Program, Scalar};

/// The program of `src` with every subscript marked proven in bounds (as the polyhedral
/// stage marks those it proves), before and after promotion; and promotion's notes.
fn promoted(src: &str) -> (Program, Program, Vec<String>) {
    let mut prog =
        tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"));
    for s in prog.functions[0].body.iter_mut() {
        tessera_poly::gen::mark_all_proven(s);
    }
    let before = prog.clone();
    let f = &mut prog.functions[0];
    let mut body = std::mem::take(&mut f.body);
    let notes = tessera_poly::promote::promote(f, &mut body);
    f.body = body;
    (before, prog, notes)
}

/// Runs both programs on the same random `n x n` arrays (every parameter after `n` is one)
/// at several `n` and asserts equal results, bit for bit.
fn same_results(before: &Program, after: &Program, arrays: usize, float: bool) {
    let mut next = common::xorshift(0x9e37_79b9_7f4a_7c15u64);
    for n in [0usize, 1, 2, 3, 7] {
        let mut args = vec![ArgValue::Scalar(Scalar::I32(n as i32))];
        for _ in 0..arrays {
            let elems = if float {
                ArrayElems::F64(
                    (0..n * n)
                        .map(|_| (next() % 2000) as f64 / 100.0 - 10.0)
                        .collect(),
                )
            } else {
                ArrayElems::I32((0..n * n).map(|_| (next() % 21) as i32 - 10).collect())
            };
            args.push(ArgValue::Array(ArrayData {
                shape: vec![n, n],
                elems,
            }));
        }
        common::assert_same_run(before, after, &args, &format!("n = {n}"));
    }
}

#[test]
fn matrix_product_keeps_its_accumulator() {
    let src = "void k(int n, double C[n][n], double A[n][n], double B[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p < n; p++)
                    C[i][j] += A[i][p] * B[p][j];
    }";
    let (before, after, notes) = promoted(src);
    assert_eq!(notes, ["1 element (C[i][j]) across the loop over `p`"]);
    same_results(&before, &after, 3, true);
}

#[test]
fn elements_a_constant_apart_are_promoted_together() {
    let src = "void k(int n, double C[n][n], double A[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j + 1 < n; j += 2)
                for (int p = 0; p < n; p++) {
                    C[i][j] += A[i][p];
                    C[i][j + 1] = C[i][j + 1] * 0.5 + C[i][j];
                }
    }";
    let (before, after, notes) = promoted(src);
    assert_eq!(
        notes,
        ["2 elements (C[i][j], C[i][j + 1]) across the loop over `p`"]
    );
    same_results(&before, &after, 2, true);
}

/// `C[i][j]` and `C[i][m]` are the same element when `j == m`: neither is promoted.
#[test]
fn elements_that_may_coincide_are_not_promoted() {
    let src = "void k(int n, double C[n][n], double A[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int m = 0; m < n; m++)
                    for (int p = 0; p < n; p++) {
                        C[i][j] += A[i][p];
                        C[i][m] *= 0.5;
                    }
    }";
    let (before, after, notes) = promoted(src);
    assert!(notes.is_empty(), "{notes:?}");
    same_results(&before, &after, 2, true);
}

/// An element updated only under a condition may not be read before the loop.
#[test]
fn conditional_updates_are_not_promoted() {
    let src = "void k(int n, double C[n][n], double A[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p < n; p++)
                    if (A[i][p] > 0.0)
                        C[i][j] += A[i][p];
    }";
    let (_, _, notes) = promoted(src);
    assert!(notes.is_empty(), "{notes:?}");
}

/// Integer division may fail (by zero) in the middle of the loop: the element in memory
/// must then hold what the iterations before wrote, so nothing is promoted.
#[test]
fn loops_that_may_fail_are_not_promoted() {
    let src = "void k(int n, int C[n][n], int A[n][n], int B[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p < n; p++)
                    C[i][j] += A[i][p] / B[p][j];
    }";
    let (before, after, notes) = promoted(src);
    assert!(notes.is_empty(), "{notes:?}");
    same_results(&before, &after, 3, false);
}

/// Subscripts that move with the loop, and accesses not proven in bounds, are left alone.
#[test]
fn moving_or_unproven_subscripts_are_not_promoted() {
    let src = "void k(int n, double C[n][n], double A[n][n]) {
        for (int i = 0; i < n; i++)
            for (int p = 0; p < n; p++)
                C[i][p] += A[i][p];
    }";
    let (_, _, notes) = promoted(src);
    assert!(notes.is_empty(), "{notes:?}");
    let prog = tessera_sema::compile_source(
        "void k(int n, double C[n][n], double A[n][n]) {
            for (int i = 0; i < n; i++)
                for (int p = 0; p < n; p++)
                    C[i][0] += A[i][p];
        }",
        &HashMap::new(),
    )
    .unwrap();
    let mut f = prog.functions[0].clone();
    let mut body = std::mem::take(&mut f.body);
    assert!(tessera_poly::promote::promote(&mut f, &mut body).is_empty());
}

/// The loops' `vectorize` flags of a statement list, outermost first.
fn vectorize_flags(body: &[tessera_ir::Stmt], out: &mut Vec<bool>) {
    use tessera_ir::Stmt;
    for s in body {
        match s {
            Stmt::While {
                vectorize, body, ..
            } => {
                out.push(*vectorize);
                vectorize_flags(body, out);
            }
            Stmt::Block(b) => vectorize_flags(b, out),
            Stmt::If { then, els, .. } => {
                vectorize_flags(then, out);
                vectorize_flags(els, out);
            }
            _ => {}
        }
    }
}

/// A loop keeping 8 accumulators (a micro-kernel's) is kept from LLVM's loop vectorizer;
/// one keeping a single accumulator is not.
#[test]
fn many_accumulators_turn_loop_vectorization_off() {
    let src = "void k(int n, double C[n][n], double A[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j + 7 < n; j += 8)
                for (int p = 0; p < n; p++) {
                    C[i][j] += A[i][p]; C[i][j + 1] += A[i][p]; C[i][j + 2] += A[i][p];
                    C[i][j + 3] += A[i][p]; C[i][j + 4] += A[i][p]; C[i][j + 5] += A[i][p];
                    C[i][j + 6] += A[i][p]; C[i][j + 7] += A[i][p];
                }
    }";
    let (before, after, notes) = promoted(src);
    assert_eq!(notes.len(), 1);
    assert!(notes[0].starts_with("8 elements"), "{notes:?}");
    let mut flags = Vec::new();
    vectorize_flags(&after.functions[0].body, &mut flags);
    assert_eq!(flags, [true, true, false]);
    same_results(&before, &after, 2, true);
    let src = "void k(int n, double C[n][n], double A[n][n], double B[n][n]) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int p = 0; p < n; p++)
                    C[i][j] += A[i][p] * B[p][j];
    }";
    let (_, after, _) = promoted(src);
    let mut flags = Vec::new();
    vectorize_flags(&after.functions[0].body, &mut flags);
    assert_eq!(flags, [true, true, true]);
}
