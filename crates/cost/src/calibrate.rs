//! Calibration per machine: samples (a program at a size, its per-class instruction totals
//! from a counting run, its measured time), the three models fitted to them, their quality
//! (R², leave-one-out relative errors), and the machine profile written to disk.
//!
//! Times span orders of magnitude (a micro-kernel of 10 µs next to a nest of 10 ms), so the
//! fits weigh each sample's residual by 1/√t: between relative residuals (divided by t, every
//! sample counting alike: what the leave-one-out relative error measures) and absolute ones
//! (what R² measures, dominated by the longest samples). On this machine's calibrations 1/√t
//! gave R² 0.02 higher than 1/t at an equal or lower leave-one-out median error. CM0 and CMC
//! have one coefficient each (k in t = k·Γ), CMW one weight per class (k = 1: Γ is in
//! nanoseconds).

use crate::fragments::{Class, NCLASSES};
use crate::jit::{LoopTerm, Machine, THROUGHPUT};
use crate::model::{CostModel, Weights};
use crate::nnls::nnls;
use crate::CostError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The version of the profile file format written by [`MachineProfile::save`].
pub const PROFILE_VERSION: u32 = 2;

/// One calibration measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The program (file stem and entry).
    pub name: String,
    /// Its size (the `-D` bindings).
    pub size: String,
    /// Label executions (Γ under CM0).
    pub labels: f64,
    /// Instructions executed per class ([`Class::ALL`] order).
    pub classes: [f64; NCLASSES],
    /// Machine-level features of the run (optimised LLVM IR, counted per basic block;
    /// [`crate::jit::MACHINE_FEATURES`] order).
    #[serde(default)]
    pub machine: Vec<f64>,
    /// Its loops with a loop-carried recurrence (for CMW-M's max(throughput, recurrence)).
    #[serde(default)]
    pub loops: Vec<LoopTerm>,
    /// Median time of one call, ns.
    pub time_ns: f64,
}

impl Sample {
    /// The design row of the sample under a model family: `[labels]` (CM0), `[total]` (CMC)
    /// or the class totals (CMW).
    pub fn row(&self, family: Family) -> Vec<f64> {
        match family {
            Family::Cm0 => vec![self.labels],
            Family::Cmc => vec![self.classes.iter().sum()],
            Family::Cmw => self.classes.to_vec(),
            Family::Mcc => vec![self
                .machine
                .iter()
                .take(tessera_jit::blocks::BASE_CLASSES)
                .sum()],
            // The sum form; the fit and its predictions use `machine_row`.
            Family::Mcw => self.machine.clone(),
        }
    }
}

/// A model family, before its coefficients are fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// γ = 1 per fragment.
    Cm0,
    /// γ = instruction count.
    Cmc,
    /// γ = weighted instruction count.
    Cmw,
    /// CMC on the optimised LLVM IR: instructions of the counted basic blocks.
    Mcc,
    /// CMW on the optimised LLVM IR: weighted instructions of the counted basic blocks.
    Mcw,
}

impl Family {
    /// All five: the paper's three on TIR fragments, then CMC and CMW on machine blocks.
    pub const ALL: [Family; 5] = [
        Family::Cm0,
        Family::Cmc,
        Family::Cmw,
        Family::Mcc,
        Family::Mcw,
    ];
    /// Its name as printed.
    pub fn name(self) -> &'static str {
        match self {
            Family::Cm0 => "CM0",
            Family::Cmc => "CMC",
            Family::Cmw => "CMW",
            Family::Mcc => "CMC-M",
            Family::Mcw => "CMW-M",
        }
    }
}

/// A fitted model and how well it predicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// Which model.
    pub family: Family,
    /// Its coefficients: k (ns per unit of Γ) for CM0 and CMC, the class weights (ns) for CMW.
    pub coef: Vec<f64>,
    /// Coefficient of determination of the predicted times on all samples.
    pub r2: f64,
    /// Median of the leave-one-out relative errors |predicted − measured| / measured.
    pub loo_median: f64,
    /// 90th percentile of the same.
    pub loo_p90: f64,
    /// The prediction of every sample by the fit on all samples (ns).
    pub predicted: Vec<f64>,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The weight of a sample's residual in the fits (see the module docs).
