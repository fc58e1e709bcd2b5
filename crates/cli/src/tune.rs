//! `tessera run --mode opt --tune`: an empirical choice among candidate optimisations, for
//! users who run a kernel many times (as FFTW's wisdom and ATLAS do).
//!
//! The candidates are the code as written (the plain JIT) and the polyhedral optimiser under
//! settings that its rules choose between without knowing the machine: the default, the
//! micro-kernel of half the rows and twice the columns, maximal fusion, no fusion, no tiling,
//! tiles half and twice the cache model's size, no register tiles, no reordering of point
//! loops, no panel copies of a micro-kernel's operands (the schedule model does not see them). A candidate whose
//! program equals an earlier one's is not run again. Every candidate is first predicted by the
//! schedule cost model (`tessera_poly::memory`); those predicted over `--tune-prune` times
//! the best prediction are not run (the code as written and the default always are). Each
//! other is compiled (the optimised versions without the run-time choice of the code as
//! written, so that each is measured as it is) and called once on a copy of the real inputs;
//! its outputs are checked against the plain JIT's, bit for bit (to 1e-9 relative with
//! `--fast-math`): a candidate that differs is reported and never chosen. Then four timed
//! rounds, interleaved across the candidates (a candidate is not timed again once its fastest
//! run is over 4x the fastest of all before the first round, 2x after it); each candidate's
//! time is the median of its runs.
//! The winner is kept in a wisdom file — `$TESSERA_WISDOM`, else
//! `~/.cache/tessera/wisdom-v1.json` — under a key of the source text, the entry, the `-D`
//! bindings, the thread count and the host CPU; a later `--tune` run with the same key
//! compiles the winner directly. Every tuned run appends its candidates' model terms and
//! times to the samples that `tessera calibrate --schedules` fits the model's weights to.
//!
//! The same candidates serve `explain --candidates` (ranked by the model, with each term)
//! and `run --model-choice` (the predicted best, nothing timed).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use tessera_ir::{ArgValue, FuncId, Program};
use tessera_poly::{Fusion, GenOptions, PolyOptions};

/// One candidate: a name and the optimiser's settings (`None`: the code as written).
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its name, as printed and kept in the wisdom file.
    pub name: String,
    /// The optimiser's settings, or `None` for the plain JIT.
    pub poly: Option<PolyOptions>,
}

/// The candidates derived from the settings given on the command line.
pub fn candidates(base: &PolyOptions) -> Vec<Candidate> {
    let mut out = vec![
        Candidate {
            name: "as written".into(),
            poly: None,
        },
        Candidate {
            name: "optimised".into(),
            poly: Some(base.clone()),
        },
    ];
    let mut add = |name: &str, o: PolyOptions| {
        out.push(Candidate {
            name: name.into(),
            poly: Some(o),
        })
    };
    // The same number of accumulators in the other shape: half the rows, twice the columns.
    if base.micro_kernel_cols > 0 && base.micro_kernel_cols * 2 <= 64 && base.micro_kernel_rows >= 4
    {
        let mut o = base.clone();
        o.micro_kernel_cols *= 2;
        o.micro_kernel_rows /= 2;
        add(
            &format!(
                "micro-kernel {} x {}",
                o.micro_kernel_rows, o.micro_kernel_cols
            ),
            o,
        );
    }
    if base.fusion != Fusion::Max {
        let mut o = base.clone();
        o.fusion = Fusion::Max;
        add("maximal fusion", o);
    }
    if base.fusion != Fusion::None {
        let mut o = base.clone();
        o.fusion = Fusion::None;
        add("no fusion", o);
    }
    if base.tile {
        let mut o = base.clone();
        o.tile = false;
        add("no tiling", o);
    }
    if base.tile && base.tile_sizes.is_none() {
        for (name, f) in [
            ("tiles half the cache model's", 0.5),
            ("tiles twice the cache model's", 2.0),
        ] {
            let mut o = base.clone();
            o.tile_scale = base.tile_scale * f;
            add(name, o);
        }
    }
    if base.register_tile > 1 || base.micro_kernel_cols > 0 {
        let mut o = base.clone();
        o.register_tile = 1;
        o.micro_kernel_cols = 0;
        add("no register tiles", o);
    }
    if base.permute {
        let mut o = base.clone();
        o.permute = false;
        add("no loop reordering", o);
    }
    if base.pack && base.micro_kernel_cols > 0 {
        let mut o = base.clone();
        o.pack = false;
        add("no panel copies", o);
    }
    if base.wavefront_tiles && base.tile {
        let mut o = base.clone();
        o.wavefront_tiles = false;
        add("no wavefront tiles", o);
    }
    if !base.time_tile && base.tile {
        let mut o = base.clone();
        o.time_tile = true;
        add("time tiling", o);
    }
    out
}

