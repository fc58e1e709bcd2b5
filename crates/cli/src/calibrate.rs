//! `tessera calibrate`: times a calibration suite through the JIT, counts it exactly with the
//! counting build, fits CM0/CMC/CMW (see `tessera_cost::calibrate`), prints their quality and
//! writes the machine profile; optionally draws predicted-vs-measured plots.
//!
//! The suite is every kernel file with `// ENTRY:` and `// RUN:` headers in the `--suite`
//! directories (default `examples/kernels` and `examples/calibrate`), each at its RUN size and
//! at that size scaled by each `--scale` factor (integer bindings of at least 16 are scaled;
//! others, such as `alpha=1.5` or `tsteps=4`, are kept).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tessera_cost::calibrate::{
    bind_args, default_profile_path, parse_define_line, Family, MachineProfile, Sample,
};
use tessera_cost::jit::{BlockBuild, CountingBuild};
use tessera_cost::Class;
use tessera_ir::ArgValue;

/// Options of `tessera calibrate`.
#[derive(clap::Args, Clone, Debug)]
pub struct CalibrateArgs {
    /// Directories of kernel files (repeatable; default examples/kernels and
    /// examples/calibrate).
    #[arg(long, value_name = "DIR")]
    pub suite: Vec<PathBuf>,
    /// Timed runs per program (the median is kept).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Size factors besides the RUN size (repeatable; default 0.5 and 0.25).
    #[arg(long, value_name = "F")]
    pub scale: Vec<f64>,
    /// Where to write the machine profile (default: $TESSERA_PROFILE, else
    /// ~/.cache/tessera/profile-v2.json).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Draw predicted-vs-measured plots (SVG) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Skip programs whose first run takes longer than this (ms).
    #[arg(long, default_value_t = 1500.0)]
    pub max_ms: f64,
    /// Print one line per sample.
    #[arg(long)]
    pub verbose: bool,
    /// Instead: fit the weights of the schedule cost model (`explain --candidates`,
    /// `run --tune`) by non-negative least squares to the candidates' times that `run
    /// --tune` recorded (in $TESSERA_MODEL_SAMPLES, else
    /// ~/.cache/tessera/schedule-samples-v1.tsv), and write them to $TESSERA_SCHEDULE_WEIGHTS,
    /// else ~/.cache/tessera/schedule-weights-v1.json.
    #[arg(long)]
    pub schedules: bool,
}

struct Job {
    path: PathBuf,
    entry: String,
    defs: Vec<(String, String)>,
}

fn header(text: &str, key: &str) -> Option<String> {
    let p = format!("// {key}: ");
    text.lines()
        .find_map(|l| l.strip_prefix(&p).map(|s| s.trim().to_string()))
}

/// Integer sizes of at least 16 scaled by `f` (at least 1 after scaling).
fn scaled(defs: &[(String, String)], f: f64) -> Vec<(String, String)> {
    tessera_cost::calibrate::scale_defines(defs, f, 16, 1)
}

fn jobs(dirs: &[PathBuf], scales: &[f64]) -> Result<Vec<Job>, String> {
    let mut files = Vec::new();
    for d in dirs {
        let rd = std::fs::read_dir(d).map_err(|e| {
            format!(
                "cannot read suite directory `{}`: {e} (run from the repository root or give --suite DIR)",
                d.display()
            )
        })?;
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "c") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let (Some(entry), Some(run)) = (header(&text, "ENTRY"), header(&text, "RUN")) else {
            continue;
        };
        let base = parse_define_line(&run);
        let mut seen: Vec<Vec<(String, String)>> = Vec::new();
        for &f in std::iter::once(&1.0).chain(scales) {
            let defs = scaled(&base, f);
            if !seen.contains(&defs) {
                seen.push(defs.clone());
                out.push(Job {
                    path: path.clone(),
                    entry: entry.clone(),
                    defs,
                });
            }
        }
    }
    Ok(out)
}

