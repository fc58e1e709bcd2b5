//! Time tiling (`PolyOptions::time_tile`): which SCoPs are tiled in time (a first band with
//! no parallel member and uniform dependences), and that the tiled code computes what the
//! original does, bit for bit: the reference interpreter runs both on random inputs at
//! sizes around and between tiles of 4 (0 to 13 points, 0 to 9 time steps), with the
//! wavefront's parallel loops run forwards, backwards and shuffled (a parallel mark on a
//! loop that carries a dependence changes the results in the last two).

mod common;

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, ArrayElems, Program, Scalar};
use tessera_poly::{GenOptions, PolyOptions};

/// The kernels' signature: `(int tsteps, int n, arrays...)`, each array `n`, `n x n` or
/// `n x n x n` (its rank given), or `tsteps` long (rank 0 here).
fn args(tsteps: usize, n: usize, ranks: &[usize], next: &mut impl FnMut() -> u64) -> Vec<ArgValue> {
    let mut a = vec![
        ArgValue::Scalar(Scalar::I32(tsteps as i32)),
        ArgValue::Scalar(Scalar::I32(n as i32)),
    ];
    for &r in ranks {
        let shape = if r == 0 { vec![tsteps] } else { vec![n; r] };
        let len = shape.iter().product();
        let elems = ArrayElems::F64(
            (0..len)
                .map(|_| (next() % 2000) as f64 / 97.0 - 10.0)
                .collect(),
        );
        a.push(ArgValue::Array(ArrayData { shape, elems }));
    }
    a
}

/// Optimises `src` with tiles of 4 and the given test mode; returns the optimised program
/// and whether its SCoP was tiled in time.
fn optimised(src: &str, time_tile: bool, gen: GenOptions) -> (Program, Program, bool) {
    let prog =
        tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"));
    let opts = PolyOptions {
        tile_sizes: Some(vec![4]),
        time_tile,
        ..Default::default()
    };
    let (out, report) = tessera_poly::optimize(&prog, &opts, gen);
    assert_eq!(report.scops.len(), 1);
    let s = &report.scops[0];
    assert!(s.fallback.is_none(), "{:?}", s.fallback);
    let a = s.analysis.as_ref().expect("analysed");
    let tiled = a
        .computed_schedule
        .contains("uniform dependences: tiled in time)");
    if tiled {
        assert!(
            a.bands.iter().any(|b| b.note.contains("wavefront")),
            "{:?}",
            a.bands
        );
    }
    (prog, out, tiled)
}

/// Asserts that `src` is tiled in time exactly when `expect`, and that the optimised code
/// under each test mode gives the original's results bit for bit.
fn check(src: &str, ranks: &[usize], expect: bool) {
    for gen in common::parallel_test_modes() {
        let (before, after, tiled) = optimised(src, true, gen);
        assert_eq!(tiled, expect, "tiled in time");
        let mut next = common::xorshift(0x2545_f491_4f6c_dd1du64);
        for tsteps in [0usize, 1, 2, 5, 9] {
            for n in [0usize, 1, 2, 3, 4, 5, 7, 9, 13] {
                if ranks.contains(&3) && n > 9 {
                    continue;
                }
                let a = args(tsteps, n, ranks, &mut next);
                let case = format!("tsteps = {tsteps}, n = {n}, {gen:?}");
                common::assert_same_run(&before, &after, &a, &case);
            }
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
fn jacobi_1d_two_statements() {
    check(
        "void k(int tsteps, int n, double A[n], double B[n]) {
            for (int t = 0; t < tsteps; t++) {
                for (int i = 1; i < n - 1; i++)
                    B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
                for (int i = 1; i < n - 1; i++)
                    A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
            }
        }",
        &[1, 1],
        true,
    );
}

#[test]
fn jacobi_2d() {
    check(
        "void k(int tsteps, int n, double A[n][n], double B[n][n]) {
            for (int t = 0; t < tsteps; t++) {
                for (int i = 1; i < n - 1; i++)
                    for (int j = 1; j < n - 1; j++)
                        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][1 + j] + A[1 + i][j] + A[i - 1][j]);
                for (int i = 1; i < n - 1; i++)
                    for (int j = 1; j < n - 1; j++)
                        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][1 + j] + B[1 + i][j] + B[i - 1][j]);
            }
        }",
        &[2, 2],
        true,
    );
}