/// Where the wisdom lives.
pub fn wisdom_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_WISDOM") {
        return Some(PathBuf::from(p));
    }
    Some(tessera_cost::calibrate::cache_dir()?.join("wisdom-v1.json"))
}

/// The wisdom key of a run (FNV-1a of what determines the best choice).
pub fn key(
    source: &str,
    entry: &str,
    defs: &[(String, String)],
    threads: usize,
    host: &str,
) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |s: &str| {
        for b in s.bytes().chain(std::iter::once(0)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(source);
    eat(entry);
    for (n, v) in defs {
        eat(n);
        eat(v);
    }
    eat(&threads.to_string());
    eat(host);
    format!("{entry}-{h:016x}")
}

fn load_wisdom(path: &PathBuf) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save_wisdom(path: &PathBuf, w: &BTreeMap<String, String>) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let text = serde_json::to_string_pretty(w).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The outputs of a call, for comparison: the result as printed and every array.
fn outputs(r: String, args: Vec<ArgValue>) -> (String, Vec<ArgValue>) {
    (
        r,
        args.into_iter()
            .filter(|a| matches!(a, ArgValue::Array(_)))
            .collect(),
    )
}

/// A candidate that compiled, gave the reference's outputs and differs from every earlier
/// one.
struct Live {
    /// Its index in the candidates.
    cand: usize,
    program: Program,
    code: tessera_jit::Compiled,
    /// Its call times, ms, the first call's first.
    times: Vec<f64>,
    /// The cost model's prediction, where it has one.
    predicted: Option<tessera_poly::memory::Prediction>,
}

fn close(a: &[ArgValue], b: &[ArgValue], rel: f64) -> bool {
    use tessera_ir::ArrayElems::*;
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (ArgValue::Array(x), ArgValue::Array(y)) => match (&x.elems, &y.elems) {
                (F64(p), F64(q)) => p.iter().zip(q).all(|(u, v)| {
                    u.to_bits() == v.to_bits() || (u - v).abs() <= rel * u.abs().max(v.abs())
                }),
                (F32(p), F32(q)) => p.iter().zip(q).all(|(u, v)| {
                    u.to_bits() == v.to_bits()
                        || ((u - v).abs() as f64) <= rel * (u.abs().max(v.abs()) as f64)
                }),
                _ => x == y,
            },
            _ => x == y,
        })
}

/// By default, a candidate is not run when the model predicts it over this factor slower
/// than the best prediction (`run --tune-prune`).
pub const PRUNE: f64 = 5.0;

/// The optimiser's program and report under settings `o`.
fn optimise(prog: &Program, o: &PolyOptions, gen: GenOptions) -> (Program, tessera_poly::Report) {
    let opt = tessera::optimize(prog, o, gen);
    (opt.program, opt.report)
}

/// Code generation for a timed candidate: measured as it is, without the run-time choice
/// of the code as written.
fn unversioned(gen: GenOptions) -> GenOptions {
    GenOptions {
        versions: false,
        ..gen
    }
}

/// A candidate's program and the cost model's prediction for it.
pub struct Ranked {
    /// The program (the input itself for the code as written).
    pub program: Program,
    /// The prediction, when the model covers at least one SCoP of the entry.
    pub prediction: Option<tessera_poly::memory::Prediction>,
    /// Without a prediction: why each SCoP was not modelled.
    pub unmodelled: Vec<String>,
}

/// Optimises `prog` under every candidate's settings (code generation `gen`) and predicts
/// one call of `entry` with integer parameters `values` on `threads` threads. The code as
/// written is predicted from the default candidate's SCoPs under their original schedules.
pub fn predict_all(
    prog: &Program,
    entry: &str,
    values: &std::collections::HashMap<tessera_ir::VarId, i64>,
    cands: &[Candidate],
    gen: GenOptions,
    threads: usize,
    fast_math: bool,
) -> Vec<Ranked> {
    let machine = tessera_poly::memory::Machine::detect();
    let (weights, _) = load_weights(&machine);
    let predict = |report: &tessera_poly::Report, as_written: bool| {
        tessera_poly::memory::predict(
            prog,
            report,
            entry,
            values,
            &tessera_poly::memory::PredictOptions {
                machine: &machine,
                weights: &weights,
                threads,
                fast_math,
                as_written,
            },
        )
    };
    let built: Vec<(Program, Option<tessera_poly::Report>)> = cands
        .iter()
        .map(|c| match &c.poly {
            None => (prog.clone(), None),
            Some(o) => {
                let (p, r) = optimise(prog, o, gen);
                (p, Some(r))
            }
        })
        .collect();
    let default_report = built.iter().find_map(|b| b.1.as_ref());
    let mut out: Vec<Ranked> = Vec::new();
    for (program, report) in &built {
        // Equal programs get the first one's prediction.
        let same = out.iter().position(|r| r.program == *program);
        let prediction = match (same, report) {
            (Some(k), _) => out[k].prediction.clone(),
            (None, Some(r)) => Some(predict(r, false)),
            (None, None) => default_report.map(|r| predict(r, true)),
        };
        let (prediction, unmodelled) = match prediction {
            Some(p) if p.scops > 0 => (Some(p), Vec::new()),
            Some(p) => (None, p.unmodelled),
            None => (None, Vec::new()),
        };
        out.push(Ranked {
            program: program.clone(),
            prediction,
            unmodelled,
        });
    }
    out
}