fn weight(t: f64) -> f64 {
    1.0 / t.sqrt()
}

/// Weighted NNLS: minimises Σ ((row·w − t) · weight(t))² over w ≥ 0.
fn fit_times(rows: &[Vec<f64>], times: &[f64]) -> Result<Vec<f64>, CostError> {
    fit_weighted(rows, times, times)
}

/// Weighted NNLS of `targets`, each residual weighed by `weight` of its sample's time.
fn fit_weighted(rows: &[Vec<f64>], targets: &[f64], times: &[f64]) -> Result<Vec<f64>, CostError> {
    if rows.len() != times.len() {
        return Err(CostError::Mismatch {
            rows: rows.len(),
            times: times.len(),
        });
    }
    if let Some(t) = times.iter().find(|t| !(t.is_finite() && **t > 0.0)) {
        return Err(CostError::BadTime(*t));
    }
    let scaled: Vec<Vec<f64>> = rows
        .iter()
        .zip(times)
        .map(|(r, t)| r.iter().map(|x| x * weight(*t)).collect())
        .collect();
    let target: Vec<f64> = targets
        .iter()
        .zip(times)
        .map(|(x, t)| x * weight(*t))
        .collect();
    Ok(nnls(&scaled, &target)?.x)
}

/// The `q`-quantile (0..=1) of `xs` (nearest rank; `xs` non-empty).
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Fits `family` to `samples` and measures it (R², leave-one-out relative errors).
pub fn fit(samples: &[Sample], family: Family) -> Result<Fit, CostError> {
    fit_with_entry(samples, family, None)
}

/// [`fit`], with CMW-M's weight of a call from Rust (`entry`, ns) fixed to a value measured
/// apart, if given, instead of fitted: the samples of microseconds that alone determine it
/// weigh little in the fit, and the skeletons, which call a kernel per element, need it.
pub fn fit_with_entry(
    samples: &[Sample],
    family: Family,
    entry_ns: Option<f64>,
) -> Result<Fit, CostError> {
    if samples.len() < 2 {
        return Err(CostError::TooFewSamples(samples.len()));
    }
    let all: Vec<&Sample> = samples.iter().collect();
    let times: Vec<f64> = samples.iter().map(|s| s.time_ns).collect();
    let coef = fit_family(&all, family, entry_ns)?;
    let predicted: Vec<f64> = samples
        .iter()
        .map(|s| predict_sample(s, family, &coef))
        .collect();
    let r2 = crate::model::r_squared_of(&predicted, &times);
    let mut loo = Vec::with_capacity(samples.len());
    for i in 0..samples.len() {
        let rest: Vec<&Sample> = (0..samples.len())
            .filter(|&j| j != i)
            .map(|j| &samples[j])
            .collect();
        let w = fit_family(&rest, family, entry_ns)?;
        loo.push((predict_sample(&samples[i], family, &w) - times[i]).abs() / times[i]);
    }
    Ok(Fit {
        family,
        coef,
        r2,
        loo_median: quantile(&loo, 0.5),
        loo_p90: quantile(&loo, 0.9),
        predicted,
    })
}

/// The predicted time (ns) of a sample under fitted coefficients.
pub fn predict_sample(s: &Sample, family: Family, coef: &[f64]) -> f64 {
    match family {
        Family::Mcw => Machine {
            totals: s.machine.clone(),
            loops: s.loops.clone(),
        }
        .gamma(coef),
        f => dot(&s.row(f), coef),
    }
}

/// Rounds of the alternating fit of CMW-M.
const MAX_ROUNDS: usize = 30;

