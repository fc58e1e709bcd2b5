//! Non-negative least squares: minimise `‖A x − b‖₂` subject to `x ≥ 0`.
//!
//! The Lawson–Hanson active-set algorithm (*Solving Least Squares Problems*, 1974, ch. 23):
//! the passive set `P` holds the variables free to move, the rest are held at zero. The
//! outer loop moves into `P` the variable with the largest positive component of the
//! gradient `w = Aᵀ(b − A x)`; the inner loop solves the unconstrained least-squares problem
//! on the columns of `P` and, while that solution has non-positive components, steps back
//! towards the feasible point and returns the variables that hit zero to the active set.
//!
//! The subproblems are solved with Householder QR; a column of `P` that is (numerically) a
//! combination of the others gets coefficient zero, so rank-deficient and zero columns give
//! a solution rather than a failure.

use thiserror::Error;

/// Why [`nnls`] could not run.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum NnlsError {
    /// The matrix has no rows or no columns.
    #[error("empty problem: the matrix has {rows} rows and {cols} columns")]
    Empty {
        /// Number of rows given.
        rows: usize,
        /// Number of columns given.
        cols: usize,
    },
    /// The rows of the matrix do not all have the same length.
    #[error("row {row} has {len} entries, row 0 has {expected}")]
    RaggedRows {
        /// The first offending row.
        row: usize,
        /// Its length.
        len: usize,
        /// The length of row 0.
        expected: usize,
    },
    /// The right-hand side does not have one entry per row.
    #[error("right-hand side has {len} entries, the matrix has {rows} rows")]
    RhsLength {
        /// Entries of `b`.
        len: usize,
        /// Rows of `A`.
        rows: usize,
    },
    /// An entry of the matrix or of the right-hand side is NaN or infinite.
    #[error("non-finite input value")]
    NonFinite,
}

/// The solution of an NNLS problem.
#[derive(Clone, Debug, PartialEq)]
pub struct NnlsSolution {
    /// The minimiser, every component `≥ 0`.
    pub x: Vec<f64>,
    /// The residual norm `‖A x − b‖₂`.
    pub residual_norm: f64,
    /// Outer iterations performed.
    pub iterations: usize,
}