/// A candidate's predicted time (infinite without a prediction).
fn predicted_ns(r: &Ranked) -> f64 {
    r.prediction.as_ref().map_or(f64::INFINITY, |p| p.ns)
}

/// The candidates' indices, fastest prediction first; on a tie the optimiser's code before
/// the code as written (candidate 0), which runs the same schedule guarded.
fn by_prediction(ranked: &[Ranked]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ranked.len()).collect();
    order.sort_by(|&a, &b| {
        predicted_ns(&ranked[a])
            .total_cmp(&predicted_ns(&ranked[b]))
            .then((a == 0).cmp(&(b == 0)))
    });
    order
}

/// `explain --candidates`: the candidates ranked by the model for the integer parameters
/// of `entry` bound by `defs`, as a table of each term's predicted milliseconds.
pub fn explain_candidates(
    prog: &Program,
    entry: &str,
    defs: &[(String, String)],
    base: &PolyOptions,
    gen: GenOptions,
    threads: usize,
    fast_math: bool,
) -> Result<String, String> {
    use std::fmt::Write as _;
    let Some((_, f)) = prog.function(entry) else {
        return Err(format!("no function `{entry}`"));
    };
    let mut values = std::collections::HashMap::new();
    let mut missing = Vec::new();
    let mut shown = Vec::new();
    for p in &f.params {
        let v = f.var(*p);
        if !matches!(
            v.kind,
            tessera_ir::VarKind::Scalar(t) if t.is_integral()
        ) {
            continue;
        }
        match defs.iter().find(|(n, _)| *n == v.name) {
            Some((n, x)) => {
                let x: i64 = x.trim().parse().map_err(|_| {
                    format!("-D {n}={x}: the parameter `{n}` needs an integer value")
                })?;
                values.insert(*p, x);
                shown.push(format!("{n}={x}"));
            }
            None => missing.push(v.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "--candidates predicts for given sizes: bind the integer parameter{} {} with -D NAME=VALUE",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let cands = candidates(base);
    let t0 = Instant::now();
    let ranked = predict_all(prog, entry, &values, &cands, gen, threads, fast_math);
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let machine = tessera_poly::memory::Machine::detect();
    let (weights, source) = load_weights(&machine);
    let mut out = String::new();
    let levels: Vec<String> = machine
        .levels
        .iter()
        .map(|l| format!("{} {} KiB", l.name, l.bytes >> 10))
        .collect();
    let _ = writeln!(
        out,
        "candidates for `{entry}` at {} on {threads} thread{} (optimised and predicted in {ms:.0} ms)",
        if shown.is_empty() { "no parameters".to_string() } else { shown.join(", ") },
        if threads == 1 { "" } else { "s" }
    );
    let names = tessera_poly::memory::term_names(&machine);
    let _ = writeln!(
        out,
        "cost model: work (loads, stores, flops; / {} lanes where the innermost loop vectorises), instances in a chain (a dependence or float reduction the innermost loop carries), innermost loop starts, and cache lines taken in by {} (isl footprints of the schedule); divided by the threads where a loop is parallel (memory lines shared); ns per unit: {}; {source}",
        machine.vector_bytes / 8,
        levels.join(", "),
        names
            .iter()
            .zip(&weights.ns)
            .map(|(n, w)| format!("{n} {w:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let order = by_prediction(&ranked);
    let mut head = format!(
        "  {:>4}  {:>12}  {:>10}  {:>10}  {:>10}",
        "rank", "predicted ms", "work ms", "chains ms", "starts ms"
    );
    for l in &machine.levels {
        head.push_str(&format!("  {:>10}", format!("{} ms", l.name)));
    }
    let _ = writeln!(out, "{head}  candidate");
    let terms = |p: &tessera_poly::memory::Prediction| -> Vec<f64> {
        p.features
            .iter()
            .zip(&weights.ns)
            .map(|(x, w)| x * w / 1e6)
            .collect()
    };
    let mut rank = 0;
    for &k in &order {
        let same = (0..k).find(|&j| ranked[j].program == ranked[k].program);
        let name = &cands[k].name;
        if let Some(j) = same {
            let _ = writeln!(
                out,
                "  {:>4}  the same code as `{}`: {name}",
                "-", cands[j].name
            );
            continue;
        }
        match &ranked[k].prediction {
            Some(p) => {
                rank += 1;
                let mut line = format!("  {rank:>4}  {:>12.3}", p.ns / 1e6);
                for t in terms(p) {
                    line.push_str(&format!("  {t:>10.3}"));
                }
                let _ = writeln!(out, "{line}  {name}");
                for u in &p.unmodelled {
                    let _ = writeln!(out, "        not modelled: {u}");
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {:>4}  no prediction (no SCoP of the entry is modelled): {name}",
                    "-"
                );
                for u in &ranked[k].unmodelled {
                    let _ = writeln!(out, "        not modelled: {u}");
                }
            }
        }
    }
    // Why the first beats the second: the term that differs most.
    let distinct: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&k| (0..k).all(|j| ranked[j].program != ranked[k].program))
        .filter(|&k| ranked[k].prediction.is_some())
        .collect();
    if let [a, b, ..] = distinct[..] {
        let (pa, pb) = (
            ranked[a].prediction.as_ref().expect("filtered"),
            ranked[b].prediction.as_ref().expect("filtered"),
        );
        let (ta, tb) = (terms(pa), terms(pb));
        let (i, d) = ta
            .iter()
            .zip(&tb)
            .map(|(x, y)| y - x)
            .enumerate()
            .max_by(|x, y| x.1.total_cmp(&y.1))
            .expect("terms");
        let _ = writeln!(
            out,
            "chosen: `{}`, {:.1}% below `{}`; the largest difference: {} ({:.3} against {:.3} ms{})",
            cands[a].name,
            100.0 * (1.0 - pa.ns / pb.ns),
            cands[b].name,
            names[i],
            ta[i],
            tb[i],
            if d <= 0.0 { "; no term lower" } else { "" }
        );
    } else if let [a] = distinct[..] {
        let _ = writeln!(
            out,
            "chosen: `{}`, the only candidate with a prediction",
            cands[a].name
        );
    }
    Ok(out)
}

/// Where `run --tune` appends its samples for [`calibrate_schedules`].
pub fn samples_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_MODEL_SAMPLES") {
        return Some(PathBuf::from(p));
    }
    Some(tessera_cost::calibrate::cache_dir()?.join("schedule-samples-v1.tsv"))
}

/// Where the fitted weights of the schedule cost model live.
pub fn weights_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_SCHEDULE_WEIGHTS") {
        return Some(PathBuf::from(p));
    }
    Some(tessera_cost::calibrate::cache_dir()?.join("schedule-weights-v1.json"))
}

/// The weights of the schedule cost model for machine `m`: the calibrated ones when their
/// file exists and has one per term, else the reference machine's
/// ([`tessera_poly::memory::Weights::reference`]); and where they came from.
pub fn load_weights(m: &tessera_poly::memory::Machine) -> (tessera_poly::memory::Weights, String) {
    let d = tessera_poly::memory::Weights::reference(m);
    let terms = d.ns.len();
    let Some(path) = weights_path() else {
        return (d, "weights of the reference machine".into());
    };
    let parsed = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            let w: Vec<f64> = v
                .get("weights")?
                .as_array()?
                .iter()
                .filter_map(|x| x.as_f64())
                .collect();
            (w.len() == terms && w.iter().all(|x| x.is_finite() && *x >= 0.0)).then_some(w)
        });
    match parsed {
        Some(w) => (
            tessera_poly::memory::Weights { ns: w },
            format!("weights calibrated ({})", path.display()),
        ),
        None => (
            d,
            "weights fitted on the reference machine, not this one (`tessera calibrate --schedules`)".into(),
        ),
    }
}

