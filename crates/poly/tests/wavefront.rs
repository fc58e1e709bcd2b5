//! Tiles in wavefronts for affine dependences (`PolyOptions::wavefront_tiles`): a first band
//! with no parallel member whose dependences are not uniform (lu, cholesky, gramschmidt) is
//! tiled and its tiles run in wavefronts, as Pluto does, where tiles create reuse or each
//! point of a tile is a loop; a 2-D band of single instances without reuse (trisolv) is
//! scheduled again with outer coincidence. The tiled code must compute what the original
//! does, bit for bit: the reference interpreter runs both on random inputs at sizes around
//! and between tiles of 4 (0 to 13, and 17), with the wavefront's parallel loops run
//! forwards, backwards and shuffled (a parallel mark on a loop that carries a dependence
//! changes the results in the last two).

mod common;

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, ArrayElems, Program, Scalar};
use tessera_poly::{GenOptions, PolyOptions};

/// Random values in [-10, 10) for an array of `shape`.
fn random(shape: Vec<usize>, next: &mut dyn FnMut() -> u64) -> ArgValue {
    let len = shape.iter().product();
    ArgValue::Array(ArrayData {
        shape,
        elems: ArrayElems::F64(
            (0..len)
                .map(|_| (next() % 2000) as f64 / 97.0 - 10.0)
                .collect(),
        ),
    })
}

/// `(int n, double A[n][n])` with `A` symmetric and diagonally dominant (positive definite:
/// cholesky takes no square root of a negative number, so no NaN, which never compares equal).
fn spd(n: usize, next: &mut dyn FnMut() -> u64) -> Vec<ArgValue> {
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..i {
            let x = (next() % 2000) as f64 / 1000.0 - 1.0;
            a[i * n + j] = x;
            a[j * n + i] = x;
        }
        a[i * n + i] = n as f64 + 1.0 + (next() % 100) as f64 / 100.0;
    }
    vec![
        ArgValue::Scalar(Scalar::I32(n as i32)),
        ArgValue::Array(ArrayData {
            shape: vec![n, n],
            elems: ArrayElems::F64(a),
        }),
    ]
}

/// `(int n, double A[n][n], ...)`: `ranks` arrays of rank 1 or 2, all `n` wide.
fn square(n: usize, ranks: &[usize], next: &mut dyn FnMut() -> u64) -> Vec<ArgValue> {
    let mut a = vec![ArgValue::Scalar(Scalar::I32(n as i32))];
    for &r in ranks {
        a.push(random(vec![n; r], next));
    }
    a
}

/// A kernel's arguments at size `n`, drawn from the random bits given.
type Inputs = dyn Fn(usize, &mut dyn FnMut() -> u64) -> Vec<ArgValue>;

/// Optimises `src` with tiles of 4 and the given test mode; returns the original and the
/// optimised program and whether its SCoP was tiled in wavefronts for affine dependences.
fn optimised(src: &str, wavefront_tiles: bool, gen: GenOptions) -> (Program, Program, bool) {
    let prog =
        tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"));
    let opts = PolyOptions {
        tile_sizes: Some(vec![4]),
        wavefront_tiles,
        ..Default::default()
    };
    let (out, report) = tessera_poly::optimize(&prog, &opts, gen);
    assert_eq!(report.scops.len(), 1);
    let s = &report.scops[0];
    let a = s.analysis.as_ref().expect("analysed");
    let tiled = a
        .computed_schedule
        .contains("affine dependences: tiled, the tiles run in wavefronts)");
    if tiled {
        assert!(
            a.bands
                .iter()
                .any(|b| b.note.contains("wavefront") && !b.wavefront.is_empty()),
            "{:?}",
            a.bands
        );
        // The optimised code runs, not the code as written.
        assert!(s.fallback.is_none(), "{:?}", s.fallback);
        // With its wavefronts' loops in parallel (outside the test modes, which run them
        // in order, reversed or shuffled): cholesky's is under the mark next to the
        // diagonal tile that isl separated from it.
        if !gen.reorders_parallel() {
            let text = tessera_ir::print::program(&out);
            assert!(text.contains("/* parallel */"), "{text}");
        }
    }
    (prog, out, tiled)
}