/// `-D` bindings as `name=value` words.
pub(crate) fn defs_text(defs: &[(String, String)]) -> String {
    defs.iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Median of the per-call time (ns) of `call` over `runs` measurements, each on a fresh copy
/// of `args` (copied untimed) and each at least ~2 ms long (calls repeated).
fn time_calls(
    runs: usize,
    args: &[ArgValue],
    first_ns: f64,
    call: &mut dyn FnMut(&mut Vec<ArgValue>) -> Result<(), String>,
) -> Result<f64, String> {
    let reps = ((2e6 / first_ns.max(1.0)).ceil() as usize).clamp(1, 10_000);
    let mut ts = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let mut a = args.to_vec();
        let t0 = Instant::now();
        for _ in 0..reps {
            call(&mut a)?;
        }
        ts.push(t0.elapsed().as_nanos() as f64 / reps as f64);
    }
    ts.sort_by(|a, b| a.total_cmp(b));
    Ok(ts[ts.len() / 2])
}

/// What it takes to time a sample's plain build again: its code, entry, inputs and the time
/// of its first call.
struct Retime {
    jit: tessera_jit::Compiled,
    fid: tessera_ir::FuncId,
    args: Vec<ArgValue>,
    first: f64,
}

/// The cost of one kernel call from Rust (argument checks, context, arena; ns): a kernel
/// that does nothing with one array argument, called in a loop (the least of 5 rounds: the
/// noise of a shared machine only adds).
fn entry_cost() -> Result<f64, String> {
    let prog = tessera_sema::compile_source(
        "double tessera_probe(int n, double A[n]) { return 0.0; }",
        &HashMap::new(),
    )
    .map_err(|d| format!("{} diagnostics in the call probe", d.len()))?;
    let (fid, _) = prog
        .function("tessera_probe")
        .ok_or("the call probe has no function")?;
    let jit = tessera_jit::Compiled::compile(&prog, &tessera_jit::Options::default())
        .map_err(|e| e.to_string())?;
    let args = bind_args(&prog, fid, &[("n".to_string(), "4".to_string())], 1)?;
    let mut ts = Vec::new();
    for _ in 0..5 {
        let mut a = args.clone();
        let t = Instant::now();
        for _ in 0..20_000 {
            jit.call(fid, &mut a).map_err(|e| e.to_string())?;
        }
        ts.push(t.elapsed().as_nanos() as f64 / 20_000.0);
    }
    Ok(ts.iter().copied().fold(f64::INFINITY, f64::min))
}

/// One sample: compile, count, time (normal and counting builds).
fn measure(
    job: &Job,
    runs: usize,
    max_ms: f64,
    host: &mut String,
) -> Result<(Sample, f64, f64, Retime), String> {
    let text = std::fs::read_to_string(&job.path).map_err(|e| e.to_string())?;
    let mut src = tessera_syntax::SourceFile::new(job.path.display().to_string(), text);
    let overrides: HashMap<String, String> = job.defs.iter().cloned().collect();
    let prog = tessera_sema::compile_file(&mut src, job.path.parent(), &overrides)
        .map_err(|d| format!("{} diagnostics", d.len()))?;
    let (fid, _) = prog
        .function(&job.entry)
        .ok_or_else(|| format!("no function `{}`", job.entry))?;
    let args = bind_args(&prog, fid, &job.defs, 1)?;
    let opts = tessera_jit::Options::default();
    let jit = tessera_jit::Compiled::compile(&prog, &opts).map_err(|e| e.to_string())?;
    let counting = CountingBuild::compile(&prog, &opts).map_err(|e| e.to_string())?;
    if host.is_empty() {
        *host = jit.host().0.to_string();
    }
    // First (warm-up) call, also the size check.
    let mut a = args.clone();
    let t0 = Instant::now();
    jit.call(fid, &mut a).map_err(|e| e.to_string())?;
    let first = t0.elapsed().as_nanos() as f64;
    if first > max_ms * 1e6 {
        return Err(format!(
            "first run took {:.0} ms > --max-ms {max_ms}",
            first / 1e6
        ));
    }
    let plain = time_calls(runs, &args, first, &mut |a| {
        jit.call(fid, a).map(|_| ()).map_err(|e| e.to_string())
    })?;
    let mut c = counting.counters().map_err(|e| e.to_string())?;
    let counted = time_calls(runs, &args, first, &mut |a| {
        counting
            .call_with(fid, a, &mut c)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })?;
    let mut a = args.clone();
    let p = counting
        .count(&job.entry, &mut a)
        .map_err(|e| e.to_string())?;
    let blocks = BlockBuild::compile(&prog, &opts).map_err(|e| e.to_string())?;
    let mut bc = vec![0i64; blocks.blocks().len()];
    let mut a = args.clone();
    blocks
        .call_counted(fid, &mut a, &mut bc)
        .map_err(|e| e.to_string())?;
    let mut bc2 = vec![0i64; blocks.blocks().len()];
    let block_counted = time_calls(runs, &args, first, &mut |a| {
        bc2.iter_mut().for_each(|x| *x = 0);
        blocks
            .call_counted(fid, a, &mut bc2)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })?;
    let machine = blocks.machine(&bc, tessera_cost::jit::footprint(&args));
    let stem = job
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((
        Sample {
            name: format!("{stem}:{}", job.entry),
            size: defs_text(&job.defs),
            labels: p.label_executions() as f64,
            classes: p.class_totals(),
            machine: machine.totals,
            loops: machine.loops,
            time_ns: plain,
        },
        counted / plain,
        block_counted / plain,
        Retime {
            jit,
            fid,
            args,
            first,
        },
    ))
}