fn fit_family(
    samples: &[&Sample],
    family: Family,
    entry_ns: Option<f64>,
) -> Result<Vec<f64>, CostError> {
    let times: Vec<f64> = samples.iter().map(|s| s.time_ns).collect();
    let rows: Vec<Vec<f64>> = samples.iter().map(|s| s.row(family)).collect();
    if family != Family::Mcw {
        return fit_times(&rows, &times);
    }
    // A fixed entry weight: its share of each time is taken out, its column dropped.
    let e = crate::jit::ENTRY_FEATURE;
    let fixed = entry_ns.filter(|_| rows.iter().all(|r| r.len() > e));
    let solve = |mut rows: Vec<Vec<f64>>| -> Result<Vec<f64>, CostError> {
        let Some(x) = fixed else {
            return fit_times(&rows, &times);
        };
        let rest: Vec<f64> = rows
            .iter()
            .zip(&times)
            .map(|(r, t)| (t - x * r[e]).max(0.05 * t))
            .collect();
        for r in &mut rows {
            r[e] = 0.0;
        }
        let mut w = fit_weighted(&rows, &rest, &times)?;
        w[e] = x;
        Ok(w)
    };
    let w = solve(rows)?;
    // CMW-M costs each loop with a recurrence max(throughput, recurrence): a max-affine
    // model, fitted by alternation from the sum model's weights. Each round decides which
    // loops are bound by their recurrence under the current weights, and refits the linear
    // model that this decision makes (a bound loop contributes its recurrence features, the
    // others their throughput features); it stops when no decision changes, keeping the
    // weights of least weighted error.
    let error = |w: &[f64]| -> f64 {
        samples
            .iter()
            .map(|s| ((predict_sample(s, Family::Mcw, w) - s.time_ns) * weight(s.time_ns)).powi(2))
            .sum()
    };
    let mut best = (error(&w), w.clone());
    let mut w = w;
    let mut last: Option<Vec<Vec<bool>>> = None;
    for _ in 0..MAX_ROUNDS {
        let bound: Vec<Vec<bool>> = samples
            .iter()
            .map(|s| s.loops.iter().map(|l| recurrence_bound(l, &w)).collect())
            .collect();
        if last.as_ref() == Some(&bound) {
            break;
        }
        let rows: Vec<Vec<f64>> = samples
            .iter()
            .zip(&bound)
            .map(|(s, b)| machine_row(s, b))
            .collect();
        w = solve(rows)?;
        let e = error(&w);
        if e < best.0 {
            best = (e, w.clone());
        }
        last = Some(bound);
    }
    Ok(best.1)
}

/// Whether a loop's recurrence costs more than its throughput under `w`.
fn recurrence_bound(l: &LoopTerm, w: &[f64]) -> bool {
    let (t, r) = w.split_at(THROUGHPUT.min(w.len()));
    dot(&l.l, r) > dot(&l.t, t)
}

/// The linear row of a sample when the loops marked in `bound` cost their recurrence.
fn machine_row(s: &Sample, bound: &[bool]) -> Vec<f64> {
    let mut r = s.machine.clone();
    for x in r.iter_mut().skip(THROUGHPUT) {
        *x = 0.0;
    }
    for (l, _) in s.loops.iter().zip(bound).filter(|(_, b)| **b) {
        for (x, t) in r.iter_mut().zip(&l.t) {
            *x -= t;
        }
        for (x, c) in r.iter_mut().skip(THROUGHPUT).zip(&l.l) {
            *x += c;
        }
    }
    r
}

/// A machine profile: the calibrated models of one machine, as written to disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    /// File format version ([`PROFILE_VERSION`]).
    pub version: u32,
    /// The host CPU as LLVM names it, and its features.
    pub host: String,
    /// When it was made (seconds since the Unix epoch).
    pub created_unix: u64,
    /// The class names, in the order of the CMW weights.
    pub classes: Vec<String>,
    /// The machine-level class names, in the order of the CMW-M weights.
    pub machine_classes: Vec<String>,
    /// The fits, one per [`Family`].
    pub fits: Vec<Fit>,
    /// The samples they were fitted on.
    pub samples: Vec<Sample>,
    /// The measured cost of one kernel call from Rust (ns), CMW-M's fixed `entry` weight
    /// (0: fitted with the others).
    #[serde(default)]
    pub entry_ns: f64,
}