/// Solves `min ‖A x − b‖₂` subject to `x ≥ 0`, with `A` given as rows (`a[i][j]`).
///
/// Errors on empty, ragged, mismatched or non-finite input; never panics.
pub fn nnls(a: &[Vec<f64>], b: &[f64]) -> Result<NnlsSolution, NnlsError> {
    let m = a.len();
    let n = a.first().map_or(0, Vec::len);
    if m == 0 || n == 0 {
        return Err(NnlsError::Empty { rows: m, cols: n });
    }
    if let Some((row, r)) = a.iter().enumerate().find(|(_, r)| r.len() != n) {
        return Err(NnlsError::RaggedRows {
            row,
            len: r.len(),
            expected: n,
        });
    }
    if b.len() != m {
        return Err(NnlsError::RhsLength {
            len: b.len(),
            rows: m,
        });
    }
    if a.iter().flatten().chain(b).any(|v| !v.is_finite()) {
        return Err(NnlsError::NonFinite);
    }
    let scale = a
        .iter()
        .flatten()
        .fold(0.0f64, |s, v| s.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    let tol = 10.0 * f64::EPSILON * scale * (m.max(n) as f64);
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    // Variables that entered the passive set and left it at once without moving x (their
    // gradient is positive only by rounding); not tried again until x changes.
    let mut banned = vec![false; n];
    let max_outer = 3 * n + 30;
    let mut iterations = 0;
    while iterations < max_outer {
        let r = residual(a, b, &x);
        // w = Aᵀ(b − A x): minus the gradient of ½‖Ax − b‖².
        let w: Vec<f64> = (0..n)
            .map(|j| (0..m).map(|i| a[i][j] * r[i]).sum())
            .collect();
        let rscale = r.iter().map(|v| v.abs()).fold(0.0, f64::max).max(1.0);
        let Some(t) = (0..n)
            .filter(|&j| !passive[j] && !banned[j] && w[j] > tol * rscale)
            .max_by(|&i, &j| w[i].total_cmp(&w[j]))
        else {
            break;
        };
        iterations += 1;
        passive[t] = true;
        let before = x.clone();
        loop {
            let cols: Vec<usize> = (0..n).filter(|&j| passive[j]).collect();
            let z = lstsq(a, b, &cols);
            if z.iter().all(|&v| v > 0.0) {
                for (&j, &v) in cols.iter().zip(&z) {
                    x[j] = v;
                }
                break;
            }
            // Step from x towards z as far as feasibility allows.
            let mut alpha: f64 = 1.0;
            for (&j, &v) in cols.iter().zip(&z) {
                if v <= 0.0 {
                    let d = x[j] - v;
                    alpha = alpha.min(if d > 0.0 { x[j] / d } else { 0.0 });
                }
            }
            for (&j, &v) in cols.iter().zip(&z) {
                x[j] += alpha * (v - x[j]);
                if x[j] <= tol {
                    x[j] = 0.0;
                    passive[j] = false;
                }
            }
            if !passive.iter().any(|&p| p) {
                break;
            }
        }
        if x == before {
            banned[t] = true;
        } else {
            banned.iter_mut().for_each(|b| *b = false);
        }
    }
    let r = residual(a, b, &x);
    Ok(NnlsSolution {
        residual_norm: r.iter().map(|v| v * v).sum::<f64>().sqrt(),
        x,
        iterations,
    })
}

fn residual(a: &[Vec<f64>], b: &[f64], x: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(row, &bi)| bi - row.iter().zip(x).map(|(p, q)| p * q).sum::<f64>())
        .collect()
}

