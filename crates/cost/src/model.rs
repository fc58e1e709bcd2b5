//! Counting runs, the cost models CM0/CMC/CMW, whole-program cost Γ, and CMW calibration.

use crate::fragments::{instrument, Class, ClassCounts, FragmentMap, LabelKind, NodeId, NCLASSES};
use crate::nnls::nnls;
use crate::CostError;
use tessera_interp::Limits;
use tessera_ir::*;

/// CMW weights, one per class (indexed by [`Class::index`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights(pub [f64; NCLASSES]);

impl Weights {
    /// The weight of class `c`.
    pub fn get(&self, c: Class) -> f64 {
        self.0[c.index()]
    }
}

/// A fragment cost model γ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CostModel {
    /// The null model: γ = 1 for every fragment.
    Cm0,
    /// The count model: γ = the number of non-debug instructions.
    Cmc,
    /// The weighted model: γ = Σ w(class(op)) over the fragment's instructions.
    Cmw(Weights),
}

impl CostModel {
    /// γ of a fragment with the given class counts.
    pub fn gamma(&self, c: &ClassCounts) -> f64 {
        match self {
            CostModel::Cm0 => 1.0,
            CostModel::Cmc => c.total() as f64,
            CostModel::Cmw(w) => c.0.iter().zip(w.0).map(|(&n, w)| n as f64 * w).sum(),
        }
    }
}

/// The result of a counting run: the fragment map and the exact count of every node.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The labels, arms and fragments of the program.
    pub map: FragmentMap,
    /// Executions of every node (labels and arms), indexed by [`NodeId`].
    pub node_counts: Vec<u64>,
    /// The value the entry function returned.
    pub result: Option<Scalar>,
}

impl Profile {
    /// Executions of node `n`.
    pub fn count(&self, n: NodeId) -> u64 {
        self.node_counts[n.0 as usize]
    }
    /// The labels of function `f` with their kinds and counts, in node order.
    pub fn label_counts(&self, f: FuncId) -> Vec<(LabelKind, u64)> {
        self.map
            .labels_of(f)
            .into_iter()
            .map(|(id, k)| (k, self.count(id)))
            .collect()
    }
    /// Total executions of all labels.
    pub fn label_executions(&self) -> u64 {
        self.map.labels().map(|l| self.count(l)).sum()
    }
    /// The frequency n_j of every fragment (in the order of `map.fragments`).
    pub fn fragment_counts(&self) -> Vec<u64> {
        self.map
            .fragments
            .iter()
            .map(|f| self.count(f.leaf()))
            .collect()
    }
    /// Γ(P) = Σ_j n_j · γ(fragment j).
    pub fn gamma(&self, model: &CostModel) -> f64 {
        self.map
            .fragments
            .iter()
            .map(|f| self.count(f.leaf()) as f64 * model.gamma(&f.classes))
            .sum()
    }
    /// Σ_j n_j · classcount_j: instructions executed per class (a design-matrix row).
    pub fn class_totals(&self) -> [f64; NCLASSES] {
        let mut t = [0.0; NCLASSES];
        for f in &self.map.fragments {
            let n = self.count(f.leaf()) as f64;
            for (a, &c) in t.iter_mut().zip(&f.classes.0) {
                *a += n * c as f64;
            }
        }
        t
    }
}

/// Runs `entry` of `prog` with `args` under the reference interpreter, instrumented, and
/// returns the exact counts. On success the arrays in `args` are updated as a normal call
/// would update them; on error they are left as they were.
pub fn count_run(
    prog: &Program,
    entry: &str,
    args: &mut [ArgValue],
    limits: Limits,
) -> Result<Profile, CostError> {
    let (fid, _) = prog
        .function(entry)
        .ok_or_else(|| CostError::UnknownFunction(entry.to_string()))?;
    let (inst, map) = instrument(prog);
    let n = map.nodes.len();
    let counters = ArrayData::zeros(ScalarTy::I64, &[n]).ok_or(CostError::TooLarge(n))?;
    let mut all: Vec<ArgValue> = args.to_vec();
    all.push(ArgValue::Array(counters));
    let result = tessera_interp::call(&inst, fid, &mut all, limits).map_err(Box::new)?;
    let Some(ArgValue::Array(ArrayData {
        elems: ArrayElems::I64(c),
        ..
    })) = all.pop()
    else {
        unreachable!("the counter argument is a long array");
    };
    for (a, b) in args.iter_mut().zip(all) {
        *a = b;
    }
    Ok(Profile {
        map,
        node_counts: c.into_iter().map(|x| x as u64).collect(),
        result,
    })
}