impl MachineProfile {
    /// Fits the models to `samples`.
    pub fn from_samples(
        samples: Vec<Sample>,
        host: String,
        machine_classes: Vec<String>,
    ) -> Result<MachineProfile, CostError> {
        MachineProfile::from_samples_with_entry(samples, host, machine_classes, None)
    }

    /// Fits the models to `samples`, CMW-M with the measured cost of a call (ns) as its fixed
    /// `entry` weight if given.
    pub fn from_samples_with_entry(
        samples: Vec<Sample>,
        host: String,
        machine_classes: Vec<String>,
        entry_ns: Option<f64>,
    ) -> Result<MachineProfile, CostError> {
        let fits = Family::ALL
            .iter()
            .map(|&f| fit_with_entry(&samples, f, entry_ns))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MachineProfile {
            version: PROFILE_VERSION,
            host,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            classes: Class::ALL.iter().map(|c| c.name().to_string()).collect(),
            machine_classes,
            fits,
            samples,
            entry_ns: entry_ns.unwrap_or(0.0),
        })
    }

    /// The fit of a family.
    pub fn fit(&self, family: Family) -> Option<&Fit> {
        self.fits.iter().find(|f| f.family == family)
    }

    /// The calibrated model of a family and its k (ns per unit of Γ): for CM0 and CMC the
    /// fitted k, for CMW the weights with k = 1.
    pub fn model(&self, family: Family) -> Option<(CostModel, f64)> {
        let f = self.fit(family)?;
        match family {
            Family::Cm0 => Some((CostModel::Cm0, *f.coef.first()?)),
            Family::Cmc => Some((CostModel::Cmc, *f.coef.first()?)),
            Family::Cmw => {
                let w: [f64; NCLASSES] = f.coef.clone().try_into().ok()?;
                Some((CostModel::Cmw(Weights(w)), 1.0))
            }
            // Machine-level models weigh LLVM blocks, not TIR fragments: see
            // [`MachineProfile::block_weights`].
            Family::Mcc | Family::Mcw => None,
        }
    }

    /// The machine-level weights per class (ns per instruction) of CMW-M, or of CMC-M (one
    /// k for every class).
    pub fn block_weights(&self, family: Family) -> Option<Vec<f64>> {
        let f = self.fit(family)?;
        match family {
            Family::Mcw => Some(f.coef.clone()),
            Family::Mcc => {
                // One weight per instruction; the loop features are not instructions.
                let mut w = vec![*f.coef.first()?; self.machine_classes.len()];
                for x in w.iter_mut().skip(tessera_jit::blocks::BASE_CLASSES) {
                    *x = 0.0;
                }
                Some(w)
            }
            _ => None,
        }
    }

    /// Writes the profile as JSON (creating the directory).
    pub fn save(&self, path: &Path) -> Result<(), CostError> {
        if let Some(d) = path.parent() {
            if !d.as_os_str().is_empty() {
                std::fs::create_dir_all(d)
                    .map_err(|e| CostError::Profile(format!("{}: {e}", d.display())))?;
            }
        }
        let text =
            serde_json::to_string_pretty(self).map_err(|e| CostError::Profile(e.to_string()))?;
        std::fs::write(path, text)
            .map_err(|e| CostError::Profile(format!("{}: {e}", path.display())))
    }

    /// Reads a profile, checking its version and shape.
    pub fn load(path: &Path) -> Result<MachineProfile, CostError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CostError::Profile(format!("{}: {e}", path.display())))?;
        let p: MachineProfile = serde_json::from_str(&text)
            .map_err(|e| CostError::Profile(format!("{}: {e}", path.display())))?;
        if p.version != PROFILE_VERSION {
            return Err(CostError::Profile(format!(
                "{}: profile version {} (this Tessera reads version {PROFILE_VERSION}): run `tessera calibrate` again",
                path.display(),
                p.version
            )));
        }
        let names: Vec<&str> = Class::ALL.iter().map(|c| c.name()).collect();
        if p.classes != names
            || [Family::Cm0, Family::Cmc, Family::Cmw]
                .iter()
                .any(|&f| p.model(f).is_none())
            || p.block_weights(Family::Mcw).map(|w| w.len()) != Some(p.machine_classes.len())
            || p.machine_classes != crate::jit::MACHINE_FEATURES
        {
            return Err(CostError::Profile(format!(
                "{}: the profile's classes or fits do not match this Tessera's: run `tessera calibrate` again",
                path.display()
            )));
        }
        Ok(p)
    }
}