/// One sample of [`samples_path`]: the kernel's wisdom key, the candidate, the model's
/// terms and the measured median (ms).
struct ScheduleSample {
    key: String,
    name: String,
    features: Vec<f64>,
    ms: f64,
}

fn read_samples(text: &str) -> Vec<ScheduleSample> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() != 5 {
                return None;
            }
            let features: Vec<f64> = f[2]
                .split(',')
                .map(|x| x.parse::<f64>())
                .collect::<Result<_, _>>()
                .ok()?;
            let ms: f64 = f[4].parse().ok()?;
            (ms > 0.0 && ms.is_finite() && features.iter().all(|x| x.is_finite() && *x >= 0.0))
                .then(|| ScheduleSample {
                    key: f[0].to_string(),
                    name: f[1].to_string(),
                    features,
                    ms,
                })
        })
        .collect()
}

/// Relative-error NNLS: weights `w ≥ 0` minimising `Σ ((f·w − t) / t)²` (ns per unit).
fn fit_weights(samples: &[&ScheduleSample]) -> Result<Vec<f64>, String> {
    let a: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| s.features.iter().map(|x| x / (s.ms * 1e6)).collect())
        .collect();
    let b = vec![1.0; samples.len()];
    tessera_cost::nnls::nnls(&a, &b)
        .map(|s| s.x)
        .map_err(|e| e.to_string())
}