/// The design-matrix row of one run of `entry` with `args`: instructions executed per
/// class, Σ_j n_j · classcount_j (the arguments are copied; the caller's are unchanged).
pub fn design_row(prog: &Program, entry: &str, args: &[ArgValue]) -> Result<Vec<f64>, CostError> {
    let mut args = args.to_vec();
    let p = count_run(prog, entry, &mut args, Limits::default())?;
    Ok(p.class_totals().to_vec())
}

fn check_rows(rows: &[Vec<f64>], times: &[f64]) -> Result<(), CostError> {
    if rows.len() != times.len() {
        return Err(CostError::Mismatch {
            rows: rows.len(),
            times: times.len(),
        });
    }
    Ok(())
}

fn predict(row: &[f64], w: &[f64]) -> f64 {
    row.iter().zip(w).map(|(a, b)| a * b).sum()
}

/// Fits the CMW weights by non-negative least squares: times ≈ rows · w, w ≥ 0 (k = 1).
pub fn fit_cmw(rows: &[Vec<f64>], times: &[f64]) -> Result<Vec<f64>, CostError> {
    check_rows(rows, times)?;
    Ok(nnls(rows, times)?.x)
}

/// The coefficient of determination of the predictions rows · w against `times`:
/// 1 − SS_res / SS_tot (1 for a perfect fit; SS_tot = 0 gives 1 if the fit is exact, else
/// −∞).
pub fn r_squared(rows: &[Vec<f64>], times: &[f64], weights: &[f64]) -> Result<f64, CostError> {
    check_rows(rows, times)?;
    if let Some(r) = rows.iter().find(|r| r.len() != weights.len()) {
        return Err(CostError::Width {
            row: r.len(),
            weights: weights.len(),
        });
    }
    if times.is_empty() {
        return Err(CostError::Mismatch { rows: 0, times: 0 });
    }
    let predicted: Vec<f64> = rows.iter().map(|r| predict(r, weights)).collect();
    Ok(r_squared_of(&predicted, times))
}

/// R² of predictions against times (1 − residual / total sum of squares; −∞ if the times are
/// all equal and some prediction is not).
pub fn r_squared_of(predicted: &[f64], times: &[f64]) -> f64 {
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    let ss_tot: f64 = times.iter().map(|t| (t - mean).powi(2)).sum();
    let ss_res: f64 = predicted
        .iter()
        .zip(times)
        .map(|(p, t)| (t - p).powi(2))
        .sum();
    if ss_tot == 0.0 {
        if ss_res == 0.0 {
            1.0
        } else {
            f64::NEG_INFINITY
        }
    } else {
        1.0 - ss_res / ss_tot
    }
}

/// Leave-one-out prediction errors: for each sample i, fit on the others and return
/// `times[i] − rows[i] · w₋ᵢ`. Needs at least two samples.
pub fn loo_errors(rows: &[Vec<f64>], times: &[f64]) -> Result<Vec<f64>, CostError> {
    check_rows(rows, times)?;
    if rows.len() < 2 {
        return Err(CostError::TooFewSamples(rows.len()));
    }
    (0..rows.len())
        .map(|i| {
            let r: Vec<Vec<f64>> = rows
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, r)| r.clone())
                .collect();
            let t: Vec<f64> = times
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &t)| t)
                .collect();
            let w = fit_cmw(&r, &t)?;
            Ok(times[i] - predict(&rows[i], &w))
        })
        .collect()
}

/// Root mean square of the leave-one-out prediction errors.
pub fn loo_rmse(rows: &[Vec<f64>], times: &[f64]) -> Result<f64, CostError> {
    let e = loo_errors(rows, times)?;
    Ok((e.iter().map(|x| x * x).sum::<f64>() / e.len() as f64).sqrt())
}