/// Tessera's cache directory: `$XDG_CACHE_HOME/tessera`, else `$HOME/.cache/tessera`
/// (the machine profile, `tessera run --tune`'s wisdom).
pub fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("tessera"))
}

/// Where the machine profile lives by default: `$TESSERA_PROFILE`, else
/// `profile-v2.json` (the current [`PROFILE_VERSION`]) in [`cache_dir`].
pub fn default_profile_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_PROFILE") {
        return Some(PathBuf::from(p));
    }
    Some(cache_dir()?.join(format!("profile-v{PROFILE_VERSION}.json")))
}

/// `-D` bindings with their integer values of at least `from` scaled by `f` (rounded, at least
/// `floor`): the same kernel at another size. Other values are kept.
pub fn scale_defines(
    defs: &[(String, String)],
    f: f64,
    from: i64,
    floor: i64,
) -> Vec<(String, String)> {
    defs.iter()
        .map(|(n, v)| match v.parse::<i64>() {
            Ok(x) if x >= from => (
                n.clone(),
                ((x as f64 * f).round() as i64).max(floor).to_string(),
            ),
            _ => (n.clone(), v.clone()),
        })
        .collect()
}

/// The arguments of a call of `func` as `tessera run` builds them: scalar parameters from
/// `defines` (`NAME=VALUE`; names that are not parameters are ignored, as `#define`
/// overrides), arrays allocated from their declared extents and filled with the seeded
/// pseudo-random values of `--init random:SEED`.
pub fn bind_args(
    prog: &tessera_ir::Program,
    func: tessera_ir::FuncId,
    defines: &[(String, String)],
    seed: u64,
) -> Result<Vec<tessera_ir::ArgValue>, String> {
    use tessera_ir::{ArgValue, ArrayData, Scalar, VarKind};
    let f = prog.func(func);
    let mut scalars: Vec<Option<Scalar>> = vec![None; f.params.len()];
    for (i, p) in f.params.iter().enumerate() {
        let v = f.var(*p);
        if let VarKind::Scalar(t) = v.kind {
            let Some((_, val)) = defines.iter().find(|(n, _)| *n == v.name) else {
                return Err(format!("no value for scalar parameter `{}`", v.name));
            };
            scalars[i] = Some(Scalar::parse(val, t).map_err(|e| format!("{}: {e}", v.name))?);
        }
    }
    let shapes =
        tessera_interp::declared_shapes(prog, func, &scalars).map_err(|e| e.to_string())?;
    let mut args = Vec::with_capacity(f.params.len());
    for (k, p) in f.params.iter().enumerate() {
        let v = f.var(*p);
        match &shapes[k] {
            None => args.push(ArgValue::Scalar(scalars[k].expect("bound above"))),
            Some(shape) => {
                let shape: Vec<usize> = shape
                    .iter()
                    .map(|&d| usize::try_from(d))
                    .collect::<Result<_, _>>()
                    .map_err(|_| format!("array `{}` has a negative extent", v.name))?;
                let mut d = ArrayData::zeros(v.scalar_ty(), &shape)
                    .ok_or_else(|| format!("array `{}` is too large", v.name))?;
                d.fill_random(seed, &v.name);
                args.push(ArgValue::Array(d));
            }
        }
    }
    Ok(args)
}

/// The `-D NAME=VALUE` bindings of a kernel header line (`// RUN: -D n=100 -D alpha=1.5`).
pub fn parse_define_line(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = line.split_whitespace();
    while let Some(t) = it.next() {
        let d = if t == "-D" {
            it.next()
        } else {
            t.strip_prefix("-D")
        };
        if let Some((n, v)) = d.and_then(|d| d.split_once('=')) {
            out.push((n.to_string(), v.to_string()));
        }
    }
    out
}