/// Runs `tessera calibrate`.
pub fn run(a: CalibrateArgs) -> Result<(), String> {
    if a.schedules {
        print!("{}", crate::tune::calibrate_schedules()?);
        return Ok(());
    }
    if a.runs == 0 || a.runs > 1000 {
        return Err(format!("--runs must be 1..=1000, got {}", a.runs));
    }
    if let Some(f) = a.scale.iter().find(|f| !(**f > 0.0 && **f <= 8.0)) {
        return Err(format!("--scale factors must be in (0, 8], got {f}"));
    }
    let dirs = if a.suite.is_empty() {
        vec![
            PathBuf::from("examples/kernels"),
            PathBuf::from("examples/calibrate"),
        ]
    } else {
        a.suite.clone()
    };
    let scales = if a.scale.is_empty() {
        vec![0.5, 0.25]
    } else {
        a.scale.clone()
    };
    let jobs = jobs(&dirs, &scales)?;
    if jobs.is_empty() {
        return Err("no kernel with `// ENTRY:` and `// RUN:` headers in the suite".into());
    }
    let bar = indicatif::ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} {elapsed_precise} {wide_msg}",
        )
        .map_err(|e| e.to_string())?,
    );
    let mut samples = Vec::new();
    let mut overheads = Vec::new();
    let mut block_overheads = Vec::new();
    let mut skipped = Vec::new();
    let mut lines = Vec::new();
    let mut host = String::new();
    let mut retimes = Vec::new();
    for j in &jobs {
        bar.set_message(format!(
            "{} {}",
            j.path.file_name().unwrap_or_default().to_string_lossy(),
            defs_text(&j.defs)
        ));
        match measure(j, a.runs, a.max_ms, &mut host) {
            Ok((s, o, bo, rt)) => {
                retimes.push(rt);
                lines.push(format!(
                    "  {:<28} {:<40} {:>10.3} ms  Γ0 {:.3e}  counted: fragments x{o:.3}, blocks x{bo:.3}",
                    s.name,
                    s.size,
                    s.time_ns / 1e6,
                    s.labels
                ));
                samples.push(s);
                overheads.push(o);
                block_overheads.push(bo);
            }
            Err(e) => skipped.push(format!(
                "  {} ({}): {e}",
                j.path.display(),
                defs_text(&j.defs)
            )),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    // The times fitted are medians of rounds that time every sample once in turn, so that a
    // slow spell of this (shared) machine spreads over all samples instead of falling on the
    // few measured during it.
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); retimes.len()];
    for _ in 0..a.runs {
        for (ts, r) in rounds.iter_mut().zip(&retimes) {
            let t = time_calls(1, &r.args, r.first, &mut |x| {
                r.jit.call(r.fid, x).map(|_| ()).map_err(|e| e.to_string())
            })?;
            ts.push(t);
        }
    }
    for (s, ts) in samples.iter_mut().zip(&rounds) {
        if !ts.is_empty() {
            s.time_ns = tessera_cost::calibrate::quantile(ts, 0.5);
        }
    }
    drop(retimes);
    let entry_ns = entry_cost()?;
    println!(
        "calibration on {host}: {} samples ({} programs), {} runs each, medians",
        samples.len(),
        {
            let mut n: Vec<&str> = samples.iter().map(|s| s.name.as_str()).collect();
            n.dedup();
            n.len()
        },
        a.runs
    );
    if a.verbose {
        for l in &lines {
            println!("{l}");
        }
    }
    if !skipped.is_empty() {
        println!("skipped {}:", skipped.len());
        for s in &skipped {
            println!("{s}");
        }
    }
    for (what, o) in [
        ("fragment counters (TIR)", &overheads),
        ("block counters (LLVM)", &block_overheads),
    ] {
        if o.is_empty() {
            continue;
        }
        let q = |p| tessera_cost::calibrate::quantile(o, p);
        println!(
            "time with {what} / without: median x{:.3}, 90th percentile x{:.3}, max x{:.3}",
            q(0.5),
            q(0.9),
            q(1.0)
        );
    }
    let machine_classes = tessera_cost::jit::MACHINE_FEATURES
        .iter()
        .map(|s| s.to_string())
        .collect();
    let prof =
        MachineProfile::from_samples_with_entry(samples, host, machine_classes, Some(entry_ns))
            .map_err(|e| e.to_string())?;
    println!("model  R²      LOO median err  LOO p90 err  coefficients (ns)");
    for f in &prof.fits {
        let coef = match f.family {
            Family::Cmw => Class::ALL
                .iter()
                .zip(&f.coef)
                .map(|(c, w)| format!("{}={w:.3}", c.name()))
                .collect::<Vec<_>>()
                .join(" "),
            Family::Mcw => prof
                .machine_classes
                .iter()
                .zip(&f.coef)
                .map(|(c, w)| format!("{c}={w:.3}"))
                .collect::<Vec<_>>()
                .join(" "),
            _ => format!("k={:.4}", f.coef[0]),
        };
        println!(
            "{:<6} {:<7.4} {:<15} {:<12} {coef}",
            f.family.name(),
            f.r2,
            format!("{:.1}%", 100.0 * f.loo_median),
            format!("{:.1}%", 100.0 * f.loo_p90)
        );
    }
    let path = match a.profile.clone().or_else(default_profile_path) {
        Some(p) => p,
        None => return Err("no place for the profile: set HOME or give --profile FILE".into()),
    };
    prof.save(&path).map_err(|e| e.to_string())?;
    println!("one kernel call from Rust (CMW-M's fixed entry weight): {entry_ns:.1} ns");
    println!("profile: {}", path.display());
    if let Some(dir) = &a.plots {
        let p = plot_predictions(&prof, dir)?;
        println!("plot: {}", p.display());
    }
    Ok(())
}