/// Unconstrained least squares on the columns `cols` of `a` by Householder QR. A column
/// whose pivot is negligible (dependent on earlier ones, or zero) gets coefficient 0.
fn lstsq(a: &[Vec<f64>], b: &[f64], cols: &[usize]) -> Vec<f64> {
    let m = a.len();
    let k = cols.len();
    // Column-major copy.
    let mut q: Vec<Vec<f64>> = cols
        .iter()
        .map(|&j| a.iter().map(|r| r[j]).collect())
        .collect();
    let mut y = b.to_vec();
    let norm0 = q
        .iter()
        .map(|c| c.iter().map(|v| v * v).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let eps = 1e-12 * norm0.max(f64::MIN_POSITIVE);
    let mut usable = vec![false; k];
    let mut row = 0; // next pivot row
    let mut pivot_rows = vec![usize::MAX; k];
    for c in 0..k {
        if row >= m {
            break;
        }
        let alpha = q[c][row..].iter().map(|v| v * v).sum::<f64>().sqrt();
        if alpha <= eps {
            continue;
        }
        let s = if q[c][row] > 0.0 { -alpha } else { alpha };
        let mut v: Vec<f64> = q[c][row..].to_vec();
        v[0] -= s;
        let vn: f64 = v.iter().map(|t| t * t).sum();
        if vn > 0.0 {
            for col in q.iter_mut().skip(c) {
                let d: f64 = v.iter().zip(&col[row..]).map(|(p, t)| p * t).sum();
                let f = 2.0 * d / vn;
                for (t, p) in col[row..].iter_mut().zip(&v) {
                    *t -= f * p;
                }
            }
            let d: f64 = v.iter().zip(&y[row..]).map(|(p, t)| p * t).sum();
            let f = 2.0 * d / vn;
            for (t, p) in y[row..].iter_mut().zip(&v) {
                *t -= f * p;
            }
        }
        usable[c] = true;
        pivot_rows[c] = row;
        row += 1;
    }
    // Back substitution over the usable columns.
    let mut z = vec![0.0; k];
    for c in (0..k).rev() {
        if !usable[c] {
            continue;
        }
        let r = pivot_rows[c];
        let mut s = y[r];
        for c2 in c + 1..k {
            if usable[c2] {
                s -= q[c2][r] * z[c2];
            }
        }
        z[c] = s / q[c][r];
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
    }

    #[test]
    fn exactly_solvable() {
        let a = vec![
            vec![1.0, 2.0, 0.0],
            vec![0.0, 1.0, 3.0],
            vec![2.0, 0.0, 1.0],
            vec![1.0, 1.0, 1.0],
        ];
        let x = [0.5, 2.0, 1.5];
        let b: Vec<f64> = a
            .iter()
            .map(|r| r.iter().zip(&x).map(|(p, q)| p * q).sum())
            .collect();
        let s = nnls(&a, &b).unwrap();
        assert!(close(&s.x, &x, 1e-10), "{:?}", s.x);
        assert!(s.residual_norm < 1e-10);
    }

    #[test]
    fn negative_unconstrained_solution() {
        // The unconstrained solution of this square system is (2, -1): NNLS holds x2 at 0
        // and x1 minimises ‖a1 x1 − b‖: x1 = a1·b / a1·a1 = 1/2.
        let a = vec![vec![1.0, 1.0], vec![1.0, 2.0]];
        let b = vec![1.0, 0.0];
        let s = nnls(&a, &b).unwrap();
        assert!(close(&s.x, &[0.5, 0.0], 1e-12), "{:?}", s.x);
        // KKT: gradient on the active variable is non-positive.
        let r: Vec<f64> = residual(&a, &b, &s.x);
        let w1: f64 = a.iter().zip(&r).map(|(row, ri)| row[1] * ri).sum();
        assert!(w1 <= 1e-12);
    }

    #[test]
    fn classic_example() {
        // Solutions by hand: decoupled columns, the first fits the mean of its two rows.
        let a = vec![vec![1.0, 0.0], vec![1.0, 0.0], vec![0.0, 1.0]];
        let b = vec![2.0, 1.0, 1.0];
        let s = nnls(&a, &b).unwrap();
        assert!(close(&s.x, &[1.5, 1.0], 1e-12), "{:?}", s.x);
        let b = vec![-1.0, -1.0, 3.0];
        let s = nnls(&a, &b).unwrap();
        assert!(close(&s.x, &[0.0, 3.0], 1e-12), "{:?}", s.x);
    }

    #[test]
    fn all_negative_target_gives_zero() {
        let a = vec![vec![1.0, 2.0], vec![3.0, 1.0]];
        let s = nnls(&a, &[-1.0, -2.0]).unwrap();
        assert_eq!(s.x, vec![0.0, 0.0]);
    }

    #[test]
    fn rank_deficient_columns() {
        // Column 2 = 2 × column 1: the fit is exact with a non-negative combination.
        let a = vec![
            vec![1.0, 2.0, 1.0],
            vec![2.0, 4.0, 0.0],
            vec![3.0, 6.0, 1.0],
            vec![4.0, 8.0, 0.0],
        ];
        let b = vec![3.0, 4.0, 7.0, 8.0]; // = 2·c1 + 1·c3 (or 1·c2 + 1·c3)
        let s = nnls(&a, &b).unwrap();
        assert!(s.residual_norm < 1e-9, "{s:?}");
        assert!(s.x.iter().all(|&v| v >= 0.0));
        assert!((s.x[0] + 2.0 * s.x[1] - 2.0).abs() < 1e-9);
        assert!((s.x[2] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn zero_columns() {
        let a = vec![
            vec![0.0, 1.0, 0.0],
            vec![0.0, 2.0, 0.0],
            vec![0.0, 3.0, 0.0],
        ];
        let b = vec![2.0, 4.0, 6.0];
        let s = nnls(&a, &b).unwrap();
        assert!(close(&s.x, &[0.0, 2.0, 0.0], 1e-12), "{:?}", s.x);
        // An all-zero matrix: the solution is zero.
        let z = vec![vec![0.0; 2]; 3];
        let s = nnls(&z, &b).unwrap();
        assert_eq!(s.x, vec![0.0, 0.0]);
    }

    #[test]
    fn more_columns_than_rows() {
        let a = vec![vec![1.0, 1.0, 0.0, 2.0], vec![0.0, 1.0, 1.0, 1.0]];
        let b = vec![1.0, 1.0];
        let s = nnls(&a, &b).unwrap();
        assert!(s.residual_norm < 1e-10, "{s:?}");
        assert!(s.x.iter().all(|&v| v >= 0.0));
    }

    #[test]
    fn large_magnitudes() {
        // Design rows are instruction counts (up to ~1e10); times are small.
        let mut s: u64 = 99;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let w = [2e-9, 0.0, 5e-10, 0.0, 1e-9];
        let a: Vec<Vec<f64>> = (0..12)
            .map(|_| (0..5).map(|_| (rnd() * 1e10).round()).collect())
            .collect();
        let b: Vec<f64> = a
            .iter()
            .map(|r| r.iter().zip(&w).map(|(p, q)| p * q).sum())
            .collect();
        let sol = nnls(&a, &b).unwrap();
        for (x, y) in sol.x.iter().zip(&w) {
            assert!((x - y).abs() < 1e-15, "{:?}", sol.x);
        }
    }

    #[test]
    fn duplicate_and_dependent_columns_terminate() {
        let mut s: u64 = 5;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for _ in 0..100 {
            let a: Vec<Vec<f64>> = (0..5)
                .map(|_| {
                    let (p, q) = (rnd(), rnd());
                    vec![p, q, p, p + q, 0.0, -q]
                })
                .collect();
            let b: Vec<f64> = (0..5).map(|_| rnd()).collect();
            let sol = nnls(&a, &b).unwrap();
            assert!(sol.x.iter().all(|&v| v >= 0.0 && v.is_finite()));
            // No worse than x = 0.
            let bn = b.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!(sol.residual_norm <= bn + 1e-12);
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(nnls(&[], &[]), Err(NnlsError::Empty { rows: 0, cols: 0 }));
        assert_eq!(
            nnls(&[vec![]], &[1.0]),
            Err(NnlsError::Empty { rows: 1, cols: 0 })
        );
        assert!(matches!(
            nnls(&[vec![1.0, 2.0], vec![1.0]], &[1.0, 2.0]),
            Err(NnlsError::RaggedRows { row: 1, .. })
        ));
        assert!(matches!(
            nnls(&[vec![1.0]], &[1.0, 2.0]),
            Err(NnlsError::RhsLength { len: 2, rows: 1 })
        ));
        assert_eq!(nnls(&[vec![f64::NAN]], &[1.0]), Err(NnlsError::NonFinite));
    }

    #[test]
    fn random_problems_satisfy_kkt() {
        // A small LCG: deterministic pseudo-random problems.
        let mut s: u64 = 12345;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for _ in 0..200 {
            let (m, n) = (6, 4);
            let a: Vec<Vec<f64>> = (0..m).map(|_| (0..n).map(|_| rnd()).collect()).collect();
            let b: Vec<f64> = (0..m).map(|_| rnd()).collect();
            let sol = nnls(&a, &b).unwrap();
            let r = residual(&a, &b, &sol.x);
            for (j, &xj) in sol.x.iter().enumerate() {
                let w: f64 = (0..m).map(|i| a[i][j] * r[i]).sum();
                assert!(xj >= 0.0);
                if xj > 0.0 {
                    assert!(w.abs() < 1e-9, "w[{j}] = {w} with x = {:?}", sol.x);
                } else {
                    assert!(w < 1e-9, "w[{j}] = {w} with x = {:?}", sol.x);
                }
            }
        }
    }
}
