//! `tessera predict`: the time of a call predicted before running it (issue 15, item 4).
//!
//! For the statements of the SCoPs at the top level of the entry function, the instance
//! counts at the requested sizes come from isl ([`tessera_poly::count`]). What one instance of
//! each statement costs comes from counted runs of the same program at small sizes (the sizes
//! scaled by 1/3 ... 1/12): each run's Γ under the machine profile's CMW-M — with the memory
//! features priced at the *requested* size's data footprint, so that a small run in cache
//! does not stand for a large one out of it — is fitted by non-negative least squares to the
//! isl counts of those sizes (one γ per statement and one per call). The prediction is
//! Σ γ_s · N_s(requested) + γ_call, in ns: the small runs cost a few percent of the call.
//! `--check` then times the call itself.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tessera_cost::calibrate::{bind_args, default_profile_path, Family, MachineProfile};
use tessera_cost::jit::{footprint, BlockBuild};
use tessera_ir::{ArgValue, Program, ScalarTy, VarKind};

/// The arguments of `tessera predict`.
#[derive(clap::Args, Debug)]
pub struct PredictArgs {
    /// The kernel source file.
    pub file: PathBuf,
    /// The function to predict.
    #[arg(long)]
    pub entry: String,
    /// Bind a #define'd constant or a scalar parameter: -D n=1000 (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// The machine profile (default: $TESSERA_PROFILE, else ~/.cache/tessera/profile-v2.json).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Then run the call through the JIT and compare (median of --runs timed calls).
    #[arg(long)]
    pub check: bool,
    /// Timed calls for --check.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Print each counted run's machine features and Γ.
    #[arg(long)]
    pub verbose: bool,
}

/// Size factors of the small counted runs.
const FACTORS: [f64; 7] = [1.0 / 3.0, 0.25, 0.2, 1.0 / 6.0, 0.125, 0.1, 1.0 / 12.0];
/// Enumeration bound of the isl counting, per statement.
const MAX_STEPS: u64 = 200_000_000;

fn compile(file: &Path, defs: &[(String, String)]) -> Result<Program, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read `{}`: {e}", file.display()))?;
    let mut src = tessera_syntax::SourceFile::new(file.display().to_string(), text);
    let overrides: HashMap<String, String> = defs.iter().cloned().collect();
    tessera_sema::compile_file(&mut src, file.parent(), &overrides).map_err(|d| {
        format!(
            "{} diagnostic(s); `tessera check {}` shows them",
            d.len(),
            file.display()
        )
    })
}

/// Integer sizes of at least 8 scaled by `f` (at least 2 after scaling).
fn scaled(defs: &[(String, String)], f: f64) -> Vec<(String, String)> {
    tessera_cost::calibrate::scale_defines(defs, f, 8, 2)
}

/// Instance counts per statement (keyed `scop/S<k>`) of `entry` at these sizes.
fn counts(
    prog: &Program,
    entry: &str,
    defs: &[(String, String)],
) -> Result<Vec<(String, u128, tessera_ir::Span)>, String> {
    let (fid, _) = prog
        .function(entry)
        .ok_or_else(|| format!("no function `{entry}`"))?;
    let f = prog.func(fid);
    let mut values = HashMap::new();
    for p in &f.params {
        let v = f.var(*p);
        if let VarKind::Scalar(t) = v.kind {
            if matches!(t, ScalarTy::I8 | ScalarTy::I32 | ScalarTy::I64) {
                if let Some((_, x)) = defs.iter().find(|(n, _)| *n == v.name) {
                    if let Ok(x) = x.parse::<i64>() {
                        values.insert(*p, x);
                    }
                }
            }
        }
    }
    let c =
        tessera_poly::count::statement_counts(f, &values, MAX_STEPS).map_err(|e| e.to_string())?;
    Ok(c.into_iter()
        .map(|s| (format!("{}/{}", s.scop, s.stmt), s.count, s.span))
        .collect())
}