/// Draws measured against predicted time for the three models (log-log) as one SVG.
pub fn plot_predictions(prof: &MachineProfile, dir: &Path) -> Result<PathBuf, String> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("predicted_vs_measured.svg");
    let ms: Vec<f64> = prof.samples.iter().map(|s| s.time_ns / 1e6).collect();
    let all: Vec<f64> = prof
        .fits
        .iter()
        .flat_map(|f| f.predicted.iter().map(|p| p / 1e6))
        .chain(ms.iter().copied())
        .filter(|x| *x > 0.0)
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).max(1e-4) / 1.5;
    let hi = all.iter().copied().fold(0.0, f64::max).max(lo * 10.0) * 1.5;
    let root = SVGBackend::new(path.as_path(), (1500, 1000)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let panels = root.split_evenly((2, 3));
    for (area, f) in panels.iter().zip(&prof.fits) {
        let mut ch = ChartBuilder::on(area)
            .caption(
                format!(
                    "{}: R² {:.3}, LOO median {:.0}%",
                    f.family.name(),
                    f.r2,
                    100.0 * f.loo_median
                ),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
            .map_err(|e| e.to_string())?;
        ch.configure_mesh()
            .x_desc("predicted (ms)")
            .y_desc("measured (ms)")
            .draw()
            .map_err(|e| e.to_string())?;
        ch.draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], &BLACK))
            .map_err(|e| e.to_string())?;
        ch.draw_series(
            f.predicted
                .iter()
                .zip(&ms)
                .filter(|(p, _)| **p > 0.0)
                .map(|(p, m)| Circle::new((p / 1e6, *m), 3, BLUE.filled())),
        )
        .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(dir.join("predicted_vs_measured.svg"))
}