/// The margins by which [`calibrate_schedules`] evaluates overriding the default.
const MARGINS: [f64; 4] = [1.1, 1.25, 1.5, 2.0];

/// `tessera calibrate --schedules`: fits the weights to the recorded samples, reports the fit
/// (R², leave-one-kernel-out errors, and per kernel how the fitted model's choice compares
/// with the fastest measured candidate), and writes the weights.
pub fn calibrate_schedules() -> Result<String, String> {
    use std::fmt::Write as _;
    let path = samples_path().ok_or("no cache directory for the samples")?;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run kernels with `tessera run --mode opt --tune` first, e.g. bash bench/tune.sh)",
            path.display()
        )
    })?;
    let samples = read_samples(&text);
    // Samples of another version of the model (another number of terms) are left out.
    let machine = tessera_poly::memory::Machine::detect();
    let names = tessera_poly::memory::term_names(&machine);
    let n_feat = names.len();
    let samples: Vec<&ScheduleSample> = samples
        .iter()
        .filter(|s| s.features.len() == n_feat)
        .collect();
    let mut keys: Vec<&str> = samples.iter().map(|s| s.key.as_str()).collect();
    keys.sort();
    keys.dedup();
    if samples.len() < n_feat + 2 || keys.len() < 2 {
        return Err(format!(
            "{}: {} samples of {} kernel runs: too few to fit {} weights (tune more kernels)",
            path.display(),
            samples.len(),
            keys.len(),
            n_feat
        ));
    }
    let w = fit_weights(&samples)?;
    let pred = |w: &[f64], s: &ScheduleSample| -> f64 {
        s.features.iter().zip(w).map(|(x, c)| x * c).sum::<f64>() / 1e6
    };
    let times: Vec<f64> = samples.iter().map(|s| s.ms.ln()).collect();
    let preds: Vec<f64> = samples.iter().map(|s| pred(&w, s).max(1e-9).ln()).collect();
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let ss_tot: f64 = times.iter().map(|t| (t - mean).powi(2)).sum();
    let ss_res: f64 = times.iter().zip(&preds).map(|(t, p)| (t - p).powi(2)).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedule cost model: {} samples ({} kernel runs) from {}",
        samples.len(),
        keys.len(),
        path.display()
    );
    let _ = writeln!(
        out,
        "weights (ns per unit): {}",
        names
            .iter()
            .zip(&w)
            .map(|(n, x)| format!("{n} {x:.4}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        out,
        "R² of log times: {:.3}",
        if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            f64::NAN
        }
    );
    // Leave one kernel out: fit on the others, predict its candidates, and choose.
    let mut errs = Vec::new();
    let mut picks = Vec::new();
    let mut margins: Vec<Vec<f64>> = vec![Vec::new(); MARGINS.len()];
    let mut defaults = Vec::new();
    let mut lines = Vec::new();
    for k in &keys {
        // The weights are fitted without any run of this kernel (other sizes or thread
        // counts would share its code).
        let kernel = |key: &str| key.rsplit_once('-').map_or(key, |x| x.0).to_string();
        let rest: Vec<&ScheduleSample> = samples
            .iter()
            .copied()
            .filter(|s| kernel(&s.key) != kernel(k))
            .collect();
        let mine: Vec<&ScheduleSample> = samples.iter().copied().filter(|s| s.key == *k).collect();
        let Ok(wk) = fit_weights(&rest) else { continue };
        for s in &mine {
            errs.push((pred(&wk, s) - s.ms).abs() / s.ms);
        }
        let best = mine.iter().map(|s| s.ms).fold(f64::INFINITY, f64::min);
        // On a tie the optimiser's code (as `tune` and `--model-choice` decide).
        let pick = mine
            .iter()
            .min_by(|a, b| {
                pred(&wk, a)
                    .total_cmp(&pred(&wk, b))
                    .then((a.name == "as written").cmp(&(b.name == "as written")))
            })
            .expect("non-empty");
        picks.push(pick.ms / best);
        // The cautious policy: the model's pick only where it predicts it at least
        // `margin` times faster than the default, else the default.
        if let Some(d) = mine.iter().find(|s| s.name == "optimised") {
            for (slot, margin) in MARGINS.iter().enumerate() {
                let take = pred(&wk, pick) * margin <= pred(&wk, d);
                margins[slot].push(if take { pick.ms } else { d.ms } / best);
            }
        }
        let default = mine
            .iter()
            .find(|s| s.name == "optimised")
            .map(|s| s.ms / best);
        if let Some(d) = default {
            defaults.push(d);
        }
        let fastest = mine
            .iter()
            .min_by(|a, b| a.ms.total_cmp(&b.ms))
            .expect("non-empty");
        lines.push(format!(
            "  {k}: chooses `{}`, {:.2}x the fastest measured (`{}`); the default {} ({} candidates)",
            pick.name,
            pick.ms / best,
            fastest.name,
            default.map_or("not measured".to_string(), |d| format!("{d:.2}x")),
            mine.len()
        ));
    }
    if !errs.is_empty() {
        let q = |v: &[f64], p: f64| tessera_cost::calibrate::quantile(v, p);
        let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp();
        let worst = |v: &[f64]| v.iter().copied().fold(1.0, f64::max);
        let _ = writeln!(
            out,
            "leave one kernel out (its runs predicted with weights fitted to the other kernels' runs): relative error median {:.1}%, p90 {:.1}%; the model's choice is {:.2}x the fastest candidate (geomean), worst {:.2}x; the optimiser's default {:.2}x, worst {:.2}x",
            100.0 * q(&errs, 0.5),
            100.0 * q(&errs, 0.9),
            geo(&picks),
            worst(&picks),
            geo(&defaults),
            worst(&defaults)
        );
        let _ = writeln!(
            out,
            "the model's choice only where predicted faster than the default by a margin: {}",
            MARGINS
                .iter()
                .zip(&margins)
                .map(|(m, v)| format!("{m}x: {:.2}x the fastest (worst {:.2}x)", geo(v), worst(v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    } else {
        let _ = writeln!(
            out,
            "leave one kernel out: not measured (the samples are of one kernel)"
        );
    }
    let wpath = weights_path().ok_or("no cache directory for the weights")?;
    if let Some(d) = wpath.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let json = serde_json::json!({
        "version": 1,
        "weights": w,
        "samples": samples.len(),
        "kernels": keys.len(),
    });
    std::fs::write(
        &wpath,
        serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{}: {e}", wpath.display()))?;
    let _ = writeln!(out, "wrote {}", wpath.display());
    Ok(out)
}

/// `run --mode opt --model-choice`: optimises `prog` under every candidate's settings,
/// predicts one call with `args`, and returns the program of the candidate predicted
/// fastest (generated with `gen`, so that optimised regions keep the JIT's run-time
/// choice of the code as written). Nothing is timed.
pub fn choose_by_model(
    prog: &Program,
    fid: FuncId,
    args: &[ArgValue],
    base: &PolyOptions,
    gen: GenOptions,
    fast_math: bool,
) -> Result<Choice, String> {
    let entry = &prog.functions[fid.0 as usize];
    let values = tessera_poly::memory::parameter_values(entry, args);
    let threads = tessera_runtime::Runtime::global().threads();
    let cands = candidates(base);
    let t0 = Instant::now();
    let ranked = predict_all(prog, &entry.name, &values, &cands, gen, threads, fast_math);
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let order: Vec<usize> = by_prediction(&ranked)
        .into_iter()
        .filter(|&k| ranked[k].prediction.is_some())
        .collect();
    let key = |k: usize| predicted_ns(&ranked[k]);
    let Some(&win) = order.first() else {
        // Nothing modelled: the optimiser's default.
        return Ok(Choice {
            program: ranked.into_iter().nth(1).map(|r| r.program).unwrap_or_else(|| prog.clone()),
            log: format!(
                "model: no SCoP of `{}` could be predicted at these sizes; the optimiser's default\n",
                entry.name
            ),
        });
    };
    let runner = order
        .iter()
        .find(|&&k| ranked[k].program != ranked[win].program)
        .map(|&k| format!("; next `{}`, {:.3} ms", cands[k].name, key(k) / 1e6))
        .unwrap_or_default();
    let log = format!(
        "model: chose `{}`, predicted {:.3} ms{runner} ({} candidates optimised and predicted in {ms:.0} ms)\n",
        cands[win].name,
        key(win) / 1e6,
        cands.len()
    );
    Ok(Choice {
        program: ranked.into_iter().nth(win).expect("index").program,
        log,
    })
}

/// What `tune` chose.
pub struct Choice {
    /// The program to compile (optimised or as written).
    pub program: Program,
    /// What was done, to print.
    pub log: String,
}

/// Timed rounds per candidate.
const ROUNDS: usize = 4;

/// How [`tune`] runs: the wisdom key of the call ([`key`]) and the pruning factor
/// ([`PRUNE`]; 0 runs every candidate).
pub struct Tuning<'a> {
    /// The wisdom key.
    pub key: &'a str,
    /// Candidates predicted over this factor slower than the best prediction are not run.
    pub prune: f64,
}

/// Chooses among [`candidates`] for this call (or takes the choice from the wisdom file).
pub fn tune(
    prog: &Program,
    fid: FuncId,
    args: &[ArgValue],
    jit_opts: &tessera_jit::Options,
    base: &PolyOptions,
    gen: GenOptions,
    how: Tuning<'_>,
) -> Result<Choice, String> {
    let Tuning { key, prune } = how;
    let cands = candidates(base);
    let path = wisdom_path();
    let mut wisdom = path.as_ref().map(load_wisdom).unwrap_or_default();
    let build = |c: &Candidate| -> Program {
        match &c.poly {
            None => prog.clone(),
            Some(o) => optimise(prog, o, unversioned(gen)).0,
        }
    };
    if let Some(name) = wisdom.get(key) {
        if let Some(c) = cands.iter().find(|c| c.name == *name) {
            return Ok(Choice {
                program: build(c),
                log: format!(
                    "tune: the wisdom of {} chose `{}` for this kernel, size and machine\n",
                    path.as_ref()
                        .map_or("-".into(), |p| p.display().to_string()),
                    c.name
                ),
            });
        }
    }
    let mut log = String::new();
    let mut reference: Option<(String, Vec<ArgValue>)> = None;
    let mut live: Vec<Live> = Vec::new();
    let entry = &prog.functions[fid.0 as usize];
    let values = tessera_poly::memory::parameter_values(entry, args);
    let threads = tessera_runtime::Runtime::global().threads();
    let t_model = Instant::now();
    let ranked = predict_all(
        prog,
        &entry.name,
        &values,
        &cands,
        unversioned(gen),
        threads,
        jit_opts.fast_math,
    );
    let model_ms = t_model.elapsed().as_secs_f64() * 1e3;
    // The candidates the model predicts far slower than its best are not run (the top
    // candidates are timed, as the issue asks; the model's error on these kernels is well
    // under this factor).
    let best_pred = ranked
        .iter()
        .filter_map(|r| r.prediction.as_ref().map(|p| p.ns))
        .reduce(f64::min);
    log.push_str(&format!(
        "tune: {} candidates optimised and predicted in {model_ms:.0} ms\n",
        cands.len()
    ));
    for (k, (c, r)) in cands.iter().zip(ranked).enumerate() {
        let t0 = Instant::now();
        let Ranked {
            program: p,
            prediction: predicted,
            ..
        } = r;
        // The code as written (the reference for the outputs) and the default always run.
        if let (true, Some(b), Some(pr)) = (k >= 2 && prune > 0.0, best_pred, &predicted) {
            if pr.ns > prune * b {
                log.push_str(&format!(
                    "tune: `{}`: predicted {:.3} ms, over {prune}x the best prediction ({:.3} ms); not run\n",
                    c.name,
                    pr.ns / 1e6,
                    b / 1e6
                ));
                continue;
            }
        }
        if let Some(same) = live.iter().find(|l| l.program == p) {
            log.push_str(&format!(
                "tune: `{}`: the same code as `{}`\n",
                c.name, cands[same.cand].name
            ));
            continue;
        }
        let jit = match tessera_jit::Compiled::compile(&p, jit_opts) {
            Ok(j) => j,
            Err(e) => {
                log.push_str(&format!("tune: `{}`: not compiled ({e})\n", c.name));
                continue;
            }
        };
        let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        // The first call warms the code and gives the outputs to check.
        let mut a = args.to_vec();
        let t = Instant::now();
        let r = match jit.call(fid, &mut a) {
            Ok(r) => format!("{r:?}"),
            Err(e) => format!("error: {e}"),
        };
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        let out = outputs(r, a);
        let same = match &reference {
            None => {
                reference = Some(out);
                true
            }
            Some((rr, ra)) => {
                out.0 == *rr && close(&out.1, ra, if jit_opts.fast_math { 1e-9 } else { 0.0 })
            }
        };
        if !same {
            log.push_str(&format!(
                "tune: `{}`: outputs differ from the code as written; left out\n",
                c.name
            ));
            continue;
        }
        let pred = match &predicted {
            Some(p) => format!(
                ", predicted {:.3} ms{}",
                p.ns / 1e6,
                if p.unmodelled.is_empty() {
                    String::new()
                } else {
                    format!("; not modelled: {}", p.unmodelled.join("; "))
                }
            ),
            None => String::new(),
        };
        log.push_str(&format!(
            "tune: `{}`: compiled in {compile_ms:.0} ms, first call {first_ms:.3} ms{pred}\n",
            c.name
        ));
        live.push(Live {
            cand: k,
            program: p,
            code: jit,
            times: vec![first_ms],
            predicted,
        });
    }
    // Timed rounds, interleaved so that a change in the machine's load between candidates
    // falls on all of them. A candidate is not timed again when its fastest run is more
    // than 4x the fastest of all (before the first round: a first call can be slow by
    // accident, 2mm's default once took 223 ms against 140) or 2x (after it). Each
    // candidate's time is the median of its runs (the first call included). Not the
    // fastest: code that relies on the shared last-level cache runs fast only while the
    // machine's other tenants leave it alone (the untiled gemm: 108 and 283 ms in two
    // runs), and the fastest run would reward that.
    for round in 0..ROUNDS {
        let floor = live
            .iter()
            .filter_map(|l| l.times.iter().copied().reduce(f64::min))
            .reduce(f64::min)
            .unwrap_or(f64::INFINITY);
        let cut = if round == 0 { 4.0 } else { 2.0 };
        for l in live.iter_mut() {
            let fastest = l.times.iter().copied().fold(f64::INFINITY, f64::min);
            if fastest > cut * floor {
                continue;
            }
            let mut a = args.to_vec();
            let t = Instant::now();
            let _ = l.code.call(fid, &mut a);
            l.times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let mut best: Option<(f64, usize)> = None;
    let mut medians = Vec::new();
    for (i, l) in live.iter().enumerate() {
        let mut ts = l.times.clone();
        ts.sort_by(f64::total_cmp);
        let n = ts.len();
        let m = if n % 2 == 1 {
            ts[n / 2]
        } else {
            (ts[n / 2 - 1] + ts[n / 2]) / 2.0
        };
        medians.push(m);
        let runs = if n == 1 {
            "the first call only; not timed again".to_string()
        } else {
            format!("median of {n} interleaved runs")
        };
        log.push_str(&format!(
            "tune: `{}`: {m:.3} ms ({runs})\n",
            cands[l.cand].name
        ));
        if best.is_none_or(|b| m < b.0) {
            best = Some((m, i));
        }
    }
    let (best_ms, i) = best.ok_or("tune: no candidate ran")?;
    // How the model would have chosen, against the timings.
    let model_pick = live
        .iter()
        .enumerate()
        .filter_map(|(j, l)| l.predicted.as_ref().map(|p| (p.ns, j)))
        // On a tie the optimiser's code wins: it runs the same schedule unguarded under
        // the entry test.
        .min_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then((live[a.1].cand == 0).cmp(&(live[b.1].cand == 0)))
        });
    if let Some((_, j)) = model_pick {
        let m = medians[j];
        log.push_str(&format!(
            "tune: the cost model would choose `{}`: {m:.3} ms, {:.2}x the best's time\n",
            cands[live[j].cand].name,
            m / best_ms
        ));
        if let Some(path) = samples_path() {
            // One line per candidate: features, predicted and measured ms (for fitting the
            // weights; bench/schedule_model.py).
            let mut text = String::new();
            for (l, m) in live.iter().zip(&medians) {
                if let Some(p) = &l.predicted {
                    text.push_str(&format!(
                        "{}\t{}\t{}\t{:.6}\t{:.6}\n",
                        key,
                        cands[l.cand].name,
                        p.features
                            .iter()
                            .map(|x| format!("{x:.6e}"))
                            .collect::<Vec<_>>()
                            .join(","),
                        p.ns / 1e6,
                        m
                    ));
                }
            }
            use std::io::Write as _;
            if let Some(d) = path.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
        }
    }
    let Live { cand, program, .. } = live.swap_remove(i);
    let name = cands[cand].name.clone();
    log.push_str(&format!("tune: chose `{name}`"));
    if let Some(path) = &path {
        wisdom.insert(key.to_string(), name.clone());
        match save_wisdom(path, &wisdom) {
            Ok(()) => log.push_str(&format!(" (kept in {})", path.display())),
            Err(e) => log.push_str(&format!(" (not kept: {e})")),
        }
    }
    log.push('\n');
    Ok(Choice { program, log })
}