/// Runs `tessera predict`.
pub fn run(a: PredictArgs, defs: Vec<(String, String)>) -> Result<String, String> {
    let path = a
        .profile
        .clone()
        .or_else(default_profile_path)
        .ok_or("no profile path: give --profile FILE")?;
    let prof = MachineProfile::load(&path)
        .map_err(|e| format!("{e} (make one with `tessera calibrate`)"))?;
    let w = prof
        .block_weights(Family::Mcw)
        .ok_or("the profile has no CMW-M fit")?;
    let t0 = Instant::now();
    let prog = compile(&a.file, &defs)?;
    let (fid, _) = prog
        .function(&a.entry)
        .ok_or_else(|| format!("no function `{}`", a.entry))?;
    let big = counts(&prog, &a.entry, &defs)?;
    if big.is_empty() {
        return Err(format!(
            "`{}` has no loop nest the polyhedral model covers at its top level (see `tessera explain`): nothing to count before running",
            a.entry
        ));
    }
    let args = bind_args(&prog, fid, &defs, 1)?;
    let fp = footprint(&args);
    // Counted runs at small sizes.
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut gammas = Vec::new();
    let mut seen = Vec::new();
    let mut small_ns = 0.0;
    let mut ks: Vec<f64> = Vec::new();
    let mut verbose = String::new();
    for f in FACTORS {
        let d = scaled(&defs, f);
        if seen.contains(&d) {
            continue;
        }
        seen.push(d.clone());
        let p = compile(&a.file, &d)?;
        let c = counts(&p, &a.entry, &d)?;
        if c.iter().map(|x| &x.0).ne(big.iter().map(|x| &x.0)) {
            continue; // another SCoP structure at this size
        }
        let (fid, _) = p
            .function(&a.entry)
            .ok_or_else(|| format!("no function `{}`", a.entry))?;
        let b =
            BlockBuild::compile(&p, &tessera_jit::Options::default()).map_err(|e| e.to_string())?;
        let mut args: Vec<ArgValue> = bind_args(&p, fid, &d, 1)?;
        let mut bc = vec![0i64; b.blocks().len()];
        let t = Instant::now();
        let fresh = args.clone();
        b.call_counted(fid, &mut args, &mut bc)
            .map_err(|e| format!("counted run at {}: {e}", crate::calibrate::defs_text(&d)))?;
        let first = t.elapsed().as_nanos() as f64;
        small_ns += first;
        let g = b.gamma(&bc, fp, &w);
        if a.verbose {
            let m = b.machine(&bc, fp);
            let feats: Vec<String> = tessera_cost::jit::MACHINE_FEATURES
                .iter()
                .zip(&m.totals)
                .filter(|(_, x)| **x != 0.0)
                .map(|(n, x)| format!("{n} {x:.0}"))
                .collect();
            verbose.push_str(&format!(
                "  run at {}: Γ {g:.4e}; {}\n",
                crate::calibrate::defs_text(&d),
                feats.join(", ")
            ));
        }
        // k = t/Γ of this run at its own size (Γ with its own footprint): the first-task
        // ratio of the paper, timed on the counted build (median of calls of ≥ 1 ms).
        if f >= 0.15 {
            let reps = ((1e6 / first.max(1.0)).ceil() as usize).clamp(1, 1000);
            let mut ts = Vec::new();
            let mut scratch = vec![0i64; bc.len()];
            for _ in 0..3 {
                let t = Instant::now();
                for _ in 0..reps {
                    let mut x = fresh.clone();
                    b.call_counted(fid, &mut x, &mut scratch)
                        .map_err(|e| e.to_string())?;
                }
                ts.push(t.elapsed().as_nanos() as f64 / reps as f64);
            }
            ts.sort_by(|a, b| a.total_cmp(b));
            small_ns += ts.iter().sum::<f64>() * reps as f64;
            let own = b.gamma(&bc, footprint(&fresh), &w);
            ks.push(ts[1] / own.max(1.0));
        }
        let mut row: Vec<f64> = c.iter().map(|x| x.1 as f64).collect();
        row.push(1.0);
        rows.push(row);
        gammas.push(g);
    }
    if rows.len() < 3 {
        return Err("fewer than 3 smaller sizes keep the same loop nests: the sizes are too small to predict from".into());
    }
    // Relative-error NNLS: each row divided by its Γ.
    let scaled_rows: Vec<Vec<f64>> = rows
        .iter()
        .zip(&gammas)
        .map(|(r, g)| r.iter().map(|x| x / g.max(1.0)).collect())
        .collect();
    let sol =
        tessera_cost::nnls(&scaled_rows, &vec![1.0; rows.len()]).map_err(|e| e.to_string())?;
    let gamma = &sol.x;
    let mut predicted: f64 = big
        .iter()
        .zip(gamma.iter())
        .map(|(s, g)| s.1 as f64 * g)
        .sum();
    predicted += gamma.last().copied().unwrap_or(0.0);
    let predict_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut out = verbose;
    out.push_str(&format!(
        "{}: statements of the top-level SCoPs, instances at {} (isl), ns per instance (fitted on {} counted runs at smaller sizes, CMW-M of {})\n",
        a.entry,
        crate::calibrate::defs_text(&defs),
        rows.len(),
        path.display()
    ));
    for ((name, n, _), g) in big.iter().zip(gamma.iter()) {
        out.push_str(&format!("  {name:<10} {n:>16}  {g:.4} ns\n"));
    }
    out.push_str(&format!(
        "  per call   {:>16}  {:.1} ns\n",
        1,
        gamma.last().copied().unwrap_or(0.0)
    ));
    out.push_str(&format!(
        "predicted: {:.3} ms (Γ = {predicted:.4e}); prediction took {predict_ms:.0} ms, of which {:.1} ms counted runs\n",
        predicted / 1e6,
        small_ns / 1e6
    ));
    let k = if ks.is_empty() {
        None
    } else {
        ks.sort_by(|a, b| a.total_cmp(b));
        Some(ks[ks.len() / 2])
    };
    if let Some(k) = k {
        out.push_str(&format!(
            "predicted with the first-task k: {:.3} ms (k = t/Γ = {k:.3} measured on the counted runs at 1/3 to 1/6 of the size)\n",
            k * predicted / 1e6
        ));
    }
    if a.check {
        let jit = tessera_jit::Compiled::compile(&prog, &tessera_jit::Options::default())
            .map_err(|e| e.to_string())?;
        let mut x = args.clone();
        jit.call(fid, &mut x).map_err(|e| e.to_string())?;
        let mut ts = Vec::new();
        for _ in 0..a.runs.max(1) {
            let mut x = args.clone();
            let t = Instant::now();
            jit.call(fid, &mut x).map_err(|e| e.to_string())?;
            ts.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ts.sort_by(|a, b| a.total_cmp(b));
        let m = ts[ts.len() / 2];
        out.push_str(&format!(
            "measured: {m:.3} ms (median of {}); predicted / measured = {:.3}{}\n",
            ts.len(),
            predicted / 1e6 / m,
            k.map(|k| format!(", with the first-task k {:.3}", k * predicted / 1e6 / m))
                .unwrap_or_default()
        ));
    }
    Ok(out)
}