#[test]
fn seidel_2d_in_place_is_not_tiled_in_time() {
    // One statement, nine points, updated in place: uniform dependences, but `A[i][j-1]` is
    // a recurrence along the band's last member, which time tiles would keep innermost.
    check(
        "void k(int tsteps, int n, double A[n][n]) {
            for (int t = 0; t <= tsteps - 1; t++)
                for (int i = 1; i <= n - 2; i++)
                    for (int j = 1; j <= n - 2; j++)
                        A[i][j] = (A[i-1][j-1] + A[i-1][j] + A[i-1][j+1]
                                   + A[i][j-1] + A[i][j] + A[i][j+1]
                                   + A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0;
        }",
        &[2],
        false,
    );
}

#[test]
fn fdtd_2d_four_statements() {
    // PolyBench's fdtd-2d on a square grid: a statement per time step reading `fict`, and
    // three sweeps with different bounds.
    check(
        "void k(int tsteps, int n, double ex[n][n], double ey[n][n], double hz[n][n], double fict[tsteps]) {
            for (int t = 0; t < tsteps; t++) {
                for (int j = 0; j < n; j++)
                    ey[0][j] = fict[t];
                for (int i = 1; i < n; i++)
                    for (int j = 0; j < n; j++)
                        ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i-1][j]);
                for (int i = 0; i < n; i++)
                    for (int j = 1; j < n; j++)
                        ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j-1]);
                for (int i = 0; i < n - 1; i++)
                    for (int j = 0; j < n - 1; j++)
                        hz[i][j] = hz[i][j] - 0.7 * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]);
            }
        }",
        &[2, 2, 2, 0],
        true,
    );
}

#[test]
fn heat_3d_four_members() {
    check(
        "void k(int tsteps, int n, double A[n][n][n], double B[n][n][n]) {
            for (int t = 1; t <= tsteps; t++) {
                for (int i = 1; i < n - 1; i++)
                    for (int j = 1; j < n - 1; j++)
                        for (int p = 1; p < n - 1; p++)
                            B[i][j][p] = 0.125 * (A[i+1][j][p] - 2.0 * A[i][j][p] + A[i-1][j][p])
                                + 0.125 * (A[i][j+1][p] - 2.0 * A[i][j][p] + A[i][j-1][p])
                                + 0.125 * (A[i][j][p+1] - 2.0 * A[i][j][p] + A[i][j][p-1])
                                + A[i][j][p];
                for (int i = 1; i < n - 1; i++)
                    for (int j = 1; j < n - 1; j++)
                        for (int p = 1; p < n - 1; p++)
                            A[i][j][p] = 0.125 * (B[i+1][j][p] - 2.0 * B[i][j][p] + B[i-1][j][p])
                                + 0.125 * (B[i][j+1][p] - 2.0 * B[i][j][p] + B[i][j-1][p])
                                + 0.125 * (B[i][j][p+1] - 2.0 * B[i][j][p] + B[i][j][p-1])
                                + B[i][j][p];
            }
        }",
        &[3, 3],
        true,
    );
}

#[test]
fn lu_is_not_tiled_in_time() {
    // The first band has no parallel member, but the distances grow with `n` (row `k`
    // updates every row below it): scheduled again with outer coincidence.
    check(
        "void k(int tsteps, int n, double A[n][n]) {
            for (int k = 0; k < n; k++) {
                for (int j = k + 1; j < n; j++)
                    A[k][j] = A[k][j] / (A[k][k] + 100.0);
                for (int i = k + 1; i < n; i++)
                    for (int j = k + 1; j < n; j++)
                        A[i][j] = A[i][j] - A[i][k] * A[k][j];
            }
        }",
        &[2],
        false,
    );
}