/// Asserts that `src` is tiled in wavefronts exactly when `expect`, and that the optimised
/// code under each test mode gives the original's results bit for bit on the inputs of
/// `inputs` at each size.
fn check(src: &str, inputs: &Inputs, expect: bool) {
    for gen in common::parallel_test_modes() {
        let (before, after, tiled) = optimised(src, true, gen);
        assert_eq!(tiled, expect, "tiled in wavefronts");
        let mut next = common::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 13, 17] {
            let args = inputs(n, &mut next);
            common::assert_same_run(&before, &after, &args, &format!("n = {n}, {gen:?}"));
        }
    }
    // With the option off the same SCoP is scheduled again with outer coincidence.
    let (_, _, tiled) = optimised(
        src,
        false,
        GenOptions {
            versions: false,
            ..Default::default()
        },
    );
    assert!(!tiled);
}

#[test]
fn lu_polybench() {
    // PolyBench/C 4.2.1's lu: the band (k, i, j) is permutable with no parallel member.
    check(
        "void k(int n, double A[n][n]) {
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < i; j++) {
                    for (int k = 0; k < j; k++)
                        A[i][j] -= A[i][k] * A[k][j];
                    A[i][j] /= A[j][j] + 100.0;
                }
                for (int j = i; j < n; j++)
                    for (int k = 0; k < i; k++)
                        A[i][j] -= A[i][k] * A[k][j];
            }
        }",
        &|n, next| square(n, &[2], next),
        true,
    );
}

#[test]
fn cholesky_polybench() {
    check(
        "#include <math.h>
        void k(int n, double A[n][n]) {
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < i; j++) {
                    for (int k = 0; k < j; k++)
                        A[i][j] -= A[i][k] * A[j][k];
                    A[i][j] /= A[j][j];
                }
                for (int k = 0; k < i; k++)
                    A[i][i] -= A[i][k] * A[i][k];
                A[i][i] = sqrt(A[i][i]);
            }
        }",
        &|n, next| spd(n, next),
        true,
    );
}

#[test]
fn gramschmidt_polybench() {
    // The band (k, j) has loops over `i` inside it: each tile point is a loop.
    check(
        "#include <math.h>
        void k(int n, double A[n][n], double R[n][n], double Q[n][n]) {
            for (int k = 0; k < n; k++) {
                double nrm = 0.0;
                for (int i = 0; i < n; i++)
                    nrm += A[i][k] * A[i][k];
                R[k][k] = sqrt(nrm) + 1.0;
                for (int i = 0; i < n; i++)
                    Q[i][k] = A[i][k] / R[k][k];
                for (int j = k + 1; j < n; j++) {
                    R[k][j] = 0.0;
                    for (int i = 0; i < n; i++)
                        R[k][j] += Q[i][k] * A[i][j];
                    for (int i = 0; i < n; i++)
                        A[i][j] = A[i][j] - Q[i][k] * R[k][j];
                }
            }
        }",
        &|n, next| square(n, &[2, 2, 2], next),
        true,
    );
}

#[test]
fn trisolv_is_not_tiled_in_wavefronts() {
    // A 2-D band of single instances without reuse: scheduled again with outer coincidence.
    check(
        "void k(int n, double L[n][n], double x[n], double b[n]) {
            for (int i = 0; i < n; i++) {
                x[i] = b[i];
                for (int j = 0; j < i; j++)
                    x[i] -= L[i][j] * x[j];
                x[i] = x[i] / (L[i][i] + 100.0);
            }
        }",
        &|n, next| square(n, &[2, 1, 1], next),
        false,
    );
}
